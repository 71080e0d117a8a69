/** mulberry32: a small seeded PRNG (uniform in [0, 1)), so generated stores, corpora and vectors are the same on every run. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** A flat (sequential, one-byte) id string, as the database driver hands them over: `prefix` + 22 base64url characters from `rand`. */
export function seededId(prefix: string, rand: () => number): string {
  const codes: number[] = [];
  for (let i = 0; i < prefix.length; i++) codes.push(prefix.charCodeAt(i));
  for (let i = 0; i < 22; i++) codes.push(B64URL.charCodeAt((rand() * 64) | 0));
  return String.fromCharCode(...codes);
}

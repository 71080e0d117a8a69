/**
 * Keyed word shingles: what the lexical index files a record under and what the
 * reconstruction probe looks for.
 *
 * A text's shingles are its content words (stop words dropped, Porter stems) and the
 * pairs of consecutive ones. Each word is hashed with HMAC-SHA256 under the index's
 * system key ('shingle-index') and kept as a 53-bit number; a pair's hash mixes its
 * two words' keyed hashes (so it cannot be computed without the key either). The
 * words of a text are kept in order too (`words`, `pairs`): the probe measures
 * verbatim runs with them.
 *
 * The HMAC is node:crypto's (OpenSSL): the same HMAC-SHA256 as the crypto module's
 * `KeyedHasher` (noble), bit for bit — test/search/lexical-index.test.ts checks it — so
 * shingle sets at rest are unchanged; about ten times faster per word, which is most of
 * what indexing an entry costs.
 */
import { createHmac } from 'node:crypto';
import { STOP_WORDS, stem, tokenize } from './embedder.js';

/** A text's keyed shingles in text order: `pairs[i]` joins `words[i]` and `words[i + 1]`. */
export interface TextShingles {
  readonly words: readonly number[];
  readonly pairs: readonly number[];
}

/** The content words of a text, stemmed, in order. */
export function contentWords(text: string): string[] {
  return tokenize(text)
    .filter((w) => !STOP_WORDS.has(w))
    .map(stem);
}

const TWO_32 = 2 ** 32;
const HIGH_MASK = (1 << 21) - 1;

/** The first 53 bits of a MAC as a number (exact in a float64). */
function toNumber(mac: Uint8Array): number {
  const hi = ((mac[0]! << 16) | (mac[1]! << 8) | mac[2]!) & HIGH_MASK;
  const lo = ((mac[3]! << 24) | (mac[4]! << 16) | (mac[5]! << 8) | mac[6]!) >>> 0;
  return hi * TWO_32 + lo;
}

/** Mixes two 53-bit keyed hashes into a third (murmur3's finaliser on each half, order-sensitive). */
export function pairHash(a: number, b: number): number {
  const mix = (x: number): number => {
    x ^= x >>> 16;
    x = Math.imul(x, 0x85ebca6b);
    x ^= x >>> 13;
    x = Math.imul(x, 0xc2b2ae35);
    return (x ^ (x >>> 16)) >>> 0;
  };
  const aLo = (a % TWO_32) >>> 0;
  const aHi = Math.floor(a / TWO_32);
  const bLo = (b % TWO_32) >>> 0;
  const bHi = Math.floor(b / TWO_32);
  const lo = mix(aLo ^ mix(bLo + 0x9e3779b9) ^ Math.imul(bHi, 0x27d4eb2f));
  const hi = mix(aHi ^ mix(bHi ^ 0x7f4a7c15) ^ Math.imul(bLo, 0x165667b1) ^ lo) & HIGH_MASK;
  return hi * TWO_32 + lo;
}

/** HMAC-SHA256 of content words under the index key; `destroy()` wipes the key. */
export class ShingleHasher {
  /** A copy of the key (zeroed by destroy): OpenSSL copies it into each HMAC context and frees that with it. */
  readonly #key: Buffer;
  #destroyed = false;

  /** Keys the hasher; the caller zeroes `key`. */
  constructor(key: Uint8Array) {
    this.#key = Buffer.alloc(key.length);
    this.#key.set(key);
  }

  /** The keyed hash of one content word, as a 53-bit number. */
  #hash(word: string): number {
    if (this.#destroyed) throw new Error('the shingle hasher was destroyed');
    return toNumber(createHmac('sha256', this.#key).update(`w\u0000${word}`, 'utf8').digest());
  }

  /** The keyed shingles of a text, in order. */
  of(text: string): TextShingles {
    const words = contentWords(text);
    const memo = new Map<string, number>();
    const hashes = words.map((w) => {
      let h = memo.get(w);
      if (h === undefined) memo.set(w, (h = this.#hash(w)));
      return h;
    });
    memo.clear();
    const pairs: number[] = [];
    for (let i = 0; i + 1 < hashes.length; i++) pairs.push(pairHash(hashes[i]!, hashes[i + 1]!));
    return { words: hashes, pairs };
  }

  /** The distinct shingles of a text, sorted (what the index files it under). */
  setOf(text: string): Float64Array {
    return shingleSet(this.of(text));
  }

  /** A copy of the key, for a seal worker to key its own hasher with (seal-pool.ts); the caller zeroes it. */
  copyKey(): Uint8Array {
    if (this.#destroyed) throw new Error('the shingle hasher was destroyed');
    return Uint8Array.from(this.#key);
  }

  destroy(): void {
    this.#key.fill(0);
    this.#destroyed = true;
  }
}

/** The distinct shingles (words and pairs), sorted ascending. */
export function shingleSet(t: TextShingles): Float64Array {
  const all = new Float64Array(t.words.length + t.pairs.length);
  all.set(t.words, 0);
  all.set(t.pairs, t.words.length);
  all.sort();
  let n = 0;
  for (let i = 0; i < all.length; i++) if (i === 0 || all[i] !== all[i - 1]) all[n++] = all[i]!;
  return all.slice(0, n);
}

/** True when the sorted set holds `h` (binary search). */
export function hasShingle(sorted: Float64Array, h: number): boolean {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const v = sorted[mid]!;
    if (v === h) return true;
    if (v < h) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}

/** Bytes of a sorted shingle set at rest: a u32 count, then one float64 (little-endian) per shingle. */
export function encodeShingleSet(set: Float64Array): Uint8Array {
  const out = new Uint8Array(4 + set.length * 8);
  const view = new DataView(out.buffer);
  view.setUint32(0, set.length, true);
  for (let i = 0; i < set.length; i++) view.setFloat64(4 + i * 8, set[i]!, true);
  return out;
}

/** Reads what `encodeShingleSet` wrote at `offset` of `bytes` (more may follow); undefined when it runs past the end. */
export function decodeShingleSet(bytes: Uint8Array, offset: number): Float64Array | undefined {
  if (bytes.length < offset + 4) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = view.getUint32(offset, true);
  if (bytes.length < offset + 4 + n * 8) return undefined;
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = view.getFloat64(offset + 4 + i * 8, true);
  return out;
}

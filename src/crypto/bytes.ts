/**
 * Byte helpers for the crypto core: zeroing secrets, constant-time comparison,
 * base64url, randomness. No I/O.
 */
import { equalBytes, randomBytes as nobleRandomBytes } from '@noble/ciphers/utils.js';

/** Overwrites every given buffer with zeros. Call on every secret buffer when done. */
export function zeroize(...buffers: Array<Uint8Array | undefined | null>): void {
  for (const b of buffers) b?.fill(0);
}

/** Constant-time equality for equal-length inputs; unequal lengths return false at once. */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  return equalBytes(a, b);
}

/** Requests up to this many bytes are served from the pool below. */
const POOLED_MAX = 64;
const POOL_BYTES = 4096;
let pool = new Uint8Array(0);
let poolOffset = 0;

/**
 * CSPRNG bytes (crypto.getRandomValues underneath). Small requests (keys, nonces) are
 * cut from a 4 KiB buffer of CSPRNG output refilled when spent — one call into the
 * CSPRNG per ~100 keys instead of one per key and one per nonce (a tenth of a bulk key
 * creation's CPU went to those calls). Each byte is handed out once, as a copy, and
 * zeroed in the pool when it is.
 */
export function randomBytes(length: number): Uint8Array {
  if (length > POOLED_MAX) return nobleRandomBytes(length);
  if (poolOffset + length > pool.length) {
    pool.fill(0);
    pool = nobleRandomBytes(POOL_BYTES);
    poolOffset = 0;
  }
  const out = pool.slice(poolOffset, poolOffset + length);
  pool.fill(0, poolOffset, poolOffset + length);
  poolOffset += length;
  return out;
}

export function toBase64Url(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64url');
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;

/**
 * Strict base64url (no padding) decoder: returns undefined on any non-alphabet
 * character and on non-canonical input (stray bits in the last character).
 */
export function fromBase64Url(text: string): Uint8Array | undefined {
  if (!BASE64URL.test(text) || text.length % 4 === 1) return undefined;
  const bytes = new Uint8Array(Buffer.from(text, 'base64url'));
  if (toBase64Url(bytes) !== text) return undefined;
  return bytes;
}

export const utf8 = {
  encode: (s: string): Uint8Array => new TextEncoder().encode(s),
  decode: (b: Uint8Array): string => new TextDecoder('utf-8', { fatal: true }).decode(b),
};

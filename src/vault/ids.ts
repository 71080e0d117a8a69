/**
 * Random identifiers: a type prefix and 128 random bits in base64url. Identifiers are
 * unguessable but not secret; their bits come from the CSPRNG in pooled draws (one
 * syscall per 256 ids), each byte used once.
 */
import { randomBytes, toBase64Url } from '../crypto/index.js';

export type IdPrefix = 'key' | 'lease' | 'entry' | 'seg' | 'art' | 'exp' | 'bak' | 'ers';

const ID_BYTES = 16;
const POOL_IDS = 256;
let pool: Uint8Array = new Uint8Array(0);
let offset = 0;

export function newId(prefix: IdPrefix): string {
  if (offset + ID_BYTES > pool.length) {
    pool = randomBytes(ID_BYTES * POOL_IDS);
    offset = 0;
  }
  const bits = pool.subarray(offset, offset + ID_BYTES);
  offset += ID_BYTES;
  return `${prefix}_${toBase64Url(bits)}`;
}

/** Random identifiers: a type prefix and 128 random bits in base64url. */
import { randomBytes, toBase64Url } from '../crypto/index.js';

export type IdPrefix = 'key' | 'lease';

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${toBase64Url(randomBytes(16))}`;
}

export const KEY_ID_PATTERN = /^key_[A-Za-z0-9_-]{22}$/;

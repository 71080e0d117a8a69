/** Random identifiers: a type prefix and 128 random bits in base64url. */
import { randomBytes, toBase64Url } from '../crypto/index.js';

export type IdPrefix = 'key' | 'lease';

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${toBase64Url(randomBytes(16))}`;
}


/**
 * Subject ids and how the database names them. The database never stores a subject
 * id: it stores HMAC-SHA256(subjectHashKey, id), with the key derived from the root
 * key, so a stolen database does not list the people in it and the destruction
 * ledger names an erased subject only by a value its reader cannot invert.
 */
import { bytesToHex } from '@noble/hashes/utils.js';
import { KeyedHasher, utf8, zeroize } from '../crypto/index.js';
import { LetheError } from '../errors.js';

export const SUBJECT_ID_PATTERN = /^[A-Za-z0-9._:@+-]{1,200}$/;

export function assertSubjectId(subject: string): void {
  if (typeof subject !== 'string' || !SUBJECT_ID_PATTERN.test(subject)) {
    throw new LetheError('validation_failed', 'subject must be 1 to 200 characters of A-Z a-z 0-9 . _ : @ + -');
  }
}

export class SubjectHasher {
  readonly #hmac: KeyedHasher;

  /** Consumes `key`: it is zeroed once keyed. */
  constructor(key: Uint8Array) {
    this.#hmac = new KeyedHasher(key);
    zeroize(key);
  }

  hash(subject: string): Uint8Array {
    assertSubjectId(subject);
    return this.#hmac.hash(utf8.encode(subject));
  }

  close(): void {
    this.#hmac.destroy();
  }
}

export function hashHex(hash: Uint8Array): string {
  return bytesToHex(hash);
}

/**
 * Subject ids and how the database names them. The database never stores a subject
 * id: it stores HMAC-SHA256(subjectHashKey, id), with the key derived from the root
 * key, so a stolen database does not list the people in it and the destruction
 * ledger names an erased subject only by a value its reader cannot invert.
 */
import { bytesToHex } from '@noble/hashes/utils.js';
import { type SQL, sql } from 'drizzle-orm';
import { KeyedHasher, utf8, zeroize } from '../crypto/index.js';
import { assertSubjectId } from '../ids.js';

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

/** The keyed hashes as a SQL array of bytea, for `subject_hash = any(…)`: one parameter, their hex as JSON. */
export function subjectHashArray(hashes: readonly Uint8Array[]): SQL {
  return sql`array(select decode(h, 'hex') from json_array_elements_text(${JSON.stringify([...new Set(hashes.map(hashHex))])}::json) as s(h))`;
}

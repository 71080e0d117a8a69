/** What key creation answers and what it asks of the creation guards, shared by the creator and its callers. */
import type { SQL } from 'drizzle-orm';
import type { Transaction } from '../db/client.js';
import type { LetheError } from '../errors.js';

/** A live key row as the creation statement reads it (to answer a subject that has one). */
export interface LiveKeyRow {
  readonly keyId: string;
  readonly state: 'active' | 'fenced';
  readonly createdAt: Date;
  readonly epoch: number;
  readonly wrappedDek: Uint8Array;
}

/**
 * What became of one subject: `created` (its DEK when the caller keeps it: the caller
 * zeroes it), `existing` (it had a live key: that key's row, or the key another
 * creation made first), `refused` (a creation guard's refusal).
 */
export type CreationOutcome =
  | { readonly kind: 'created'; readonly keyId: string; readonly createdAt: Date; readonly dek?: Uint8Array }
  | { readonly kind: 'existing'; readonly row: LiveKeyRow }
  | { readonly kind: 'refused'; readonly refusal: LetheError };

/** The creation guards as the creator runs them (KeyService holds them). */
export interface CreationGuards {
  /** The refusal the guards answer for the subject now, in `tx` (undefined: a key may be created). */
  refusal(tx: Transaction, subjectHash: Uint8Array): Promise<LetheError | undefined>;
  /**
   * All guards as one query over `subjects` (a relation with a bytea `subject_hash`)
   * answering `(subject_hash, g, code)` for each refusal, `g` the guard's position;
   * undefined when a guard has no SQL form.
   */
  among(subjects: SQL): SQL | undefined;
  /** The refusal guard `g` answers by `code`. */
  error(g: number, code: string): LetheError;
}

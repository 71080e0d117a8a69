/** Where entries are indexed, and marking them forgotten: what the erasure engine asks of the log's index. */
import { and, asc, eq, inArray, isNull, sql } from 'drizzle-orm';
import { queryRows, type Transaction } from '../db/client.js';
import { logEntries } from '../db/schema.js';
import { LetheError } from '../errors.js';
import type { LogContext } from './context.js';

/** The entries under the subject's live keys — its head and its shards — in sequence order. */
export async function entryIdsOf(c: LogContext, subjectHash: Uint8Array): Promise<string[]> {
  const rows = await queryRows<{ entry_id: string }>(
    c.db,
    sql`select e.entry_id from subject_keys k join log_entries e on e.key_id = k.key_id where k.subject_hash = ${subjectHash} order by e.seq`,
  );
  return rows.map((r) => r.entry_id);
}

export interface LocatedEntry {
  readonly entryId: string;
  readonly subjectHash: Uint8Array;
  readonly keyId: string;
  /** The records-scope erasure forgetting it, if any. */
  readonly forgottenBy: string | null;
  /** The principal whose token wrote it (null: from before, or written by the service itself). */
  readonly writtenBy: string | null;
}

/**
 * Where each of the given entries is indexed: its subject (keyed hash), key, the
 * records-scope erasure forgetting it, if any, and who wrote it (unknown ids are absent).
 */
export async function locate(c: LogContext, ids: readonly string[]): Promise<LocatedEntry[]> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return [];
  return c.db
    .select({
      entryId: logEntries.entryId,
      subjectHash: logEntries.subjectHash,
      keyId: logEntries.keyId,
      forgottenBy: logEntries.forgottenBy,
      writtenBy: logEntries.writtenBy,
    })
    .from(logEntries)
    .where(inArray(logEntries.entryId, unique));
}

/**
 * Inside a records-scope erasure's request transaction: from its commit on, the
 * entries are read by no one but that erasure (lists, reads, search and the probe
 * skip them; GET answers entry_forgotten) until the re-key that ends it destroys the
 * only key their record keys are wrapped under. Refuses (conflict) when any of them
 * is already being forgotten or is not indexed under the subject.
 */
export async function markForgotten(c: LogContext, tx: Transaction, erasureId: string, subjectHash: Uint8Array, ids: readonly string[]): Promise<void> {
  const marked = await tx
    .update(logEntries)
    .set({ forgottenBy: erasureId })
    .where(and(inArray(logEntries.entryId, [...new Set(ids)]), eq(logEntries.subjectHash, subjectHash), isNull(logEntries.forgottenBy)))
    .returning({ entryId: logEntries.entryId });
  if (marked.length !== new Set(ids).size) {
    throw new LetheError('conflict', 'an entry of the request changed meanwhile (it is being forgotten by another erasure); nothing was marked', {
      retryable: true,
    });
  }
}

/**
 * Locks for a supersession of several entries, in `tx`: the successors' key rows (share,
 * as their inserts take it), then the old entries' rows in entry id order — two
 * supersessions naming the same entries in another order wait for each other rather
 * than deadlock.
 */
export async function lockSuperseded(tx: Transaction, keyIds: readonly string[], entryIds: readonly string[]): Promise<void> {
  await tx.execute(
    sql`select 1 from subject_keys where key_id in (select json_array_elements_text(${JSON.stringify([...new Set(keyIds)])}::json)) order by key_id for key share`,
  );
  await tx.execute(
    sql`select 1 from log_entries where entry_id in (select json_array_elements_text(${JSON.stringify([...new Set(entryIds)])}::json)) order by entry_id for update`,
  );
}

/** Whether lethe ever indexed an entry of the subject (an erasure of a subject never seen is refused). */
export async function hasEntries(c: LogContext, subjectHash: Uint8Array): Promise<boolean> {
  const [row] = await queryRows<{ one: number }>(c.db, sql`select 1 as one from log_entries where subject_hash = ${subjectHash} limit 1`);
  return row !== undefined;
}

/**
 * The entries written to supersede `ids`, and theirs in turn (the successor chain):
 * the same person's current data, which the probe of a supersession does not count.
 */
export async function successorsOf(c: LogContext, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await queryRows<{ entry_id: string }>(
    c.db,
    sql`with recursive chain(entry_id) as (
          select entry_id from log_entries where supersedes in (select json_array_elements_text(${JSON.stringify(ids)}::json))
          union
          select e.entry_id from log_entries e join chain on e.supersedes = chain.entry_id)
        select entry_id from chain`,
  );
  return rows.map((r) => r.entry_id);
}

/** The entries under `keyId` that records-scope erasures other than `except` are forgetting, by erasure. */
export async function forgottenUnder(c: LogContext, keyId: string, except: string): Promise<Map<string, string[]>> {
  const rows = await queryRows<{ entry_id: string; forgotten_by: string }>(
    c.db,
    sql`select entry_id, forgotten_by from log_entries where key_id = ${keyId} and forgotten_by is not null and forgotten_by <> ${except}`,
  );
  const out = new Map<string, string[]>();
  for (const r of rows) out.set(r.forgotten_by, [...(out.get(r.forgotten_by) ?? []), r.entry_id]);
  return out;
}

/** The indexing queue as others see it: its lag and high-water mark, waiting for it to drain, and its rows changed inside a re-key's or a destruction's transaction. */
import { sql } from 'drizzle-orm';
import { queryRows, type Transaction } from '../db/client.js';
import { idArrayLiteral } from '../ids.js';
import { subjectHashArray } from '../vault/subjects.js';
import { runOnce } from './indexer-batch.js';
import { poke } from './indexer-loop.js';
import { type IndexerContext, type QueueStatus, sleep } from './indexer-types.js';

/** Entries waiting now, and the age of the oldest. */
export async function queueStatus(c: IndexerContext): Promise<QueueStatus> {
  const [row] = await queryRows<{ n: string | number; lag: string | number | null }>(
    c.d.db,
    sql`select count(*) as n, extract(epoch from (now() - min(enqueued_at)))::float8 as lag from index_queue`,
  );
  return { queued: Number(row?.n ?? 0), lagSeconds: Math.max(0, Number(row?.lag ?? 0)) };
}

/** The queue's high-water mark: the greatest `seq` queued now (0 when empty). */
export async function mark(c: IndexerContext): Promise<number> {
  const [row] = await queryRows<{ m: string | number | null }>(c.d.db, sql`select max(seq) as m from index_queue`);
  return Number(row?.m ?? 0);
}

/** Whether the entry waits in the queue (registered, not checked by the indexer yet). */
export async function isQueued(c: IndexerContext, entryId: string): Promise<boolean> {
  const rows = await queryRows<{ one: number }>(c.d.db, sql`select 1 as one from index_queue where entry_id = ${entryId}`);
  return rows.length > 0;
}

/** Entries still queued at or below `mark` (of the subject, when given). */
export async function pendingUpTo(c: IndexerContext, mark: number, subjectHash?: Uint8Array): Promise<number> {
  const [row] = await queryRows<{ n: string | number }>(
    c.d.db,
    subjectHash
      ? sql`select count(*) as n from index_queue q join log_entries e on e.entry_id = q.entry_id
             where q.seq <= ${mark} and e.subject_hash = ${subjectHash}`
      : sql`select count(*) as n from index_queue where seq <= ${mark}`,
  );
  return Number(row?.n ?? 0);
}

/**
 * The subjects' entries waiting in the queue, newest first, at most `limit` of them and
 * `maxBytes` of frames in all: what a scoped search ranks besides the index
 * (src/search/queued.ts). None in the usual case, whatever the subjects hold.
 */
export async function queuedOf(c: IndexerContext, subjectHashes: readonly Uint8Array[], limit: number, maxBytes: number): Promise<string[]> {
  if (subjectHashes.length === 0 || limit <= 0) return [];
  const rows = await queryRows<{ entry_id: string }>(
    c.d.db,
    sql`select entry_id from (
          select q.entry_id, q.seq, sum(e.frame_length) over (order by q.seq desc rows unbounded preceding) as bytes
            from index_queue q join log_entries e on e.entry_id = q.entry_id
           where e.subject_hash = any(${subjectHashArray(subjectHashes)})
             and e.forgotten_by is null and e.refused is null
           order by q.seq desc limit ${limit}) newest
         where bytes <= ${maxBytes} order by seq desc`,
  );
  return rows.map((r) => r.entry_id);
}

/**
 * Waits until every entry queued up to `mark` (default: now; of the subject, when
 * given) is indexed or refused — this replica's batches published to its index too —
 * at most `timeoutMs`; answers how many are left (0: drained). `drain`: without a
 * running worker here (a vault that does not listen), index them itself; otherwise it
 * only waits for the workers of the replicas.
 */
export async function waitIndexed(
  c: IndexerContext,
  options: { timeoutMs?: number; subjectHash?: Uint8Array; mark?: number; drain?: boolean } = {},
): Promise<number> {
  const upTo = options.mark ?? (await mark(c));
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  for (;;) {
    const left = upTo === 0 ? 0 : await pendingUpTo(c, upTo, options.subjectHash);
    if (left === 0) {
      // a batch of this replica's that committed is indexed once its vectors are published
      await Promise.allSettled([...c.publishing]);
      return 0;
    }
    if (Date.now() >= deadline) return left;
    if (c.running || !options.drain) {
      poke(c);
      await sleep(20);
    } else if ((await runOnce(c)).claimed === 0) await sleep(20);
  }
}

/**
 * Inside a re-key's switch (rekey.ts): its survivors not embedded yet queued again
 * (the old key's destruction, earlier in the transaction, dropped their rows), with
 * the time they were first registered. Refused entries are not.
 */
export async function requeue(tx: Transaction, entryIds: readonly string[]): Promise<void> {
  if (entryIds.length === 0) return;
  await tx.execute(sql`insert into index_queue (entry_id, enqueued_at)
                       select entry_id, created_at from log_entries
                        where entry_id = any(${idArrayLiteral(entryIds)}::text[]) and refused is null
                       on conflict (entry_id) do nothing`);
}

/**
 * Inside a key destruction's transaction (registered with KeyDestructions.within):
 * the queued entries of the destroyed keys will never be indexed (their frames are
 * unreadable now); their queue rows go with the key.
 */
export async function dropQueuedUnder(tx: Transaction, keyIds: readonly string[]): Promise<void> {
  await tx.execute(sql`delete from index_queue q using log_entries e
                        where e.entry_id = q.entry_id and e.key_id = any(${idArrayLiteral(keyIds)}::text[])`);
}

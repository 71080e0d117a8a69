/** A batch's commit: its claimed queue rows deleted with its embeddings' insert, refused entries marked, the rest of the claim released. */
import { sql } from 'drizzle-orm';
import { queryRows, type Transaction } from '../db/client.js';
import { insertEmbeddingsCte, notifyEmbeddings } from '../vectors/embeddings.js';
import type { Sealed } from '../vectors/service.js';
import type { IndexerContext, Refusal } from './indexer-types.js';

/**
 * The batch's commit, in `tx`: queue rows of this claim deleted and their embeddings
 * inserted together (only for entries still under the key they were sealed with, that
 * key still live), refused entries marked, the rest of the claim released.
 * Answers the inserted records (with the seconds each waited since it was queued),
 * the entries marked refused, and how many rows were released.
 */
export async function commitBatch(
  c: IndexerContext,
  tx: Transaction,
  claim: string,
  sealed: readonly Sealed[],
  refused: ReadonlyMap<string, { keyId: string; reason: Refusal }>,
): Promise<{ inserted: Map<string, number>; marked: Set<string>; released: number }> {
  const inserted = new Map<string, number>();
  if (sealed.length > 0) {
    const rows = await queryRows<{ record_id: string; key_id: string; waited: number | string }>(
      tx,
      sql`with v as (
            select * from json_to_recordset(${JSON.stringify(sealed.map((r) => ({ record_id: r.recordId, key_id: r.keyId })))}::json)
              as v(record_id text, key_id text)),
          ok as (
            select v.record_id from v
              join log_entries e on e.entry_id = v.record_id and e.key_id = v.key_id
              join subject_keys k on k.key_id = v.key_id
             for key share of k),
          done as (
            delete from index_queue q using ok
             where q.entry_id = ok.record_id and q.claimed_by = ${claim}
         returning q.entry_id, q.enqueued_at),
          ${insertEmbeddingsCte(sealed, 'done')}
        select emb.record_id, emb.key_id, extract(epoch from (now() - done.enqueued_at))::float8 as waited
          from emb join done on done.entry_id = emb.record_id`,
    );
    for (const r of rows) inserted.set(r.record_id, Math.max(0, Number(r.waited)));
    await notifyEmbeddings(
      tx,
      rows.map((r) => ({ recordId: r.record_id, keyId: r.key_id })),
    );
    await c.o.beforeCommit?.();
    c.o.failpoint?.('indexer-inserted');
  }
  const marked = new Set<string>();
  if (refused.size > 0) {
    const json = JSON.stringify([...refused].map(([entry_id, r]) => ({ entry_id, key_id: r.keyId, reason: r.reason })));
    const rows = await queryRows<{ entry_id: string }>(
      tx,
      sql`with v as (select * from json_to_recordset(${json}::json) as v(entry_id text, key_id text, reason text)),
          done as (
            delete from index_queue q using v, log_entries e
             where q.entry_id = v.entry_id and q.claimed_by = ${claim} and e.entry_id = v.entry_id and e.key_id = v.key_id
         returning q.entry_id)
        update log_entries e set refused = v.reason
          from v join done on done.entry_id = v.entry_id
         where e.entry_id = v.entry_id
     returning e.entry_id`,
    );
    for (const r of rows) marked.add(r.entry_id);
  }
  // entries whose key is gone (a destruction not through this queue's hook, a restored database): nothing to index
  await tx.execute(sql`delete from index_queue q using log_entries e
                        where q.claimed_by = ${claim} and e.entry_id = q.entry_id
                          and not exists (select 1 from subject_keys k where k.key_id = e.key_id)`);
  // the rest (a re-key moved the entry meanwhile, a segment the store did not return): claimed again in a second
  const left = await queryRows<{ entry_id: string }>(
    tx,
    sql`update index_queue set claimed_by = null, claimed_until = now() + interval '1 second' where claimed_by = ${claim} returning entry_id`,
  );
  return { inserted, marked, released: left.length };
}

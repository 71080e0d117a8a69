/**
 * What a restore asks of the log's tables (src/backups/restore-carry.ts): the entries
 * of a backup's subject key that the re-keys after the backup carried, moved under the
 * key those re-keys lead to with their last wraps, and queued for the indexer (their
 * embeddings were sealed under the destroyed key and are not loaded).
 */
import { sql } from 'drizzle-orm';
import { queryRows, type Transaction } from '../db/client.js';

/** Moves `records` ([entry id, wrapped record key hex]) from `fromKeyId` to `toKeyId` and queues them; how many moved. */
export async function carryEntries(tx: Transaction, fromKeyId: string, toKeyId: string, records: ReadonlyMap<string, string>): Promise<number> {
  const moved = JSON.stringify([...records].map(([entry_id, wrapped]) => ({ entry_id, wrapped })));
  const updated = await queryRows<{ entry_id: string }>(
    tx,
    sql`update log_entries as e set key_id = ${toKeyId}, wrapped_key = decode(v.wrapped, 'hex')
          from json_to_recordset(${moved}::json) as v(entry_id text, wrapped text)
         where e.entry_id = v.entry_id and e.key_id = ${fromKeyId}
     returning e.entry_id`,
  );
  await tx.execute(sql`insert into index_queue (entry_id, enqueued_at)
                       select entry_id, now() from log_entries where key_id = ${toKeyId} and refused is null
                       on conflict (entry_id) do nothing`);
  return updated.length;
}

/** How many of `ids` are indexed under `keyId`. */
export async function countUnder(tx: Transaction, keyId: string, ids: readonly string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const [row] = await queryRows<{ n: number | string }>(
    tx,
    sql`select count(*) as n from log_entries where key_id = ${keyId} and entry_id in (select json_array_elements_text(${JSON.stringify(ids)}::json))`,
  );
  return Number(row?.n ?? 0);
}

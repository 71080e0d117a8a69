/** How far this replica's lexical index covers the sealed rows of live keys, and making it cover them all (reconcile). */
import { sql } from 'drizzle-orm';
import { queryRows } from '../db/client.js';
import { describeError } from '../observability/logger.js';
import { type Coverage, ownedRowsSql, type VectorsContext } from './context.js';
import { PLACE_SQL } from '../vault/shards.js';
import { load, unpublish } from './publish.js';
import { rememberRow } from './sharding.js';

/**
 * How far this replica's lexical index covers the stored rows: the sealed rows of live
 * keys, as the triggers on `embeddings` and `destruction_ledger` count them
 * (`embedding_counts`: a few rows whatever the store's size — never a count of the
 * table). Rows of a key that was destroyed (copies that outlived it, say in a restored
 * database) are never loaded: they do not count.
 */
export async function coverage(c: VectorsContext): Promise<Coverage> {
  // the indexing queue (the log's) in the same statement: one snapshot, so an entry moving from the queue to a row counts once
  const [row] = await queryRows<{ n: string | number | null; q: string | number }>(
    c.d.db,
    sql`select (select sum(records) from embedding_counts) as n, (select count(*) from index_queue) as q`,
  );
  const queued = Number(row?.q ?? 0);
  return { indexed: c.current.lexical.size, stored: Number(row?.n ?? 0) + queued, queued, rebuilding: c.building !== undefined };
}

/**
 * Makes this replica's lexical index hold every sealed row of a live key stored now
 * (what a missed notification left out is loaded, what a missed destruction left in
 * is dropped), and answers the coverage of that snapshot: rows stored when it was
 * taken, and how many of them the index holds. A row the index cannot hold (written
 * before lexical indexing, or one that does not open) stays uncovered, and so do the
 * entries waiting in the indexing queue (`queued`, counted in `stored`).
 */
export async function reconcile(c: VectorsContext): Promise<Coverage & { loaded: number; dropped: number }> {
  // the index's ids first: whatever it holds was committed before, so the snapshot below sees it unless it was deleted since
  const before = new Set(c.current.lexical.ids());
  // a sharded replica's: the rows of the shards it holds
  const owned = ownedRowsSql(c);
  const rows = await queryRows<{ record_id: string; key_id?: string; record_type?: string; place?: string | number }>(
    c.d.db,
    owned
      ? sql`select e.record_id, e.key_id, e.record_type, ${PLACE_SQL} as place
              from embeddings e left join subject_keys s on e.record_type = 'entry' and s.key_id = e.key_id
             where ${owned} and not exists (select 1 from destruction_ledger d where d.key_id = e.key_id)`
      : sql`select record_id from embeddings e where not exists (select 1 from destruction_ledger d where d.key_id = e.key_id)`,
  );
  for (const r of rows) if (r.key_id && r.record_type) rememberRow(c, { key_id: r.key_id, record_type: r.record_type as 'entry' | 'artifact', place: r.place });
  const [queue] = await queryRows<{ q: string | number }>(c.d.db, sql`select count(*) as q from index_queue`);
  const queued = Number(queue?.q ?? 0);
  const stored = new Set(rows.map((r) => r.record_id));
  const dropped = [...before].filter((id) => !stored.has(id));
  unpublish(c, dropped);
  let loaded = 0;
  for (const r of rows) {
    if (c.current.lexical.has(r.record_id)) continue;
    await load(c, r.record_id).catch((e: unknown) => c.d.logger.warn({ err: describeError(e) }, 'could not load a stored record into the index'));
    if (c.current.lexical.has(r.record_id)) loaded++;
  }
  let indexed = 0;
  for (const r of rows) if (c.current.lexical.has(r.record_id)) indexed++;
  return { indexed, stored: rows.length + queued, queued, rebuilding: c.building !== undefined, loaded, dropped: dropped.length };
}

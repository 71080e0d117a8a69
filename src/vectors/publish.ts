/**
 * Publishing: committed records put into this replica's indexes (and into those a
 * rebuild is filling), records and destroyed keys taken out, and other replicas'
 * writes loaded from their sealed rows.
 */
import { sql } from 'drizzle-orm';
import { zeroize } from '../crypto/index.js';
import { queryRows } from '../db/client.js';
import { isLetheError, LetheError } from '../errors.js';
import { describeError } from '../observability/logger.js';
import { type IndexedRecord, indexesOf, keyFor, ownedRowsSql, type SealedRow, type VectorsContext } from './context.js';
import { openSealedRecord, type WrittenEmbedding } from './embeddings.js';
import { PLACE_SQL } from '../vault/shards.js';
import { lookUpPlaces, owns, rememberRow } from './sharding.js';

/** How many recently destroyed key ids a replica remembers (to refuse a late load of their vectors). */
const DESTROYED_MEMORY = 10_000;
/** How long a replica waits for the scrub of removed vectors before a catch-up pass gives up (it is retried; the cursor does not move meanwhile). */
const SCRUB_WAIT_MS = 10_000;

/**
 * Runs `fn`, which commits `records` and publishes them on this replica (an append, a
 * supersession, an indexer batch, a re-key, a re-index): meanwhile a notification of one
 * of them under the key it is committed under loads nothing — two queries, an unwrap and
 * an open per record, when the notification beat the commit's answer — but is
 * remembered. When `fn` is done, a remembered record this index still does not hold
 * under that key is loaded after all (its commit's answer was lost, or another replica
 * committed it first). Notifications of other records, or of these under another key (a
 * re-key moved them), load as ever.
 */
export async function publishingRecords<T>(
  c: VectorsContext,
  records: ReadonlyArray<{ readonly recordId: string; readonly keyId: string }>,
  fn: () => Promise<T>,
): Promise<T> {
  const mine = records.filter((r) => !c.own.has(r.recordId));
  for (const r of mine) c.own.set(r.recordId, { keyId: r.keyId, heard: false });
  try {
    return await fn();
  } finally {
    const heard: WrittenEmbedding[] = [];
    for (const r of mine) {
      if (c.own.get(r.recordId)?.heard) heard.push([r.recordId, r.keyId]);
      c.own.delete(r.recordId);
    }
    loadWritten(c, heard);
  }
}

/**
 * Puts committed records into this replica's indexes — a sharded replica only those of
 * its shards. An entry whose key's place is not known yet is published once it is
 * looked up (a copy meanwhile; `loadsSettled` waits for it).
 */
export function publish(c: VectorsContext, records: readonly IndexedRecord[]): void {
  const mine: IndexedRecord[] = [];
  const unplaced: IndexedRecord[] = [];
  for (const r of records) {
    const o = owns(c, r);
    if (o) mine.push(r);
    else if (o === undefined) unplaced.push({ ...r, vector: r.vector && new Float32Array(r.vector), shingles: r.shingles && new Float64Array(r.shingles) });
  }
  publishOwned(c, mine);
  if (unplaced.length === 0) return;
  const placing: Promise<void> = lookUpPlaces(
    c,
    unplaced.map((r) => r.keyId),
  )
    .then(() =>
      publishOwned(
        c,
        unplaced.filter((r) => owns(c, r) === true),
      ),
    )
    .catch((e: unknown) => c.d.logger.warn({ err: describeError(e) }, 'could not place written records among the shards'))
    .finally(() => {
      for (const r of unplaced) {
        r.vector?.fill(0);
        r.shingles?.fill(0);
      }
      c.loading.delete(placing);
    });
  c.loading.add(placing);
}

function publishOwned(c: VectorsContext, records: readonly IndexedRecord[]): void {
  const live = records.filter((r) => !c.destroyed.has(r.keyId));
  for (const index of indexesOf(c)) {
    // one batch of graph insertions per index (several threads)
    index.vectors.upsertMany(live.flatMap((r) => (r.vector ? [{ id: r.recordId, type: r.recordType, keyId: r.keyId, vector: r.vector }] : [])));
    // each index owns its copy (it zeroes it when the record leaves)
    for (const r of live) if (r.shingles) index.lexical.upsert(r.recordId, r.recordType, r.keyId, new Float64Array(r.shingles));
  }
  c.d.metrics.indexVectors.set(c.current.vectors.size);
}

export function unpublish(c: VectorsContext, recordIds: Iterable<string>): void {
  for (const id of recordIds) {
    for (const index of indexesOf(c)) {
      index.vectors.remove(id);
      index.lexical.remove(id);
    }
  }
  c.d.metrics.indexVectors.set(c.current.vectors.size);
}

/**
 * A key was destroyed: its vectors leave the index now, and a load or rebuild
 * that was already decrypting them will not put them back.
 */
export function removeKey(c: VectorsContext, keyId: string): number {
  c.destroyed.add(keyId);
  c.destroyedDuring?.add(keyId);
  if (c.destroyed.size > DESTROYED_MEMORY) c.destroyed.delete(c.destroyed.values().next().value!);
  let n = 0;
  for (const index of indexesOf(c)) {
    n = Math.max(n, index.vectors.removeKey(keyId));
    index.lexical.removeKey(keyId);
  }
  c.d.metrics.indexVectors.set(c.current.vectors.size);
  return n;
}

/**
 * Resolves once every removed vector's copy is gone from the native memory of this
 * replica's graphs (the current index and one being built), or rejects `unavailable`
 * after `timeoutMs`: what a replica waits for before it says a destruction is applied.
 */
export async function scrubbed(c: VectorsContext, timeoutMs = SCRUB_WAIT_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      Promise.all(indexesOf(c).map((index) => index.vectors.scrubbed())),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new LetheError('unavailable', `removed vectors still in the vector index's native memory after ${timeoutMs} ms (the scrub goes on)`)),
          timeoutMs,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Loads one record's sealed row (another replica wrote it). */
export async function load(c: VectorsContext, recordId: string): Promise<void> {
  const owned = ownedRowsSql(c);
  const [row] = await queryRows<SealedRow>(
    c.d.db,
    owned
      ? sql`select e.record_id, e.record_type, e.key_id, e.model, e.sealed, e.fold_version, ${PLACE_SQL} as place
              from embeddings e left join subject_keys s on e.record_type = 'entry' and s.key_id = e.key_id
             where e.record_id = ${recordId} and ${owned}`
      : sql`select record_id, record_type, key_id, model, sealed, fold_version from embeddings where record_id = ${recordId}`,
  );
  if (!row) return;
  rememberRow(c, row);
  let key: Uint8Array;
  try {
    key = await keyFor(c, row.record_type, row.key_id);
  } catch (e) {
    if (isLetheError(e, 'key_destroyed') || isLetheError(e, 'not_found')) return;
    throw e;
  }
  try {
    // skips a key destroyed meanwhile; the row is of a shard this replica holds (the query kept to them)
    publishOwned(c, [openRow(c, row, key)]);
  } finally {
    zeroize(key);
  }
}

/** A sealed row opened: its vector when it is of this embedder's model, its shingle set when it has one. */
function openRow(c: VectorsContext, row: SealedRow, key: Uint8Array): IndexedRecord {
  const sealed = new Uint8Array(row.sealed.buffer, row.sealed.byteOffset, row.sealed.byteLength);
  const opened = openSealedRecord(key, { recordId: row.record_id, keyId: row.key_id, model: row.model }, sealed, c.d.embedder.dimensions);
  const vector = row.model === c.d.embedder.model ? opened.vector : undefined;
  return { recordId: row.record_id, recordType: row.record_type, keyId: row.key_id, vector, shingles: opened.shingles };
}

/**
 * Another replica wrote these records' embeddings (record id, key id): load the
 * ones this index does not already hold under that key (our own writes come back too).
 */
export function loadWritten(c: VectorsContext, records: readonly WrittenEmbedding[]): void {
  for (const [recordId, keyId, rewritten] of records) {
    // held under that key already, unless it was computed again under it (a re-index)
    if (!rewritten && c.current.lexical.keyOf(recordId) === keyId) continue;
    // this process is committing it under that key and publishes it itself (publishingRecords looks again when done)
    const own = c.own.get(recordId);
    if (own?.keyId === keyId) {
      own.heard = true;
      continue;
    }
    const loading: Promise<void> = load(c, recordId)
      .catch((e: unknown) => c.d.logger.warn({ err: describeError(e) }, 'could not load an embedding another replica wrote'))
      .finally(() => c.loading.delete(loading));
    c.loading.add(loading);
  }
}

/**
 * Resolves once the loads `loadWritten` started have settled, those started meanwhile
 * included: after it, a notification already heard changes this replica's indexes no
 * more (what a caller that rewrites or rebuilds behind them waits for).
 */
export async function loadsSettled(c: VectorsContext): Promise<void> {
  while (c.loading.size > 0) await Promise.all([...c.loading]);
}

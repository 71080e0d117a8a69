/**
 * The start-up rebuild: both indexes filled again from the sealed rows, opened on
 * worker threads (open-pool.ts), and swapped in for the current ones; single-flight.
 */
import os from 'node:os';
import { type SQL, sql } from 'drizzle-orm';
import { zeroize } from '../crypto/index.js';
import { queryRows } from '../db/client.js';
import { isLetheError } from '../errors.js';
import { idArrayLiteral } from '../ids.js';
import { PLACE_SQL } from '../vault/shards.js';
import { freshIndexes, type Indexes, keyFor, ownedRowsSql, type RebuildOptions, type RebuildResult, type SealedRow, type VectorsContext } from './context.js';
import { BatchBuilder, type BatchRow, type OpenedBatch } from './open-batch.js';
import { type Opener, openers } from './open-pool.js';
import { rememberRow } from './sharding.js';
import type { IndexedVector } from './vector-index.js';

/** Rows a rebuild sends to be opened at a time (their graph insertions then run as one batch). */
const BATCH_ROWS = 256;
/** A rebuild whose first page holds fewer rows opens them on its own thread (starting workers costs more). */
const MIN_ROWS_FOR_WORKERS = 1000;

/** Worker threads for a rebuild whose first page of `pageSize` held `rows`: min(cores, batches), none for a small store. */
function workersFor(rows: number, pageSize: number): number {
  if (rows < MIN_ROWS_FOR_WORKERS) return 0;
  const cores = os.availableParallelism();
  return rows < pageSize ? Math.min(cores, Math.ceil(rows / BATCH_ROWS)) : cores;
}

interface RebuildTally {
  loaded: number;
  destroyed: number;
  otherModel: number;
  unopened: number;
  readonly loadedKeys: Set<string>;
}

/**
 * Rebuilds both indexes from the sealed rows: keyset pages ordered by key id, one
 * key unwrap per key, the rows opened in batches of BATCH_ROWS on worker threads
 * (open-pool.ts: as many as the machine has cores, once they are warm — this thread
 * opens rows until then; none when the first page holds fewer than
 * MIN_ROWS_FOR_WORKERS rows) while this thread files what they answer
 * in the new indexes. The vector index's graph is built after the swap, in the
 * background (vector-index.ts: searches rank what it does not hold yet exactly), so
 * the rebuild ends once the rows are opened.
 * Rows of destroyed keys are skipped (counted); a row of another embedder model gives
 * its shingle set but no vector (counted).
 *
 * Single-flight: one rebuild runs at a time. Its result never holds a key destroyed
 * before it is swapped in — the destructions this replica published meanwhile are
 * dropped from it, and so is every key it loaded that the destruction ledger names
 * at the end (a destruction whose notification this replica missed). A rebuild that
 * fails (a worker's failure included) swaps nothing in: the current indexes keep
 * answering, and what it had filled is zeroed.
 */
export function rebuild(c: VectorsContext, pageSize = 2000, options: RebuildOptions = {}): Promise<RebuildResult> {
  // One rebuild at a time. A caller that arrives while one runs gets the next one, which
  // starts when it ends (that one may have read rows before the caller's changes);
  // callers arriving meanwhile share that next one.
  if (!c.rebuilding) {
    c.rebuilding = runRebuild(c, pageSize, options).finally(() => {
      c.rebuilding = undefined;
    });
    return c.rebuilding;
  }
  c.nextRebuild ??= c.rebuilding
    .catch(() => undefined)
    .then(() => {
      c.nextRebuild = undefined;
      return rebuild(c, pageSize, options);
    });
  return c.nextRebuild;
}

async function runRebuild(c: VectorsContext, pageSize: number, options: RebuildOptions): Promise<RebuildResult> {
  // Searches keep answering from the current indexes while the new ones fill;
  // writes and destructions meanwhile reach both.
  const building = freshIndexes(c.d.embedder);
  // its graph is built once it is swapped in (the cores open rows meanwhile); until then, and until built, searches rank the records waiting for it exactly
  building.vectors.pauseGraph();
  c.building = building;
  const during = new Set<string>();
  c.destroyedDuring = during;
  const gone = (keyId: string) => c.destroyed.has(keyId) || during.has(keyId);
  const tally: RebuildTally = { loaded: 0, destroyed: 0, otherModel: 0, unopened: 0, loadedKeys: new Set() };
  const batch = new BatchBuilder(c.d.embedder);
  const inflight = new Set<Promise<void>>();
  let failure: { error: unknown } | undefined;
  // rows are opened on this thread until the workers (if any) are warm, then on them
  const local = openers(0);
  let pool: Opener | undefined;
  let pooled = false;
  let swapped = false;
  // sends the rows gathered so far to be opened; waits while enough batches are out
  const dispatch = async () => {
    if (batch.size > 0) {
      const open = pool?.isReady ? pool : local;
      pooled ||= open === pool;
      const { request, rows } = batch.take();
      const tracked: Promise<void> = open
        .open(request)
        .then((opened) => fileBatch(c, building, rows, opened, tally, gone))
        .then(
          () => void inflight.delete(tracked),
          (error: unknown) => {
            failure ??= { error };
            inflight.delete(tracked);
          },
        );
      inflight.add(tracked);
    }
    while (!failure && inflight.size >= Math.max(2, (pool?.workers ?? 0) * 2)) await Promise.race(inflight);
    if (failure) throw failure.error;
  };
  let after: { keyId: string; recordId: string } | undefined;
  try {
    for (;;) {
      const rows = await queryRows<SealedRow>(c.d.db, pageQuery(c, after, pageSize));
      if (rows.length === 0) break;
      if (!after) {
        const workers = options.workers ?? workersFor(rows.length, pageSize);
        if (workers > 0) {
          pool = openers(workers, options.workerScript);
          // a worker failing before it is ready fails the rebuild too
          pool.ready.catch((error: unknown) => void (failure ??= { error }));
          // asked for by name: every row goes to the workers
          if (options.workers !== undefined) await pool.ready;
        }
      }
      await queuePage(c, rows, batch, dispatch, tally, gone);
      const last = rows.at(-1)!;
      after = { keyId: last.key_id, recordId: last.record_id };
    }
    await dispatch();
    await Promise.all(inflight);
    if (failure) throw failure.error;
    await dropDestroyed(c, building, during, tally);
    const previous = c.current;
    c.current = building;
    swapped = true;
    building.vectors.resumeGraph();
    previous.vectors.clear();
    previous.lexical.clear();
  } finally {
    batch.discard();
    // a failed pool rejects what it still holds: nothing is left writing into `building` after this
    await pool?.close();
    await Promise.allSettled([...inflight]);
    if (!swapped) {
      building.vectors.clear();
      building.lexical.clear();
    }
    c.building = undefined;
    c.destroyedDuring = undefined;
  }
  if (tally.unopened > 0) c.d.logger.warn({ unopened: tally.unopened }, 'some stored embeddings did not open under their key and are not indexed');
  if (tally.otherModel > 0) {
    c.d.logger.warn(
      { otherModel: tally.otherModel, model: c.d.embedder.model },
      'some stored embeddings were made by another embedder model and are not searchable',
    );
  }
  c.d.metrics.indexVectors.set(c.current.vectors.size);
  return { loaded: tally.loaded, destroyed: tally.destroyed, otherModel: tally.otherModel, workers: pooled ? pool!.workers : 0 };
}

/** One page of sealed rows after `after`, in (key id, record id) order; a sharded replica's of its shards only, with their places. */
function pageQuery(c: VectorsContext, after: { keyId: string; recordId: string } | undefined, pageSize: number): SQL {
  const owned = ownedRowsSql(c);
  const from = after ? sql`(e.key_id, e.record_id) > (${after.keyId}, ${after.recordId})` : sql`true`;
  if (!owned) {
    return sql`select record_id, record_type, key_id, model, sealed, fold_version from embeddings e
                where ${from} order by key_id, record_id limit ${pageSize}`;
  }
  return sql`select e.record_id, e.record_type, e.key_id, e.model, e.sealed, e.fold_version, ${PLACE_SQL} as place
               from embeddings e left join subject_keys s on e.record_type = 'entry' and s.key_id = e.key_id
              where ${from} and ${owned} order by e.key_id, e.record_id limit ${pageSize}`;
}

/** Adds one page's rows to the batch, one key unwrap per key (rows of a key gone are counted, not opened); dispatches full batches. */
async function queuePage(
  c: VectorsContext,
  rows: readonly SealedRow[],
  batch: BatchBuilder,
  dispatch: () => Promise<void>,
  tally: RebuildTally,
  gone: (keyId: string) => boolean,
): Promise<void> {
  let i = 0;
  while (i < rows.length) {
    const keyId = rows[i]!.key_id;
    rememberRow(c, rows[i]!);
    let j = i;
    while (j < rows.length && rows[j]!.key_id === keyId) j++;
    let key: Uint8Array | undefined;
    try {
      key = await keyFor(c, rows[i]!.record_type, keyId);
    } catch (e) {
      if (!isLetheError(e, 'key_destroyed') && !isLetheError(e, 'not_found')) throw e;
    }
    if (!key || gone(keyId)) tally.destroyed += j - i;
    else {
      try {
        for (let r = i; r < j; r++) {
          batch.add(rows[r]!, key);
          if (batch.size >= BATCH_ROWS) await dispatch();
        }
      } finally {
        zeroize(key);
      }
    }
    i = j;
  }
}

/** Drops from the filled indexes the keys destroyed while they filled, those the ledger names included, and remembers them destroyed. */
async function dropDestroyed(c: VectorsContext, building: Indexes, during: Set<string>, tally: RebuildTally): Promise<void> {
  // destructions the ledger holds for keys this rebuild loaded: one missed by this replica's listener would otherwise come back
  for (const keyId of await inLedger(c, [...tally.loadedKeys])) during.add(keyId);
  for (const keyId of during) {
    c.destroyed.add(keyId);
    building.vectors.removeKey(keyId);
    building.lexical.removeKey(keyId);
  }
}

/** Files one opened batch in the indexes being built (a row of a key destroyed meanwhile is left out); zeroes the batch. */
function fileBatch(
  c: VectorsContext,
  building: Indexes,
  rows: readonly BatchRow[],
  opened: OpenedBatch,
  tally: RebuildTally,
  gone: (keyId: string) => boolean,
): void {
  const d = c.d.embedder.dimensions;
  const vectors: IndexedVector[] = [];
  try {
    for (let i = 0; i < rows.length; i++) {
      const { recordId, recordType, keyId } = rows[i]!;
      // one row that does not open (another format, damaged) is left out and counted, not the whole rebuild
      if (opened.unopened[i]) {
        tally.unopened++;
        continue;
      }
      if (gone(keyId)) {
        tally.destroyed++;
        continue;
      }
      if (!opened.hasVector[i]) tally.otherModel++;
      // a newer write (published meanwhile) wins over what this page read
      if (opened.hasVector[i] && !building.vectors.has(recordId))
        vectors.push({ id: recordId, type: recordType, keyId, vector: { scale: opened.scales[i]!, q: opened.q.subarray(i * d, (i + 1) * d) } });
      if (opened.hasShingles[i] && !building.lexical.has(recordId)) {
        building.lexical.upsert(recordId, recordType, keyId, opened.shingles.subarray(opened.shinglesAt[i]!, opened.shinglesAt[i + 1]!));
      }
      tally.loaded++;
      tally.loadedKeys.add(keyId);
    }
    building.vectors.upsertMany(vectors, { graphLater: true });
  } finally {
    opened.q.fill(0);
    opened.scales.fill(0);
    opened.shingles.fill(0);
  }
}

/** Those of `keyIds` in the destruction ledger. */
async function inLedger(c: VectorsContext, keyIds: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < keyIds.length; i += 5000) {
    const rows = await queryRows<{ key_id: string }>(
      c.d.db,
      sql`select key_id from destruction_ledger where key_id = any(${idArrayLiteral(keyIds.slice(i, i + 5000))}::text[])`,
    );
    out.push(...rows.map((r) => r.key_id));
  }
  return out;
}

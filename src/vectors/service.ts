/**
 * Vectors: the embedder, the in-memory indexes — the vector index and the lexical
 * (keyed shingle) index — and keeping them true to what is readable. Writers of
 * entries and artifacts embed, shingle and seal through here; the indexes are rebuilt
 * by decrypting every sealed row at start-up, updated on every write (and on other
 * replicas' writes, over NOTIFY), and lose a key's records as soon as the key is
 * destroyed (the vault's destruction event). The `embeddings` rows of a destroyed key
 * go in the destruction's own transaction. Search (src/search) answers queries from
 * the vector index; the erasure probe reads both.
 */
import os from 'node:os';
import { eq, sql } from 'drizzle-orm';
import { zeroize } from '../crypto/index.js';
import { type Database, queryRows, type Transaction } from '../db/client.js';
import { embeddings } from '../db/schema.js';
import { idArrayLiteral } from '../ids.js';
import { isLetheError, LetheError } from '../errors.js';
import { describeError, type Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { KeyService } from '../vault/keys.js';
import type { VersionKeys } from '../vault/version-keys.js';
import type { Embedder } from './embedder.js';
import { FOLD_VERSION } from './fold.js';
import {
  embeddingsJson,
  notifyEmbeddings,
  openSealedRecord,
  resealEmbedding,
  type SealedEmbedding,
  sealEmbedding,
  storedForm,
  type WrittenEmbedding,
} from './embeddings.js';
import { BatchBuilder, type BatchRow, type OpenedBatch } from './open-batch.js';
import { type Opener, openers } from './open-pool.js';
import { ShingleIndex } from './shingle-index.js';
import type { ShingleHasher, TextShingles } from './shingles.js';
import { type IndexedVector, type RecordType, VectorIndex } from './vector-index.js';

/** How many recently destroyed key ids a replica remembers (to refuse a late load of their vectors). */
const DESTROYED_MEMORY = 10_000;
/** How long a replica waits for the scrub of removed vectors before a catch-up pass gives up (it is retried; the cursor does not move meanwhile). */
const SCRUB_WAIT_MS = 10_000;

/** Rows re-sealed between two turns of the event loop. */
const YIELD_EVERY = 256;

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

type SealedRow = { record_id: string; record_type: RecordType; key_id: string; model: string; sealed: Uint8Array; fold_version: number };

/** A sealed row with the vector and shingle set it will read back as. */
export type Sealed = SealedEmbedding & { readonly vector: Float32Array; readonly shingles: Float64Array };

export interface VectorsDeps {
  readonly db: Database;
  readonly embedder: Embedder;
  /** Where the keys sealing entries' (subject DEKs) and artifacts' (version keys) embeddings come from. */
  readonly keys: KeyService;
  readonly versionKeys: VersionKeys;
  /** Keys the shingles under the index's system key ('shingle-index'); destroyed by close(). */
  readonly shingles: ShingleHasher;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

/** A record as the indexes take it: its vector (absent: another model's) and shingle set (absent: written before lexical indexing). */
export interface IndexedRecord {
  readonly recordId: string;
  readonly recordType: RecordType;
  readonly keyId: string;
  readonly vector?: Float32Array | undefined;
  readonly shingles?: Float64Array | undefined;
}

/** The two in-memory indexes, filled and replaced together. */
interface Indexes {
  readonly vectors: VectorIndex;
  readonly lexical: ShingleIndex;
}

export interface RebuildResult {
  readonly loaded: number;
  readonly destroyed: number;
  readonly otherModel: number;
  /** Worker threads that opened rows (0: the rebuild's own thread opened them all). */
  readonly workers: number;
}

export interface RebuildOptions {
  /**
   * Worker threads opening the sealed rows, every row once they are warm (default: as
   * many as cores, none for a small store, and this thread opens rows until they are
   * warm; 0: this thread only).
   */
  readonly workers?: number;
  /** The workers' script (tests: a worker that fails); default open-worker. */
  readonly workerScript?: URL;
}

interface RebuildTally {
  loaded: number;
  destroyed: number;
  otherModel: number;
  unopened: number;
  readonly loadedKeys: Set<string>;
}

/** How far the lexical index covers what is stored: the probe certifies only at 1. */
export interface Coverage {
  /** Records in this replica's lexical index. */
  readonly indexed: number;
  /**
   * Records that should be in it: the sealed rows of live keys (every indexed entry and
   * current artifact version has one) and the entries waiting in the indexing queue
   * (`queued`), which count as not covered.
   */
  readonly stored: number;
  /** Of `stored`, entries a writer registered that wait in the indexing queue (src/log/indexer.ts): not covered yet. */
  readonly queued: number;
  /** A rebuild is filling new indexes. */
  readonly rebuilding: boolean;
}

export class Vectors {
  readonly embedder: Embedder;
  readonly #d: VectorsDeps;
  #current: Indexes;
  /** The indexes a rebuild is filling; writes and removals reach them too, and they replace #current when done. */
  #building: Indexes | undefined;
  #rebuilding: Promise<RebuildResult> | undefined;
  #nextRebuild: Promise<RebuildResult> | undefined;
  readonly #destroyed = new Set<string>();
  /** The keys destroyed since the running rebuild started (dropped from its result before it is swapped in). */
  #destroyedDuring: Set<string> | undefined;

  constructor(deps: VectorsDeps) {
    this.#d = deps;
    this.embedder = deps.embedder;
    this.#current = this.#fresh();
  }

  /** The vector index searches answer from. */
  get index(): VectorIndex {
    return this.#current.vectors;
  }

  /** A rebuild is filling new indexes (the current ones still answer). */
  get rebuilding(): boolean {
    return this.#building !== undefined;
  }

  /** The lexical index the erasure probe looks candidates up in. */
  get lexical(): ShingleIndex {
    return this.#current.lexical;
  }

  /** A text's keyed shingles in order (what the probe fingerprints). */
  shinglesOf(text: string): TextShingles {
    return this.#d.shingles.of(text);
  }

  /**
   * How far this replica's lexical index covers the stored rows: the sealed rows of live
   * keys, as the triggers on `embeddings` and `destruction_ledger` count them
   * (`embedding_counts`: a few rows whatever the store's size — never a count of the
   * table). Rows of a key that was destroyed (copies that outlived it, say in a restored
   * database) are never loaded: they do not count.
   */
  async coverage(): Promise<Coverage> {
    // the indexing queue (the log's) in the same statement: one snapshot, so an entry moving from the queue to a row counts once
    const [row] = await queryRows<{ n: string | number | null; q: string | number }>(
      this.#d.db,
      sql`select (select sum(records) from embedding_counts) as n, (select count(*) from index_queue) as q`,
    );
    const queued = Number(row?.q ?? 0);
    return { indexed: this.#current.lexical.size, stored: Number(row?.n ?? 0) + queued, queued, rebuilding: this.#building !== undefined };
  }

  /**
   * Makes this replica's lexical index hold every sealed row of a live key stored now
   * (what a missed notification left out is loaded, what a missed destruction left in
   * is dropped), and answers the coverage of that snapshot: rows stored when it was
   * taken, and how many of them the index holds. A row the index cannot hold (written
   * before lexical indexing, or one that does not open) stays uncovered, and so do the
   * entries waiting in the indexing queue (`queued`, counted in `stored`).
   */
  async reconcile(): Promise<Coverage & { loaded: number; dropped: number }> {
    // the index's ids first: whatever it holds was committed before, so the snapshot below sees it unless it was deleted since
    const before = new Set(this.#current.lexical.ids());
    const rows = await queryRows<{ record_id: string }>(
      this.#d.db,
      sql`select record_id from embeddings e where not exists (select 1 from destruction_ledger d where d.key_id = e.key_id)`,
    );
    const [queue] = await queryRows<{ q: string | number }>(this.#d.db, sql`select count(*) as q from index_queue`);
    const queued = Number(queue?.q ?? 0);
    const stored = new Set(rows.map((r) => r.record_id));
    const dropped = [...before].filter((id) => !stored.has(id));
    this.unpublish(dropped);
    let loaded = 0;
    for (const r of rows) {
      if (this.#current.lexical.has(r.record_id)) continue;
      await this.load(r.record_id).catch((e: unknown) => this.#d.logger.warn({ err: describeError(e) }, 'could not load a stored record into the index'));
      if (this.#current.lexical.has(r.record_id)) loaded++;
    }
    let indexed = 0;
    for (const r of rows) if (this.#current.lexical.has(r.record_id)) indexed++;
    return { indexed, stored: rows.length + queued, queued, rebuilding: this.#building !== undefined, loaded, dropped: dropped.length };
  }

  /** Wipes the shingle key. */
  close(): void {
    this.#d.shingles.destroy();
  }

  #fresh(): Indexes {
    return { vectors: new VectorIndex(this.embedder.dimensions), lexical: new ShingleIndex() };
  }

  /** Embeds and shingles texts and seals each vector and shingle set under `key` (the key of its text). */
  seal(records: ReadonlyArray<{ recordId: string; recordType: RecordType; text: string }>, keyId: string, key: Uint8Array): Promise<Sealed[]> {
    return this.sealEach(records.map((r) => ({ ...r, keyId, key })));
  }

  /** Embeds all texts in one embedder call, and seals each vector and shingle set under its own record's key. */
  async sealEach(
    records: ReadonlyArray<{ recordId: string; recordType: RecordType; text: string; keyId: string; key: Uint8Array }>,
    /** The records' vectors, when the caller embedded them already (one embedder call for more records than it seals at once). */
    embedded?: readonly Float32Array[],
  ): Promise<Sealed[]> {
    if (records.length === 0) return [];
    const vectors = embedded ?? (await this.embedder.embed(records.map((r) => r.text)));
    const model = this.embedder.model;
    return records.map((r, i) => {
      const shingles = this.#d.shingles.setOf(r.text);
      return {
        recordId: r.recordId,
        recordType: r.recordType,
        keyId: r.keyId,
        model,
        sealed: sealEmbedding(r.key, { recordId: r.recordId, keyId: r.keyId, model }, vectors[i]!, shingles),
        foldVersion: FOLD_VERSION,
        // what a restart will read back, so scores do not move across restarts
        vector: storedForm(vectors[i]!),
        shingles,
      };
    });
  }

  /**
   * A re-key (src/log/rekey.ts): the sealed rows of `recordIds` stored under `from`
   * re-sealed under `to` as they are — no re-embedding — ready to upsert in the
   * re-key's transaction, and opened to publish after it commits.
   */
  async reseal(from: { keyId: string; key: Uint8Array }, to: { keyId: string; key: Uint8Array }, recordIds: ReadonlySet<string>): Promise<Array<IndexedRecord & SealedEmbedding>> {
    const rows = await queryRows<SealedRow>(this.#d.db, sql`select record_id, record_type, key_id, model, sealed, fold_version from embeddings where key_id = ${from.keyId}`);
    const out: Array<IndexedRecord & SealedEmbedding> = [];
    for (const [i, row] of rows.entries()) {
      // two envelope operations a row: let requests run between chunks
      if (i > 0 && i % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
      if (!recordIds.has(row.record_id)) continue;
      const sealed = new Uint8Array(row.sealed.buffer, row.sealed.byteOffset, row.sealed.byteLength);
      const moved = resealEmbedding(
        { key: from.key, place: { recordId: row.record_id, keyId: from.keyId, model: row.model } },
        { key: to.key, place: { recordId: row.record_id, keyId: to.keyId, model: row.model } },
        sealed,
        this.embedder.dimensions,
      );
      // what #open would answer: the vector only when it is of this embedder's model
      const vector = row.model === this.embedder.model ? moved.opened.vector : undefined;
            // the same bytes under another key: still of the comparison form they were computed with
      out.push({
        recordId: row.record_id,
        recordType: row.record_type,
        keyId: to.keyId,
        model: row.model,
        sealed: moved.sealed,
        foldVersion: row.fold_version,
        vector,
        shingles: moved.opened.shingles,
      });
    }
    return out;
  }

  /** Keys whose records this process is about to publish itself (their notifications come back first, sometimes). */
  readonly #publishing = new Map<string, number>();

  /**
   * Runs `fn`, which commits records under `keyId` and then publishes them on this
   * replica: meanwhile their own notifications, which may come back before the
   * publish, load nothing again (one query per record, for a re-key's thousands).
   */
  async publishingUnder<T>(keyIds: string | readonly string[], fn: () => Promise<T>): Promise<T> {
    // counted: a re-key and the indexer may publish under one key at once
    const keys = typeof keyIds === 'string' ? [keyIds] : [...new Set(keyIds)];
    for (const k of keys) this.#publishing.set(k, (this.#publishing.get(k) ?? 0) + 1);
    try {
      return await fn();
    } finally {
      for (const k of keys) {
        const n = (this.#publishing.get(k) ?? 1) - 1;
        if (n === 0) this.#publishing.delete(k);
        else this.#publishing.set(k, n);
      }
    }
  }

  /** Puts committed records into this replica's indexes. */
  publish(records: readonly IndexedRecord[]): void {
    const live = records.filter((r) => !this.#destroyed.has(r.keyId));
    for (const index of this.#indexes()) {
      // one batch of graph insertions per index (several threads)
      index.vectors.upsertMany(live.flatMap((r) => (r.vector ? [{ id: r.recordId, type: r.recordType, keyId: r.keyId, vector: r.vector }] : [])));
      // each index owns its copy (it zeroes it when the record leaves)
      for (const r of live) if (r.shingles) index.lexical.upsert(r.recordId, r.recordType, r.keyId, new Float64Array(r.shingles));
    }
    this.#d.metrics.indexVectors.set(this.index.size);
  }

  unpublish(recordIds: Iterable<string>): void {
    for (const id of recordIds) {
      for (const index of this.#indexes()) {
        index.vectors.remove(id);
        index.lexical.remove(id);
      }
    }
    this.#d.metrics.indexVectors.set(this.index.size);
  }

  /**
   * A key was destroyed: its vectors leave the index now, and a load or rebuild
   * that was already decrypting them will not put them back.
   */
  removeKey(keyId: string): number {
    this.#destroyed.add(keyId);
    this.#destroyedDuring?.add(keyId);
    if (this.#destroyed.size > DESTROYED_MEMORY) this.#destroyed.delete(this.#destroyed.values().next().value!);
    let n = 0;
    for (const index of this.#indexes()) {
      n = Math.max(n, index.vectors.removeKey(keyId));
      index.lexical.removeKey(keyId);
    }
    this.#d.metrics.indexVectors.set(this.index.size);
    return n;
  }

  /**
   * Resolves once every removed vector's copy is gone from the native memory of this
   * replica's graphs (the current index and one being built), or rejects `unavailable`
   * after `timeoutMs`: what a replica waits for before it says a destruction is applied.
   */
  async scrubbed(timeoutMs = SCRUB_WAIT_MS): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        Promise.all(this.#indexes().map((index) => index.vectors.scrubbed())),
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

  #indexes(): Indexes[] {
    return this.#building ? [this.#current, this.#building] : [this.#current];
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
  rebuild(pageSize = 2000, options: RebuildOptions = {}): Promise<RebuildResult> {
    // One rebuild at a time. A caller that arrives while one runs gets the next one, which
    // starts when it ends (that one may have read rows before the caller's changes);
    // callers arriving meanwhile share that next one.
    if (!this.#rebuilding) {
      this.#rebuilding = this.#rebuild(pageSize, options).finally(() => {
        this.#rebuilding = undefined;
      });
      return this.#rebuilding;
    }
    this.#nextRebuild ??= this.#rebuilding
      .catch(() => undefined)
      .then(() => {
        this.#nextRebuild = undefined;
        return this.rebuild(pageSize, options);
      });
    return this.#nextRebuild;
  }

  async #rebuild(pageSize: number, options: RebuildOptions): Promise<RebuildResult> {
    // Searches keep answering from the current indexes while the new ones fill;
    // writes and destructions meanwhile reach both.
    const building = this.#fresh();
    // its graph is built once it is swapped in (the cores open rows meanwhile); until then, and until built, searches rank the records waiting for it exactly
    building.vectors.pauseGraph();
    this.#building = building;
    const during = new Set<string>();
    this.#destroyedDuring = during;
    const gone = (keyId: string) => this.#destroyed.has(keyId) || during.has(keyId);
    const tally: RebuildTally = { loaded: 0, destroyed: 0, otherModel: 0, unopened: 0, loadedKeys: new Set() };
    const batch = new BatchBuilder(this.embedder);
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
          .then((opened) => this.#file(building, rows, opened, tally, gone))
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
        const rows = await queryRows<SealedRow>(
          this.#d.db,
          sql`select record_id, record_type, key_id, model, sealed, fold_version from embeddings
               ${after ? sql`where (key_id, record_id) > (${after.keyId}, ${after.recordId})` : sql``}
               order by key_id, record_id limit ${pageSize}`,
        );
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
        let i = 0;
        while (i < rows.length) {
          const keyId = rows[i]!.key_id;
          let j = i;
          while (j < rows.length && rows[j]!.key_id === keyId) j++;
          let key: Uint8Array | undefined;
          try {
            key = await this.#keyFor(rows[i]!.record_type, keyId);
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
        const last = rows.at(-1)!;
        after = { keyId: last.key_id, recordId: last.record_id };
      }
      await dispatch();
      await Promise.all(inflight);
      if (failure) throw failure.error;
      // destructions the ledger holds for keys this rebuild loaded: one missed by this replica's listener would otherwise come back
      for (const keyId of await this.#inLedger([...tally.loadedKeys])) during.add(keyId);
      for (const keyId of during) {
        this.#destroyed.add(keyId);
        building.vectors.removeKey(keyId);
        building.lexical.removeKey(keyId);
      }
      const previous = this.#current;
      this.#current = building;
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
      this.#building = undefined;
      this.#destroyedDuring = undefined;
    }
    if (tally.unopened > 0) this.#d.logger.warn({ unopened: tally.unopened }, 'some stored embeddings did not open under their key and are not indexed');
    if (tally.otherModel > 0) {
      this.#d.logger.warn({ otherModel: tally.otherModel, model: this.embedder.model }, 'some stored embeddings were made by another embedder model and are not searchable');
    }
    this.#d.metrics.indexVectors.set(this.index.size);
    return { loaded: tally.loaded, destroyed: tally.destroyed, otherModel: tally.otherModel, workers: pooled ? pool!.workers : 0 };
  }

  /** Files one opened batch in the indexes being built (a row of a key destroyed meanwhile is left out); zeroes the batch. */
  #file(building: Indexes, rows: readonly BatchRow[], opened: OpenedBatch, tally: RebuildTally, gone: (keyId: string) => boolean): void {
    const d = this.embedder.dimensions;
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
        if (opened.hasVector[i] && !building.vectors.has(recordId)) vectors.push({ id: recordId, type: recordType, keyId, vector: opened.vectors.subarray(i * d, (i + 1) * d) });
        if (opened.hasShingles[i] && !building.lexical.has(recordId)) {
          building.lexical.upsert(recordId, recordType, keyId, opened.shingles.slice(opened.shinglesAt[i]!, opened.shinglesAt[i + 1]!));
        }
        tally.loaded++;
        tally.loadedKeys.add(keyId);
      }
      building.vectors.upsertMany(vectors, { graphLater: true });
    } finally {
      opened.vectors.fill(0);
      opened.shingles.fill(0);
    }
  }

  /** Those of `keyIds` in the destruction ledger. */
  async #inLedger(keyIds: readonly string[]): Promise<string[]> {
    const out: string[] = [];
    for (let i = 0; i < keyIds.length; i += 5000) {
      const rows = await queryRows<{ key_id: string }>(
        this.#d.db,
        sql`select key_id from destruction_ledger where key_id = any(${idArrayLiteral(keyIds.slice(i, i + 5000))}::text[])`,
      );
      out.push(...rows.map((r) => r.key_id));
    }
    return out;
  }

  /** Loads one record's sealed row (another replica wrote it). */
  async load(recordId: string): Promise<void> {
    const [row] = await queryRows<SealedRow>(this.#d.db, sql`select record_id, record_type, key_id, model, sealed, fold_version from embeddings where record_id = ${recordId}`);
    if (!row) return;
    let key: Uint8Array;
    try {
      key = await this.#keyFor(row.record_type, row.key_id);
    } catch (e) {
      if (isLetheError(e, 'key_destroyed') || isLetheError(e, 'not_found')) return;
      throw e;
    }
    try {
      this.publish([this.#open(row, key)]); // skips a key destroyed meanwhile
    } finally {
      zeroize(key);
    }
  }

  /** A sealed row opened: its vector when it is of this embedder's model, its shingle set when it has one. */
  #open(row: SealedRow, key: Uint8Array): IndexedRecord {
    const sealed = new Uint8Array(row.sealed.buffer, row.sealed.byteOffset, row.sealed.byteLength);
    const opened = openSealedRecord(key, { recordId: row.record_id, keyId: row.key_id, model: row.model }, sealed, this.embedder.dimensions);
    const vector = row.model === this.embedder.model ? opened.vector : undefined;
    return { recordId: row.record_id, recordType: row.record_type, keyId: row.key_id, vector, shingles: opened.shingles };
  }

  /**
   * Sealed rows of live keys whose shingles and vector were computed with an older
   * comparison form than FOLD_VERSION (fold.ts), in record-id order after `after`: what a
   * re-index reads the text of again (src/app/reindex.ts).
   */
  async staleRows(limit: number, after?: string): Promise<Array<{ recordId: string; recordType: RecordType; keyId: string }>> {
    const rows = await queryRows<{ record_id: string; record_type: RecordType; key_id: string }>(
      this.#d.db,
      sql`select record_id, record_type, key_id from embeddings e
           where fold_version < ${FOLD_VERSION} ${after === undefined ? sql`` : sql`and record_id > ${after}`}
             and not exists (select 1 from destruction_ledger d where d.key_id = e.key_id)
           order by record_id limit ${limit}`,
    );
    return rows.map((r) => ({ recordId: r.record_id, recordType: r.record_type, keyId: r.key_id }));
  }

  /** How many sealed rows of live keys are of an older comparison form (0: nothing to re-index). */
  async countStale(): Promise<number> {
    const [row] = await queryRows<{ n: string | number }>(
      this.#d.db,
      sql`select count(*) as n from embeddings e where fold_version < ${FOLD_VERSION}
            and not exists (select 1 from destruction_ledger d where d.key_id = e.key_id)`,
    );
    return Number(row?.n ?? 0);
  }

  /**
   * Re-indexes records from their text, read by the caller under `keyId`: embedded,
   * shingled and sealed again with this FOLD_VERSION, under the same key. A row is
   * written over only while it is still under that key and of an older form (a re-key,
   * a destruction or a newer write meanwhile wins and is left as it is); what was
   * written is announced and published. Answers how many rows were re-indexed.
   */
  async reindex(records: ReadonlyArray<{ recordId: string; recordType: RecordType; keyId: string; text: string }>): Promise<number> {
    const byKey = new Map<string, Array<(typeof records)[number]>>();
    for (const r of records) byKey.set(r.keyId, [...(byKey.get(r.keyId) ?? []), r]);
    let written = 0;
    for (const [keyId, list] of byKey) {
      let key: Uint8Array;
      try {
        key = await this.#keyFor(list[0]!.recordType, keyId);
      } catch (e) {
        if (isLetheError(e, 'key_destroyed') || isLetheError(e, 'not_found')) continue;
        throw e;
      }
      let sealed: Sealed[];
      try {
        sealed = await this.sealEach(list.map((r) => ({ ...r, key })));
      } finally {
        zeroize(key);
      }
      const updated = await this.publishingUnder(keyId, async () => {
        const rows = await queryRows<{ record_id: string }>(
          this.#d.db,
          sql`update embeddings e set model = v.model, sealed = decode(v.sealed, 'hex'), fold_version = v.fold_version
                from json_to_recordset(${embeddingsJson(sealed)}::json)
                     as v(record_id text, record_type text, key_id text, model text, sealed text, fold_version integer)
               where e.record_id = v.record_id and e.key_id = v.key_id and e.fold_version < v.fold_version
               returning e.record_id`,
        );
        const done = new Set(rows.map((r) => r.record_id));
        const mine = sealed.filter((s) => done.has(s.recordId));
        this.publish(mine);
        await notifyEmbeddings(this.#d.db, mine, { rewritten: true });
        return mine.length;
      });
      written += updated;
    }
    return written;
  }

  /**
   * Inside a key destruction's transaction (registered with KeyDestructions.within):
   * the sealed embeddings died with their key; their rows go so nothing tries to open them.
   */
  async deleteSealedUnder(tx: Transaction, keyIds: readonly string[]): Promise<void> {
    await tx.execute(sql`delete from embeddings where key_id = any(${idArrayLiteral(keyIds)}::text[])`);
  }

  /** Removes one record's sealed embedding inside `tx` (an artifact erased for want of sources). */
  async deleteRecord(tx: Transaction, recordId: string): Promise<void> {
    await tx.delete(embeddings).where(eq(embeddings.recordId, recordId));
  }

  /**
   * Another replica wrote these records' embeddings (record id, key id): load the
   * ones this index does not already hold under that key (our own writes come back too).
   */
  loadWritten(records: readonly WrittenEmbedding[]): void {
    for (const [recordId, keyId, rewritten] of records) {
      // held under that key already, unless it was computed again under it (a re-index)
      if (!rewritten && this.#current.lexical.keyOf(recordId) === keyId) continue;
      // this process committed them and publishes them itself in a moment (a re-key's survivors)
      if (this.#publishing.has(keyId)) continue;
      void this.load(recordId).catch((e: unknown) => this.#d.logger.warn({ err: describeError(e) }, 'could not load an embedding another replica wrote'));
    }
  }

  /** The plaintext key protecting a record's embedding; key_destroyed/not_found when gone. Caller zeroes. */
  async #keyFor(type: RecordType, keyId: string): Promise<Uint8Array> {
    return type === 'entry' ? (await this.#d.keys.dekFor(keyId)).dek : this.#d.versionKeys.unwrap(keyId, 'artifact-version');
  }
}

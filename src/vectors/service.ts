/**
 * Vectors: the embedder, the in-memory indexes — the vector index and the lexical
 * (keyed shingle) index — and keeping them true to what is readable. Writers of
 * entries and artifacts embed, shingle and seal through here; the indexes are rebuilt
 * by decrypting every sealed row at start-up, updated on every write (and on other
 * replicas' writes, over NOTIFY), and lose a key's records as soon as the key is
 * destroyed (the vault's destruction event). The `embeddings` rows of a destroyed key
 * go in the destruction's own transaction. Search (src/search) answers queries from
 * the vector index; the erasure probe reads both.
 *
 * The façade over one file per operation, sharing one VectorsContext (context.ts)
 * that holds all the state: seal.ts (seal, re-seal), publish.ts (publish, remove,
 * load another replica's writes), rebuild.ts (the start-up rebuild), coverage.ts,
 * reindex.ts (rows of an older comparison form) and deletions.ts (inside another
 * operation's transaction).
 */
import { sql } from 'drizzle-orm';
import { queryRows, type Transaction } from '../db/client.js';
import { idArrayLiteral } from '../ids.js';
import { LetheError } from '../errors.js';
import type { Embedder } from './embedder.js';
import type { SealedEmbedding, WrittenEmbedding } from './embeddings.js';
import {
  type Coverage,
  freshIndexes,
  type IndexedRecord,
  type RebuildOptions,
  type RebuildResult,
  type Sealed,
  type VectorsContext,
  type VectorsDeps,
} from './context.js';
import { coverage, reconcile } from './coverage.js';
import { deleteRecord, deleteSealedUnder } from './deletions.js';
import { load, loadsSettled, loadWritten, publish, publishingRecords, removeKey, scrubbed, unpublish } from './publish.js';
import { rebuild } from './rebuild.js';
import { countStale, reindex, staleRows } from './reindex.js';
import { reseal, seal, sealEach } from './seal.js';
import { SealPool } from './seal-pool.js';
import { shardCoverage } from './sharding.js';
import type { ShingleIndex } from './shingle-index.js';
import type { TextShingles } from './shingles.js';
import type { RecordType, VectorIndex } from './vector-index.js';

export type { Coverage, IndexedRecord, RebuildOptions, RebuildResult, Sealed, VectorsDeps } from './context.js';

type Text = { recordId: string; recordType: RecordType; text: string };
type KeyedText = Text & { keyId: string; key: Uint8Array };

export class Vectors {
  readonly embedder: Embedder;
  readonly #c: VectorsContext;

  constructor(deps: VectorsDeps) {
    this.embedder = deps.embedder;
    this.#c = {
      d: deps,
      current: freshIndexes(deps.embedder),
      building: undefined,
      rebuilding: undefined,
      nextRebuild: undefined,
      destroyed: new Set(),
      destroyedDuring: undefined,
      own: new Map(),
      loading: new Set(),
      seals: deps.sealWorkers ? new SealPool(deps.sealWorkers, deps, { logger: deps.logger }) : undefined,
      // sharded: nothing is indexed until this replica holds a shard (setShards)
      shards: deps.shards && deps.shards > 1 ? { count: deps.shards, owned: new Set() } : undefined,
      keyPlaces: new Map(),
    };
  }

  /** The vector index searches answer from. */
  get index(): VectorIndex {
    return this.#c.current.vectors;
  }

  /** A rebuild is filling new indexes (the current ones still answer). */
  get rebuilding(): boolean {
    return this.#c.building !== undefined;
  }

  /** The lexical index the erasure probe looks candidates up in. */
  get lexical(): ShingleIndex {
    return this.#c.current.lexical;
  }

  /** A text's keyed shingles in order (what the probe fingerprints). */
  shinglesOf(text: string): TextShingles {
    return this.#c.d.shingles.of(text);
  }

  coverage = (): Promise<Coverage> => coverage(this.#c);
  reconcile = (): Promise<Coverage & { loaded: number; dropped: number }> => reconcile(this.#c);

  /** Wipes the shingle key, and has the seal workers wipe their copies and end (resolves once they have). */
  async close(): Promise<void> {
    this.#c.d.shingles.destroy();
    await this.#c.seals?.close();
  }

  seal = (records: readonly Text[], keyId: string, key: Uint8Array): Promise<Sealed[]> => seal(this.#c, records, keyId, key);
  sealEach = (records: readonly KeyedText[], embedded?: readonly Float32Array[]): Promise<Sealed[]> => sealEach(this.#c, records, embedded);
  /** Starts the seal workers, if this service has any, and resolves once they are ready: whether batches go to them now. */
  sealWorkersReady = async (): Promise<boolean> => {
    const seals = this.#c.seals;
    if (!seals) return false;
    await seals.ready().catch(() => undefined);
    return seals.isReady;
  };
  /** The records sealed on a seal worker; undefined when there is none ready: the caller seals them itself (`sealEach`). */
  sealOffThread = async (records: readonly KeyedText[]): Promise<Sealed[] | undefined> => this.#c.seals?.seal(records);
  reseal = (
    from: { keyId: string; key: Uint8Array },
    targets: ReadonlyMap<string, { keyId: string; key: Uint8Array }>,
  ): Promise<Array<IndexedRecord & SealedEmbedding>> => reseal(this.#c, from, targets);

  /** Runs `fn`, which commits these records and publishes them here: their own notifications, should they come back first, load nothing. */
  publishingRecords = <T>(records: ReadonlyArray<{ recordId: string; keyId: string }>, fn: () => Promise<T>): Promise<T> =>
    publishingRecords(this.#c, records, fn);
  publish = (records: readonly IndexedRecord[]): void => publish(this.#c, records);
  unpublish = (recordIds: Iterable<string>): void => unpublish(this.#c, recordIds);
  removeKey = (keyId: string): number => removeKey(this.#c, keyId);
  scrubbed = (timeoutMs?: number): Promise<void> => scrubbed(this.#c, timeoutMs);
  load = (recordId: string): Promise<void> => load(this.#c, recordId);
  loadWritten = (records: readonly WrittenEmbedding[]): void => loadWritten(this.#c, records);
  /** Resolves once every load `loadWritten` has started so far (and any started meanwhile) has settled. */
  loadsSettled = (): Promise<void> => loadsSettled(this.#c);

  rebuild = (pageSize?: number, options?: RebuildOptions): Promise<RebuildResult> => rebuild(this.#c, pageSize, options);

  /** A sharded replica's shards: the count, and those it indexes now. */
  get shards(): { readonly count: number; readonly owned: ReadonlySet<number> } | undefined {
    return this.#c.shards;
  }

  /** Per shard, the sealed rows of live keys stored and the records this replica's lexical index holds (sharded only). */
  shardCoverage = (shards: ReadonlySet<number>): Promise<Map<number, { stored: number; indexed: number }>> => shardCoverage(this.#c, shards);

  /**
   * A sharded replica indexes these shards from now on: writes of others are left out at
   * once, and a rebuild fills the indexes with theirs (resolves once it is swapped in).
   */
  setShards = (owned: ReadonlySet<number>): Promise<RebuildResult> => {
    const s = this.#c.shards;
    if (!s) throw new LetheError('conflict', 'this replica is not sharded (LETHE_INDEX_SHARDS is 1)');
    this.#c.shards = { count: s.count, owned: new Set(owned) };
    return rebuild(this.#c);
  };

  staleRows = (limit: number, after?: string): Promise<Array<{ recordId: string; recordType: RecordType; keyId: string }>> => staleRows(this.#c, limit, after);
  countStale = (): Promise<number> => countStale(this.#c);
  reindex = (records: ReadonlyArray<Text & { keyId: string }>): Promise<number> => reindex(this.#c, records);

  /** The key each of these records' sealed rows is stored under (records without one are absent). */
  storedKeys = async (recordIds: readonly string[]): Promise<Map<string, string>> => {
    if (recordIds.length === 0) return new Map();
    const rows = await queryRows<{ record_id: string; key_id: string }>(
      this.#c.d.db,
      sql`select record_id, key_id from embeddings where record_id = any(${idArrayLiteral(recordIds)}::text[])`,
    );
    return new Map(rows.map((r) => [r.record_id, r.key_id]));
  };

  deleteSealedUnder = (tx: Transaction, keyIds: readonly string[]): Promise<void> => deleteSealedUnder(tx, keyIds);
  deleteRecord = (tx: Transaction, recordId: string): Promise<void> => deleteRecord(tx, recordId);
}

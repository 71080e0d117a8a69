/**
 * What the Vectors operations share: the service's types, and the one context the
 * façade (service.ts) builds and hands each operation file (seal.ts, publish.ts,
 * rebuild.ts, coverage.ts, reindex.ts, deletions.ts), which holds all of its state.
 */
import { type SQL, sql } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { KeyService } from '../vault/keys.js';
import { PLACE_SQL, shardOf } from '../vault/shards.js';
import type { VersionKeys } from '../vault/version-keys.js';
import type { Embedder } from './embedder.js';
import type { SealPool } from './seal-pool.js';
import { ShingleIndex } from './shingle-index.js';
import type { ShingleHasher } from './shingles.js';
import { type RecordType, VectorIndex } from './vector-index.js';

export type SealedRow = {
  record_id: string;
  record_type: RecordType;
  key_id: string;
  model: string;
  sealed: Uint8Array;
  fold_version: number;
  /** Its place among the shards (a sharded replica's rebuild reads it). */
  place?: string | number;
};

export type { Sealed } from './sealing.js';

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
  /** Worker threads the indexer's batches are sealed on (seal-pool.ts; default 0: the caller's thread). */
  readonly sealWorkers?: number;
  /** Shards the store's records are split into (LETHE_INDEX_SHARDS; default 1: this replica indexes every record). */
  readonly shards?: number;
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
export interface Indexes {
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

/** What the Vectors façade hands its operation files: its deps and every piece of its state. */
export interface VectorsContext {
  readonly d: VectorsDeps;
  /** The indexes searches answer from. */
  current: Indexes;
  /** The indexes a rebuild is filling; writes and removals reach them too, and they replace `current` when done. */
  building: Indexes | undefined;
  rebuilding: Promise<RebuildResult> | undefined;
  nextRebuild: Promise<RebuildResult> | undefined;
  /** Recently destroyed key ids (publish.ts DESTROYED_MEMORY of them): a late load of their records is refused. */
  readonly destroyed: Set<string>;
  /** The keys destroyed since the running rebuild started (dropped from its result before it is swapped in). */
  destroyedDuring: Set<string> | undefined;
  /** Records this process is committing and then publishes itself, with their key and whether their notification came meanwhile. */
  readonly own: Map<string, { readonly keyId: string; heard: boolean }>;
  /** The loads of written embeddings heard over NOTIFY (publish.ts loadWritten) still running. */
  readonly loading: Set<Promise<void>>;
  /** The seal workers, when there are any. */
  readonly seals: SealPool | undefined;
  /** The shards this replica indexes (LETHE_INDEX_SHARDS > 1); undefined: every record. */
  shards: ShardFilter | undefined;
  /** Entry keys' places (src/vault/shards.ts placeOfSubject), as rows and lookups told them. */
  readonly keyPlaces: Map<string, number>;
}

/** Which records a sharded replica indexes: those whose place falls in one of `owned` of `count` shards. */
export interface ShardFilter {
  readonly count: number;
  readonly owned: ReadonlySet<number>;
}

/** Whether this replica indexes a record at `place` (every record when unsharded). */
export function ownsPlace(c: VectorsContext, place: number): boolean {
  return !c.shards || c.shards.owned.has(shardOf(place, c.shards.count));
}

/** The SQL condition keeping the rows (`e`, joined to its subject key `s`) of the shards this replica owns; undefined when unsharded. */
export function ownedRowsSql(c: VectorsContext): SQL | undefined {
  const s = c.shards;
  if (!s) return undefined;
  return sql`(${PLACE_SQL} % ${s.count}) = any(${`{${[...s.owned].join(',')}}`}::int[])`;
}

export function freshIndexes(embedder: Embedder): Indexes {
  return { vectors: new VectorIndex(embedder.dimensions), lexical: new ShingleIndex() };
}

/** The indexes a write or a removal reaches: the current ones, and those a rebuild is filling. */
export function indexesOf(c: VectorsContext): Indexes[] {
  return c.building ? [c.current, c.building] : [c.current];
}

/** The plaintext key protecting a record's embedding; key_destroyed/not_found when gone. Caller zeroes. */
export async function keyFor(c: VectorsContext, type: RecordType, keyId: string): Promise<Uint8Array> {
  return type === 'entry' ? (await c.d.keys.dekFor(keyId)).dek : c.d.versionKeys.unwrap(keyId, 'artifact-version');
}

/** What `openApp` answers and takes (open.ts). */
import type { Db } from '../db/client.js';
import type { Services } from '../http/services.js';
import type { Regenerator } from '../artifacts/regenerator.js';
import type { KeyProvider } from '../keyprovider/provider.js';
import type { IndexerOptions } from '../log/indexer.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { ObjectStore } from '../storage/store.js';
import type { AuditLog } from '../vault/audit.js';
import type { DekCache } from '../vault/cache.js';
import type { KeyDestructions } from '../vault/destructions.js';
import type { ReplicaEvents } from '../vault/events.js';
import type { VersionKeys } from '../vault/version-keys.js';
import type { Embedder } from '../vectors/embedder.js';
import type { Vectors } from '../vectors/service.js';
import type { ReindexResult } from './reindex.js';
import type { ReplicaPresence } from './replica.js';

/** Everything the app holds: what the routes call (Services) and what only the app and the CLI reach. */
export interface App extends Services {
  readonly db: Db;
  readonly provider: KeyProvider;
  /** Where ciphertext objects live (MinIO / S3, or the local filesystem). */
  readonly objects: ObjectStore;
  readonly versionKeys: VersionKeys;
  readonly destructions: KeyDestructions;
  readonly audit: AuditLog;
  readonly cache: DekCache;
  readonly events: ReplicaEvents;
  readonly vectors: Vectors;
  /** This replica's heartbeat and destruction cursor (absent when it does not listen: a CLI command). */
  readonly replica: ReplicaPresence | undefined;
  /** What the start-up re-index did (src/app/reindex.ts): undefined when this app did not migrate. */
  readonly reindexed: ReindexResult | undefined;
  /** Re-indexes the sealed rows of an older comparison form now (`lethe reindex`). */
  reindex(): Promise<ReindexResult>;
  close(): Promise<void>;
}

export interface OpenAppOptions {
  readonly logger: Logger;
  readonly metrics?: Metrics;
  /** Apply migrations and make sure an active epoch exists (default true). */
  readonly prepare?: boolean;
  /**
   * Apply pending migrations (default true). False: refuse to open a database whose
   * schema is behind drizzle/, before anything is written to it (`lethe serve` with
   * LETHE_AUTO_MIGRATE off).
   */
  readonly migrate?: boolean;
  /** Listen for other replicas' events (default true). */
  readonly listen?: boolean;
  /** Rebuild the in-memory search index by decrypting the stored embeddings (default: as `listen`). */
  readonly searchIndex?: boolean;
  /** Replace the configured embedder or regenerator (tests). */
  readonly embedder?: Embedder;
  readonly regenerator?: Regenerator;
  readonly onRewrapBatch?: (rewrappedSoFar: number) => void | Promise<void>;
  /** Claim and run erasures in the background (default: as `listen`). */
  readonly erasureWorker?: boolean;
  /** Drain the indexing queue (writer-registered entries made searchable) in the background (default: as `listen`, unless LETHE_INDEXER=false). */
  readonly indexWorker?: boolean;
  /** The indexer's batch size, claim and poll (tests; src/log/indexer.ts has the defaults). */
  readonly indexing?: IndexerOptions;
  /** Worker threads the indexer seals its batches on (default: one fewer than the cores, at most 2; 0: the service thread). */
  readonly sealWorkers?: number;
  /** How long the erasure probe waits for entries queued for indexing before it started (tests; src/erasure/steps/probe.ts has the defaults). */
  readonly probeQueueWait?: { readonly waitMs: number; readonly parks: number };
  /** The clock epochs are retired by and compared against (tests that let a KMS deletion window pass). */
  readonly clock?: () => Date;
}

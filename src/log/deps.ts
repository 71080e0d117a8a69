/** What the log's operations share: the database, the vault's keys, the object store, the vectors (and the indexer's logger and metrics). */
import type { KeyedHasher } from '../crypto/index.js';
import type { Database } from '../db/client.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { ObjectStore } from '../storage/store.js';
import type { KeyService } from '../vault/keys.js';
import type { Vectors } from '../vectors/service.js';

export interface LogDeps {
  readonly db: Database;
  readonly keys: KeyService;
  readonly objects: ObjectStore;
  readonly vectors: Vectors;
  /** Where the indexer reports refused entries and its queue (optional: a bare log for tests). */
  readonly logger?: Logger | undefined;
  readonly metrics?: Metrics | undefined;
  /** Keys store items' hashes (the 'store-item' subkey): without it, appends naming an item are refused (items.ts). */
  readonly items?: KeyedHasher | undefined;
}

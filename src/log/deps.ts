/** What the log's operations share: the database, the vault's keys, the object store, the vectors. */
import type { Database } from '../db/client.js';
import type { ObjectStore } from '../storage/store.js';
import type { KeyService } from '../vault/keys.js';
import type { Vectors } from '../vectors/service.js';

export interface LogDeps {
  readonly db: Database;
  readonly keys: KeyService;
  readonly objects: ObjectStore;
  readonly vectors: Vectors;
}

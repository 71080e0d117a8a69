/** What LogService hands its operation files (append.ts, read.ts, lookups.ts). */
import type { LogDeps } from './deps.js';
import type { LazyPurge } from './idempotency.js';
import type { SealedCache } from '../storage/sealed-cache.js';
import type { Indexer } from './indexer.js';
import type { SegmentBatcher } from './segment-batch.js';

export type LogContext = LogDeps & {
  readonly indexer: Indexer;
  /** Expired idempotency records, purged now and then on the append path. */
  readonly purge: LazyPurge;
  /** Sealed frames recently indexed or read (ciphertext only). */
  readonly frames: SealedCache;
  /** Service appends' frames, stored in segments shared by the appends in flight together. */
  readonly segments: SegmentBatcher;
};

/**
 * What the routes call: one service per feature, handed in by the composition root
 * (src/app). Routes parse, authorize, call one service method and shape the reply;
 * they never reach the database.
 */
import type { ArtifactService } from '../artifacts/service.js';
import type { TrainingExposures } from '../artifacts/exposures.js';
import type { BackupService } from '../backups/service.js';
import type { Config } from '../config/index.js';
import type { ErasureEngine } from '../erasure/engine.js';
import type { ReportLinks } from '../erasure/report-link.js';
import type { Principals } from '../vault/principals.js';
import type { LogService } from '../log/service.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Search, ShardRouting } from '../search/service.js';
import type { ReplicaCalls } from '../vault/replica-calls.js';
import type { CertificateKeys } from '../vault/certificate-keys.js';
import type { EpochService } from '../vault/epochs.js';
import type { ReadFences } from '../vault/fences.js';
import type { KeyService } from '../vault/keys.js';

/** What /readyz reports of this replica (src/app/replica.ts). */
export interface ReplicaReadiness {
  readonly replicaId: string;
  readonly listener: { readonly state: 'up' | 'down'; readonly since: Date };
  readonly index: 'ready' | 'rebuilding';
  /** Every key destruction up to this destruction-ledger seq was applied here. */
  readonly appliedSeq: number;
  readonly lastCatchUpAt: Date | undefined;
}

export interface Services {
  readonly config: Config;
  /** Readiness: the database and the object store answer. */
  readonly db: { ping(): Promise<void> };
  readonly objects: { ping(): Promise<void>; writable?(): Promise<boolean | undefined> };
  readonly keys: KeyService;
  readonly epochs: EpochService;
  readonly fences: ReadFences;
  readonly log: LogService;
  readonly artifacts: ArtifactService;
  readonly exposures: TrainingExposures;
  readonly search: Search;
  readonly backups: BackupService;
  readonly erasures: ErasureEngine;
  /** Signed, expiring links to an erasure's report (no bearer token needed to open one). */
  readonly reportLinks: ReportLinks;
  /** Names the principal behind a token (dismissals' proposers and approvers, erasures' requesters). */
  readonly principals: Principals;
  /** This replica's listener, index and destruction cursor; absent when it does not listen for other replicas. */
  readonly replica?: { status(): ReplicaReadiness; fresh(): Promise<void> } | undefined;
  /** A sharded replica's shards (LETHE_INDEX_SHARDS > 1): which it answers for, and every shard's owner. */
  readonly shards?: Pick<ShardRouting, 'count' | 'answering' | 'owners'> | undefined;
  /** Verifies calls from the other replicas (sharded only). */
  readonly replicaCalls?: Pick<ReplicaCalls, 'verifyHeader' | 'verifyBody' | 'signAnswer'> | undefined;
  /** Certificate-signing keys: the public list (current and retired) and rotation. */
  readonly certificateKeys: CertificateKeys;
  readonly metrics: Metrics;
  readonly logger: Logger;
}

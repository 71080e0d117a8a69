/**
 * What the engine's parts share: the services an erasure reaches through, its
 * tables, the tiers, and its settings. Built once by the engine; steps, the worker
 * and the certificate finalizer read from it.
 */
import type { RefusalReason } from './machine.js';
import type { TrainingExposures } from '../artifacts/exposures.js';
import type { ArtifactService } from '../artifacts/service.js';
import type { BackupService } from '../backups/service.js';
import type { LogService } from '../log/service.js';
import type { Certificate, Json, TrustedKey } from '../crypto/index.js';
import type { Logger } from '../observability/logger.js';
import type { KeyDestructions } from '../vault/destructions.js';
import type { EpochService } from '../vault/epochs.js';
import type { KeyService } from '../vault/keys.js';
import type { VersionKeys } from '../vault/version-keys.js';
import type { Acknowledgement } from '../vault/replicas.js';
import type { AuditLog } from '../vault/audit.js';
import type { Vectors } from '../vectors/service.js';
import type { ProbePart, ProbePartInput } from './probe-part.js';
import type { ErasureRecords } from './records.js';
import type { RetryPolicy } from './retry.js';
import { ERASABLE_NAMES, type Erasable, type ErasableName, type ErasureTarget } from '../erasable.js';
import type { SubjectTombstones } from './tombstones.js';

/** Signs certificates with the vault's current certificate-signing key (vault/certificate-keys.ts: the key provider holds the keys). */
export interface CertificateSigner {
  sign(payload: { [key: string]: Json }): Promise<Certificate>;
  /** Every signing key's public part, current and retired with its retirement time: what the finalizer checks a stored certificate against. */
  list(): Promise<ReadonlyArray<TrustedKey>>;
}

export interface ErasureSettings {
  /** An erasure whose probe recovers more than this fraction ends incomplete. */
  readonly probeThreshold: number;
  /** Cosine at or above which an embedding neighbour counts as carrying an erased record. */
  readonly probeSimilarity: number;
  /** How long a claim lasts without a heartbeat. */
  readonly claimSeconds: number;
  /** How often the worker looks for work. */
  readonly pollMs: number;
  /** How many erasures the worker runs at once, each its own claim (default 1). */
  readonly concurrency?: number;
  /** How long one step may run before its claim is given up and the attempt counted (default 300 s). */
  readonly stepDeadlineMs?: number;
  /** The backoff of transient step failures (retry.ts; default 1 s doubling to 5 min). */
  readonly retry?: RetryPolicy;
  /**
   * How long the probe waits for the entries queued for indexing before it started:
   * `waitMs` in place each time it runs, at most `parks` parks (steps/probe.ts; default
   * 2 s and 10). Tests shorten it.
   */
  readonly probeQueueWait?: { readonly waitMs: number; readonly parks: number };
}

/** Which replicas applied a key destruction (the app's replica presence, over the vault's heartbeat rows). */
export interface ReplicaAcknowledger {
  acknowledge(seq: number): Promise<Acknowledgement>;
}

/**
 * A sharded deployment's probe (LETHE_INDEX_SHARDS > 1; the app's shard keeper): the
 * part of every shard — this replica's for the shards it answers for (`local`), each
 * owner's for the others, over signed internal calls — the shards no owner answered
 * for, and of those the ones a live replica holds and is rebuilding (progress).
 */
export interface ShardProbes {
  readonly count: number;
  probe(
    target: ErasureTarget,
    input: ProbePartInput,
    options: { readonly reconcile: boolean },
    local: (input: ProbePartInput, shards: ReadonlySet<number>) => Promise<ProbePart>,
  ): Promise<{ parts: ProbePart[]; missing: number[]; progressing: number[] }>;
}

export interface ErasureServices {
  readonly keys: KeyService;
  readonly destructions: KeyDestructions;
  readonly versionKeys: VersionKeys;
  readonly epochs: EpochService;
  readonly vectors: Vectors;
  readonly log: LogService;
  readonly artifacts: ArtifactService;
  readonly exposures: TrainingExposures;
  readonly backups: BackupService;
  readonly replicas: ReplicaAcknowledger;
  /** The vault's audit chain (a reinstatement's row, tombstones.ts; each certificate signed, certificate-audit.ts). */
  readonly audit: AuditLog;
  readonly logger: Logger;
  /** Counts a certificate the engine refused to sign (the metric `lethe_certificate_refusals_total`). */
  readonly onRefusal?: (reason: RefusalReason) => void;
  /** Test fault injection: kill the process at a named point (never honoured in production). */
  readonly failpoint?: ((name: string) => void) | undefined;
}

export interface ErasureResources extends ErasureServices, ErasureSettings {
  readonly records: ErasureRecords;
  /** `subject_tombstones`: subjects erased for good until an admin reinstates them. */
  readonly tombstones: SubjectTombstones;
  /** Each module's part of an erasure, by name (src/erasable.ts). */
  readonly tiers: Readonly<Record<ErasableName, Erasable>>;
  /** Signs certificates; every certificate names its signing key (`signingKeyId`) inside the signed payload. */
  readonly signer: CertificateSigner;
  /** Set once a sharded replica holds its shard leases (ErasureEngine.useShards): the probe then covers every shard. */
  shardProbes?: ShardProbes | undefined;
}

/** The erasables by name: exactly one of each, or the engine refuses to start. */
export function erasablesByName(list: readonly Erasable[]): Readonly<Record<ErasableName, Erasable>> {
  const out = Object.fromEntries(list.map((e) => [e.name, e])) as Record<ErasableName, Erasable>;
  const missing = ERASABLE_NAMES.filter((n) => !out[n]);
  if (missing.length > 0 || list.length !== ERASABLE_NAMES.length) {
    throw new Error(
      `the erasure engine needs one erasable of each of ${ERASABLE_NAMES.join(', ')} (missing: ${missing.join(', ') || 'none'}; given ${list.length})`,
    );
  }
  return out;
}

/** What the subject-key operations share: their types, limits and refusals, and the context the service hands each operation file. */
import type { SQL } from 'drizzle-orm';
import type { Database, Transaction } from '../db/client.js';
import { LetheError } from '../errors.js';
import type { KeyProvider } from '../keyprovider/provider.js';
import type { Metrics } from '../observability/metrics.js';
import type { AuditLog } from './audit.js';
import type { DekCache } from './cache.js';
import type { KeyCreator } from './creation.js';
import type { KeyDestructions } from './destructions.js';
import type { LeaseRecorder } from './leases.js';
import type { SubjectHasher } from './subjects.js';

export interface SubjectKeyInfo {
  readonly keyId: string;
  readonly state: 'active' | 'fenced';
  readonly createdAt: Date;
  /** True when this call created the key. */
  readonly created: boolean;
}

export interface Lease {
  readonly keyId: string;
  /** The plaintext DEK. The caller zeroes it once it has been sent. */
  readonly dek: Uint8Array;
  readonly leaseId: string;
  readonly expiresAt: Date;
}

/**
 * A key's state as a backup job or a client sees it: `destruction_pending` is a key
 * already unusable whose destruction record is not yet durable in the backup
 * bucket's ledger chain (a restore could still bring it back); only then `destroyed`.
 */
export type Validity = 'active' | 'destruction_pending' | 'destroyed' | 'unknown';

export interface LiveKey {
  readonly keyId: string;
  readonly state: 'active' | 'fenced';
}

export interface SubjectStatus {
  readonly subjectHash: Uint8Array;
  /** The subject's live key, if it has one. */
  readonly key?: LiveKey;
  /** True when it has no live key and one of its keys was destroyed. */
  readonly erased: boolean;
}

export const MAX_VALIDITY_IDS = 10_000;

/**
 * What a release did: `released` recorded it now; `already_released` found it
 * recorded; `expired` found the lease over already (nothing to record).
 */
export interface LeaseRelease {
  readonly keyId: string;
  readonly outcome: 'released' | 'already_released' | 'expired';
}

/**
 * A check that runs in the transaction creating a subject's key, before the insert:
 * it throws a LetheError to refuse the key (an erasure of the subject is open:
 * erasure_in_progress; the subject was erased and not reinstated: subject_erased).
 */
export type KeyCreationGuard = (tx: Transaction, subjectHash: Uint8Array) => Promise<void>;

/**
 * A creation guard's SQL form, run inside the one statement of a group-committed key
 * creation (creation.ts): `among(subjects)` selects `(subject_hash, code)` for each
 * subject of `subjects` (a relation with a bytea `subject_hash`) the guard refuses a
 * key now; `error(code)` is the LetheError the guard throws for that code. It must
 * refuse exactly the subjects the guard function refuses, with the same errors.
 */
export interface KeyCreationRefusals {
  readonly among: (subjects: SQL) => SQL;
  readonly error: (code: string) => LetheError;
}

/** At most this many subjects in one bulk creation (`ensureKeys`, POST /v1/keys/batch). */
export const MAX_BULK_SUBJECTS = 10_000;

/** What a bulk creation answers for one subject, in the order asked. */
export type BulkKeyResult =
  | { readonly subject: string; readonly status: 'created' | 'existing'; readonly keyId: string; readonly createdAt: Date }
  | { readonly subject: string; readonly status: 'refused'; readonly refusal: LetheError };

/** How long a write waits out a forget's re-key before it is refused (a re-key of thousands of entries takes about a second). */
export const REKEY_WAIT_MS = 10_000;

export const fencedRefusal = (): LetheError =>
  new LetheError(
    'erasure_in_progress',
    'the subject key is fenced: the subject is being erased, or re-keyed for a moment while some of its entries are forgotten; no new leases are handed out until then',
  );

export interface KeyServiceDeps {
  readonly db: Database;
  readonly provider: KeyProvider;
  readonly hasher: SubjectHasher;
  readonly audit: AuditLog;
  readonly cache: DekCache;
  readonly destructions: KeyDestructions;
  readonly metrics: Metrics;
  readonly leaseTtlSeconds: number;
  /** Sequence numbers a head takes before it is rolled into a shard (default SHARD_ENTRIES). */
  readonly shardEntries?: number;
  readonly now?: () => Date;
}

/**
 * How many entries a key holds, about: a head is rolled into a shard once it took
 * this many sequence numbers, and a re-key splits more survivors than this into
 * shards. A forget re-wraps one key's entries, so this bounds its cost (bench 12).
 */
export const SHARD_ENTRIES = 256;

/** Key moves (a head rolled, a re-key) one lease or service append follows before it gives up. */
export const MAX_KEY_MOVES = 20;

/** One of a subject's live keys: its head (appends and leases) or a shard. */
export interface SubjectKeyRef {
  readonly keyId: string;
  readonly state: 'active' | 'fenced';
  readonly head: boolean;
}

/** What KeyService hands its operation files (key-*.ts). */
export interface KeyContext {
  readonly d: KeyServiceDeps;
  readonly now: () => Date;
  readonly creator: KeyCreator;
  readonly leases: LeaseRecorder;
  readonly onRelease: ReadonlyArray<(subjectHash: Uint8Array) => Promise<void>>;
  /** The refusal a creation guard answers for the subject now, in `tx` (undefined: a key would be created). */
  refusal(tx: Transaction, subjectHash: Uint8Array): Promise<LetheError | undefined>;
  /** Drops this replica's cached DEK of `keyId`. */
  dropCached(keyId: string): void;
}

/** The vault's tables (src/vault): KEK epochs, subject and artifact-version keys, the destruction ledger, the audit chain, replicas' heartbeats and index shard leases. */
import { sql } from 'drizzle-orm';
import { bigint, bigserial, boolean, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { bytea, tstz } from './columns.js';

export const EPOCH_STATES = ['pending', 'active', 'retiring', 'retired'] as const;
export type EpochState = (typeof EPOCH_STATES)[number];

export const epochs = pgTable(
  'epochs',
  {
    epoch: integer('epoch').primaryKey(),
    state: text('state', { enum: EPOCH_STATES }).notNull(),
    createdAt: tstz('created_at').notNull().defaultNow(),
    activatedAt: tstz('activated_at'),
    retiredAt: tstz('retired_at'),
    /**
     * How keys are wrapped under this epoch: 2 binds each key's purpose (subject DEK,
     * artifact-version key, erasure key) in the wrap's associated data; 1 marks an
     * epoch created before that, under which keys may still carry the older context
     * until the next rotation re-wraps them.
     */
    wrapFormat: integer('wrap_format').notNull().default(2),
  },
  (t) => [uniqueIndex('epochs_one_active').on(t.state).where(sql`${t.state} = 'active'`)],
);

export const LIVE_KEY_STATES = ['active', 'fenced'] as const;
export type LiveKeyState = (typeof LIVE_KEY_STATES)[number];

export const subjectKeys = pgTable(
  'subject_keys',
  {
    keyId: text('key_id').primaryKey(),
    subjectHash: bytea('subject_hash').notNull(),
    state: text('state', { enum: LIVE_KEY_STATES }).notNull(),
    epoch: integer('epoch')
      .notNull()
      .references(() => epochs.epoch),
    wrappedDek: bytea('wrapped_dek').notNull(),
    createdAt: tstz('created_at').notNull().defaultNow(),
    updatedAt: tstz('updated_at').notNull().defaultNow(),
    /** The next log sequence number under this key. */
    nextSeq: integer('next_seq').notNull().default(1),
    /** The subject's head key: where appends and leases go. Its other live keys are shards (full heads, re-keys' splits). */
    head: boolean('head').notNull().default(true),
    /** `next_seq` when this key became head: a head with a shard's worth of sequence numbers past it is rolled (key-shards.ts). */
    baseSeq: integer('base_seq').notNull().default(1),
  },
  (t) => [
    uniqueIndex('subject_keys_subject_head').on(t.subjectHash).where(sql`${t.head}`),
    index('subject_keys_subject_hash').on(t.subjectHash),
    index('subject_keys_epoch_key').on(t.epoch, t.keyId),
  ],
);

/** What a re-key's destruction row carries (`replaced_by`): ciphertext and ids only. */
export interface KeyReplacement {
  readonly keyId: string;
  readonly epoch: number;
  /** The new key wrapped under `epoch`'s KEK (hex): what `subject_keys.wrapped_dek` holds. */
  readonly wrappedDek: string;
  /** The survivors carried: [entry id, record key wrapped under the new key (hex)]. */
  readonly records: ReadonlyArray<readonly [string, string]>;
  /** Survivors that cannot be carried (frames converted into a segment written after the backup). */
  readonly lost: readonly string[];
  /** Survivors split off into shard keys of their own (a re-key of more than a shard's worth). */
  readonly shards?: ReadonlyArray<{
    readonly keyId: string;
    readonly epoch: number;
    readonly wrappedDek: string;
    readonly records: ReadonlyArray<readonly [string, string]>;
  }>;
}

export const destructionLedger = pgTable(
  'destruction_ledger',
  {
    keyId: text('key_id').primaryKey(),
    /** What the key encrypted: a subject's records, or one version of a derived artifact. */
    keyKind: text('key_kind', { enum: ['subject', 'artifact-version'] })
      .notNull()
      .default('subject'),
    /** The subject a subject key belonged to; null for artifact-version keys. */
    subjectHash: bytea('subject_hash'),
    destroyedAt: tstz('destroyed_at').notNull(),
    reason: text('reason').notNull(),
    /** The epoch whose KEK wrapped the key's last copy: old copies die when it retires. */
    wrappedEpoch: integer('wrapped_epoch').notNull(),
    /** Leases handed to writers stay usable in their memory until this time. */
    leasedUntil: tstz('leased_until'),
    /**
     * A re-key's replacement (src/log/rekey.ts), ciphertext only: the new key wrapped
     * under its epoch, and the survivors' record keys wrapped under it. It travels in the
     * ledger chain, so a restore of a backup taken before the re-key brings the survivors
     * back and only the left-out entries stay gone (src/backups/restore-carry.ts).
     */
    replacedBy: jsonb('replaced_by').$type<KeyReplacement>(),
    /**
     * When the destruction's record became durable in the backup store's ledger
     * chain: until then the destruction is pending (the key is already unusable, but
     * a restore could still bring it back), and is never reported as `destroyed`.
     */
    durableAt: tstz('durable_at'),
    /**
     * Order of insertion: a replica catches up on destructions it may have missed
     * (its notification connection was down) by reading past the last seq it applied.
     */
    seq: bigserial('seq', { mode: 'number' }).notNull(),
  },
  (t) => [
    index('destruction_ledger_subject_hash').on(t.subjectHash, t.destroyedAt),
    uniqueIndex('destruction_ledger_seq').on(t.seq),
    // the destructions not yet durable in the ledger chain: what a chain flush looks for, never the whole ledger
    index('destruction_ledger_pending').on(t.destroyedAt, t.keyId).where(sql`${t.durableAt} is null`),
  ],
);

/**
 * One row per running replica, heartbeated: whether its notification listener is up,
 * whether its in-memory indexes are whole, and the last destruction (ledger seq) it has
 * applied to them. The erasure's vector tier waits for every live replica to have
 * applied a destruction, or states the lagging ones as a residual.
 */
export const replicaHeartbeats = pgTable('replica_heartbeats', {
  replicaId: text('replica_id').primaryKey(),
  startedAt: tstz('started_at').notNull(),
  seenAt: tstz('seen_at').notNull(),
  /** The highest destruction_ledger.seq this replica has applied (every lower one too). */
  appliedSeq: bigint('applied_seq', { mode: 'number' }).notNull().default(0),
  listener: text('listener', { enum: ['up', 'down'] }).notNull(),
  index: text('index', { enum: ['ready', 'rebuilding'] }).notNull(),
});

/**
 * Index shards (LETHE_INDEX_SHARDS > 1): which replica holds the in-memory indexes of
 * each subject-hash shard, under a lease it renews; `fence` grows with every change of
 * owner, so a replica that lost a shard can no longer act for it (src/vault/shards.ts).
 */
export const indexShards = pgTable('index_shards', {
  shard: integer('shard').primaryKey(),
  owner: text('owner'),
  /** Where the other replicas reach the owner (LETHE_REPLICA_URL). */
  ownerUrl: text('owner_url'),
  /** The owner's MAC of that address (src/vault/replica-calls.ts): an address someone wrote here without the root key is never called. */
  ownerUrlMac: text('owner_url_mac'),
  fence: bigint('fence', { mode: 'number' }).notNull().default(0),
  expiresAt: tstz('expires_at'),
  state: text('state', { enum: ['rebuilding', 'ready'] })
    .notNull()
    .default('rebuilding'),
});

/**
 * The replicas that take part in index sharding, with the shard count each is
 * configured with, seen at each of their lease ticks: how many share the shards, and
 * whether they agree on the count (src/vault/shards.ts).
 */
export const indexShardMembers = pgTable('index_shard_members', {
  replicaId: text('replica_id').primaryKey(),
  shards: integer('shards').notNull(),
  seenAt: tstz('seen_at').notNull(),
});

/** One key per artifact version, wrapped under an epoch KEK like a subject DEK. */
export const artifactKeys = pgTable(
  'artifact_keys',
  {
    keyId: text('key_id').primaryKey(),
    artifactId: text('artifact_id').notNull(),
    version: integer('version').notNull(),
    epoch: integer('epoch')
      .notNull()
      .references(() => epochs.epoch),
    wrappedDek: bytea('wrapped_dek').notNull(),
    createdAt: tstz('created_at').notNull(),
    /** What the key is for, bound in its wrap: one version of an artifact, or an erasure's own key. */
    purpose: text('purpose', { enum: ['artifact-version', 'erasure'] })
      .notNull()
      .default('artifact-version'),
  },
  (t) => [index('artifact_keys_epoch_key').on(t.epoch, t.keyId), uniqueIndex('artifact_keys_version').on(t.artifactId, t.version)],
);

export const auditLog = pgTable(
  'audit_log',
  {
    seq: bigint('seq', { mode: 'number' }).primaryKey(),
    at: tstz('at').notNull(),
    actor: text('actor').notNull(),
    action: text('action').notNull(),
    keyId: text('key_id'),
    subjectHash: bytea('subject_hash'),
    epoch: integer('epoch'),
    /** Canonical JSON text (not jsonb: the MAC covers the exact bytes). */
    detail: text('detail').notNull(),
    prevMac: bytea('prev_mac').notNull(),
    mac: bytea('mac').notNull(),
  },
  // a key's history, and the leases still outstanding when it is destroyed
  (t) => [index('audit_log_key_at').on(t.keyId, t.at)],
);

export const auditHead = pgTable('audit_head', {
  id: integer('id').primaryKey(),
  seq: bigint('seq', { mode: 'number' }).notNull(),
  mac: bytea('mac').notNull(),
  /** MAC over (seq, mac) under the audit-head subkey: a head moved back by hand does not verify. Null until the first append after the upgrade. */
  headMac: bytea('head_mac'),
});

export type EpochRow = typeof epochs.$inferSelect;

export type SubjectKeyRow = typeof subjectKeys.$inferSelect;

export type LedgerRow = typeof destructionLedger.$inferSelect;

export type AuditRow = typeof auditLog.$inferSelect;

export type ArtifactKeyRow = typeof artifactKeys.$inferSelect;

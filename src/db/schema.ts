/**
 * The database schema: one table per concept, row types inferred from it.
 *
 * Invariants (see src/vault/README.md):
 * - No plaintext subject content and no subject id is stored: subjects are named by
 *   a keyed hash (HMAC-SHA256 under a subkey of the root key).
 * - subject_keys holds only live keys. Destroying a key removes its row; the
 *   destruction ledger records that it happened, never what the key was.
 * - Leases do not write subject_keys: a lease is an audit row (lease id, expiry),
 *   and the lease path takes only shared row locks.
 * - audit_log is append-only and MAC-chained; audit_head holds the chain's tip.
 */
import { sql } from 'drizzle-orm';
import { bigint, bigserial, boolean, customType, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';

/** bytea as Uint8Array on both drivers (postgres.js returns Buffer, PGlite Uint8Array). */
export const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({
  dataType: () => 'bytea',
  toDriver: (value) => Buffer.from(value.buffer, value.byteOffset, value.byteLength),
  fromDriver: (value) => new Uint8Array(value.buffer, value.byteOffset, value.byteLength),
});

const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

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

/**
 * The episodic log's index: where each entry's frame is. Nothing here comes from the
 * entry's content: no text, no kind, no metadata, no length of anything but the
 * ciphertext frame.
 */
export const logEntries = pgTable(
  'log_entries',
  {
    entryId: text('entry_id').primaryKey(),
    subjectHash: bytea('subject_hash').notNull(),
    keyId: text('key_id').notNull(),
    seq: integer('seq').notNull(),
    segment: text('segment').notNull(),
    frameOffset: integer('frame_offset').notNull(),
    frameLength: integer('frame_length').notNull(),
    createdAt: tstz('created_at').notNull(),
    /**
     * The entry's own record key, wrapped under the subject key (`key_id`): the frame is
     * sealed under the record key, so a re-key re-wraps these and rewrites no frame.
     * Null for a frame sealed directly under the subject key (written before record keys).
     */
    wrappedKey: bytea('wrapped_key'),
    /**
     * The record-level erasure that forgets this entry: from its request on the entry is
     * read by no one but that erasure; its record key dies with the re-key that ends it.
     */
    forgottenBy: text('forgotten_by'),
    /**
     * Set when the log's indexer refused the entry's frame (src/log/indexer.ts): it did
     * not open under the key it names, or its payload broke the entry schema. A refused
     * entry is never served nor indexed. The reason's class and top-level field only
     * (`frame_unopened`, `payload_refused:<field>`), never anything of the content.
     */
    refused: text('refused'),
    /**
     * The writing token's principal (`prn_…`, src/vault/principals.ts): it may forget or
     * supersede the entries it wrote without the eraser role. Null for entries from before.
     */
    writtenBy: text('written_by'),
    /** The entry this one superseded (its successor, the same person's current data): the probe of that supersession does not count it. */
    supersedes: text('supersedes'),
    /** A store item's (namespace, key) and namespace, as keyed hashes ('store-item' subkey): looked up by, never read back (src/log/items.ts). */
    itemHash: bytea('item_hash'),
    namespaceHash: bytea('namespace_hash'),
  },
  (t) => [
    uniqueIndex('log_entries_key_seq').on(t.keyId, t.seq),
    index('log_entries_subject').on(t.subjectHash),
    index('log_entries_supersedes').on(t.supersedes).where(sql`${t.supersedes} is not null`),
    index('log_entries_item').on(t.subjectHash, t.itemHash).where(sql`${t.itemHash} is not null`),
    index('log_entries_namespace').on(t.namespaceHash, t.seq).where(sql`${t.namespaceHash} is not null`),
  ],
);

/**
 * The indexing queue (owned by the log): one row per writer-registered entry whose
 * embedding and keyed shingles are not computed yet, inserted in the registration's
 * statement and deleted in the statement that inserts its sealed embedding (or marks
 * it refused). Workers in every replica claim rows with FOR UPDATE SKIP LOCKED for
 * `claimed_until`; a claim that lapses is taken again. `seq` orders the queue and is
 * the erasure probe's high-water mark. Nothing here comes from the entry's content.
 */
export const indexQueue = pgTable(
  'index_queue',
  {
    entryId: text('entry_id')
      .primaryKey()
      .references(() => logEntries.entryId, { onDelete: 'cascade' }),
    seq: bigserial('seq', { mode: 'number' }).notNull(),
    enqueuedAt: tstz('enqueued_at').notNull(),
    /** The claim (`<replica>#<n>`) working on the row, until `claimed_until`. */
    claimedBy: text('claimed_by'),
    claimedUntil: tstz('claimed_until'),
    attempts: integer('attempts').notNull().default(0),
  },
  (t) => [index('index_queue_seq').on(t.seq)],
);

export const ARTIFACT_KINDS = ['summary', 'fact', 'digest'] as const;
export type ArtifactKind = (typeof ARTIFACT_KINDS)[number];

/**
 * Idempotency keys of appends: a retried request with the same key (per subject)
 * answers the first result instead of storing the entry again. `request_digest` is
 * SHA-256 over the request as sent (never the text itself); a retry with the same key
 * and another body is refused. Rows expire after a day.
 */
export const appendRequests = pgTable(
  'append_requests',
  {
    subjectHash: bytea('subject_hash').notNull(),
    idempotencyKey: text('idempotency_key').notNull(),
    requestDigest: bytea('request_digest').notNull(),
    entryId: text('entry_id').notNull(),
    keyId: text('key_id').notNull(),
    seq: integer('seq').notNull(),
    createdAt: tstz('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.subjectHash, t.idempotencyKey] }), index('append_requests_created').on(t.createdAt)],
);

/**
 * Derived artifacts. The text of each version lives in the object store, sealed under
 * that version's own key (artifact_keys); nothing here comes from the text. `height`
 * is 1 + the greatest height among the artifact's artifact sources (entries count 0):
 * ordering by it is a topological order of the provenance graph.
 */
export const artifacts = pgTable(
  'artifacts',
  {
    artifactId: text('artifact_id').primaryKey(),
    kind: text('kind', { enum: ARTIFACT_KINDS }).notNull(),
    state: text('state', { enum: ['live', 'erased'] }).notNull(),
    version: integer('version').notNull(),
    height: integer('height').notNull(),
    /** The current version's key and object; null once erased. */
    keyId: text('key_id'),
    object: text('object'),
    generator: text('generator'),
    createdAt: tstz('created_at').notNull(),
    updatedAt: tstz('updated_at').notNull(),
  },
  // cursor pagination of the list
  (t) => [index('artifacts_created').on(t.createdAt, t.artifactId)],
);

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

/**
 * Provenance edges of each artifact's current version: artifact ← source. Indexed both
 * ways, so the closure below an artifact and the artifacts above a source each cost
 * what they touch.
 */
export const provenance = pgTable(
  'provenance',
  {
    artifactId: text('artifact_id').notNull(),
    sourceId: text('source_id').notNull(),
    sourceType: text('source_type', { enum: ['entry', 'artifact'] }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.artifactId, t.sourceId] }), index('provenance_source').on(t.sourceId, t.artifactId)],
);

/**
 * Embeddings, sealed under the same key as the text they were computed from (the
 * subject's DEK for an entry, the version key for an artifact): they die with it.
 */
export const embeddings = pgTable(
  'embeddings',
  {
    recordId: text('record_id').primaryKey(),
    recordType: text('record_type', { enum: ['entry', 'artifact'] }).notNull(),
    keyId: text('key_id').notNull(),
    model: text('model').notNull(),
    sealed: bytea('sealed').notNull(),
    /** The comparison form (src/vectors/fold.ts FOLD_VERSION) the sealed shingles and vector were computed from: older rows are re-indexed. */
    foldVersion: integer('fold_version').notNull().default(1),
  },
  // (key id, record id): rebuild pages walk it; destruction deletes by its prefix
  (t) => [index('embeddings_key').on(t.keyId, t.recordId)],
);

/**
 * How many `embeddings` rows of live keys there are (owned by vectors): kept by statement
 * triggers (migration 0012) — on `embeddings` (insert, delete, truncate: the rows whose key
 * is not in the destruction ledger) and on `destruction_ledger` (insert: a destroyed key's
 * rows still stored stop counting). The erasure probe's coverage check sums these few rows
 * instead of counting the table. Sharded by backend (pid % 16) so that concurrent writers
 * seldom wait on one row; the sum is exact in every snapshot.
 */
export const embeddingCounts = pgTable('embedding_counts', {
  shard: integer('shard').primaryKey(),
  records: bigint('records', { mode: 'number' }).notNull().default(0),
});

/** Registered fine-tuning or distillation corpora (the erasure class C decision). */
export const trainingExposures = pgTable('training_exposures', {
  exposureId: text('exposure_id').primaryKey(),
  corpus: text('corpus').notNull(),
  model: text('model'),
  createdAt: tstz('created_at').notNull(),
});

export const trainingExposureRecords = pgTable(
  'training_exposure_records',
  {
    exposureId: text('exposure_id').notNull(),
    recordId: text('record_id').notNull(),
    recordType: text('record_type', { enum: ['entry', 'artifact'] }).notNull(),
    /** The artifact version that went into the corpus (null for entries). */
    version: integer('version'),
  },
  (t) => [primaryKey({ columns: [t.exposureId, t.recordId] }), index('training_exposure_records_record').on(t.recordId)],
);

/** The subjects whose content a corpus held, as it stood at registration. */
export const trainingExposureSubjects = pgTable(
  'training_exposure_subjects',
  {
    subjectHash: bytea('subject_hash').notNull(),
    exposureId: text('exposure_id').notNull(),
  },
  (t) => [primaryKey({ columns: [t.subjectHash, t.exposureId] })],
);

/**
 * Backups taken into the backup bucket. The manifest itself (objects, sha256, key ids,
 * key states) lives in the bucket; this row is the index that finds it and the
 * version last written (1: a manifest is written once; a manifest of format 1 taken
 * before propagation went through the ledger chain may have later versions).
 */
export const backups = pgTable(
  'backups',
  {
    backupId: text('backup_id').primaryKey(),
    createdAt: tstz('created_at').notNull(),
    manifestVersion: integer('manifest_version').notNull(),
    /** The newest manifest version the ledger chain records (a restore refuses an older manifest than that). */
    chainedVersion: integer('chained_version').notNull().default(0),
    objects: integer('objects').notNull(),
    keys: integer('keys').notNull(),
  },
  // cursor pagination of the list
  (t) => [index('backups_created').on(t.createdAt, t.backupId)],
);

/** Which backups hold data of which key: how many backups a destruction reaches (through the ledger chain), and which keys a manifest's folded view looks up. */
export const backupKeys = pgTable(
  'backup_keys',
  {
    keyId: text('key_id').notNull(),
    backupId: text('backup_id').notNull(),
  },
  // (backup_id): the keys one backup lists, for its folded manifest
  (t) => [primaryKey({ columns: [t.keyId, t.backupId] }), index('backup_keys_backup').on(t.backupId)],
);

/** Ledger rows already placed in a backup bucket's ledger chain, and in which record. */
export const ledgerExports = pgTable(
  'ledger_exports',
  {
    bucket: text('bucket').notNull(),
    keyId: text('key_id').notNull(),
    exportedAt: tstz('exported_at').notNull(),
    /** The chain record that holds the destruction. */
    chainSeq: bigint('chain_seq', { mode: 'number' }),
  },
  // (bucket, chain_seq): the destructions a chain record holds, found without reading the bucket's every export
  (t) => [primaryKey({ columns: [t.bucket, t.keyId] }), index('ledger_exports_chain_seq').on(t.bucket, t.chainSeq)],
);

/**
 * The ledger chain of each backup bucket, as this database assigned it: record `seq`
 * with its exact bytes (MAC'd, carrying the previous record's MAC), so a record is
 * written to the bucket once assigned and re-written byte for byte after a crash.
 * `stored_at` is set once the record and the head naming it are in the bucket.
 */
export const ledgerChain = pgTable(
  'ledger_chain',
  {
    bucket: text('bucket').notNull(),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    body: text('body').notNull(),
    mac: bytea('mac').notNull(),
    createdAt: tstz('created_at').notNull(),
    storedAt: tstz('stored_at'),
  },
  (t) => [primaryKey({ columns: [t.bucket, t.seq] })],
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

/**
 * Erasure requests: a durable state machine (src/erasure/README.md). `step` is the
 * next step to run; a replica claims the row (claimed_by/claimed_until) with FOR
 * UPDATE SKIP LOCKED and runs that step. One open erasure per subject. The request's
 * free text (reason, public attributes) and the probe fingerprints are sealed under
 * the erasure's own key (an artifact_keys row keyed by the erasure id), destroyed
 * when nothing needs them any more; `state` holds step outputs (counts, ids, times)
 * and never content.
 */
export const erasures = pgTable(
  'erasures',
  {
    erasureId: text('erasure_id').primaryKey(),
    subjectHash: bytea('subject_hash').notNull(),
    /** What is erased: the whole subject (its key), or some of its records (`entry_ids`) by a re-key without them. */
    scope: text('scope', { enum: ['subject', 'records'] })
      .notNull()
      .default('subject'),
    /** A records-scope erasure's entries (ids only, never content). */
    entryIds: jsonb('entry_ids'),
    /** A supersession's successor: the entry written to replace the forgotten one (`entry_ids`), in the same transaction. */
    successorId: text('successor_id'),
    status: text('status', { enum: ['pending', 'running', 'completed', 'incomplete', 'failed'] }).notNull(),
    class: text('class', { enum: ['A', 'B', 'C'] }),
    /** The next step to run; null once the erasure is finished. */
    step: text('step'),
    legalBasis: text('legal_basis'),
    /**
     * The request's context, in the clear: { reasonCategory, legalBasis, controller,
     * reference } (src/erasure/request.ts RequestContextSchema) — never personal data; null
     * when the request gave none (and for erasures from before the column).
     */
    requestContext: jsonb('request_context'),
    /** { bound } when the requester states an unlearning bound (class C); the method is sealed with the request. Rows from before also hold the method. */
    unlearning: jsonb('unlearning'),
    /** The erasure's key (wrapped in artifact_keys) sealing the request text and the fingerprints; null once destroyed. */
    sealKeyId: text('seal_key_id'),
    sealedRequest: bytea('sealed_request'),
    sealedFingerprints: bytea('sealed_fingerprints'),
    state: jsonb('state').notNull(),
    certificate: jsonb('certificate'),
    certificateState: text('certificate_state', { enum: ['provisional', 'final'] }),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    claimedBy: text('claimed_by'),
    claimedUntil: tstz('claimed_until'),
    notBefore: tstz('not_before').notNull(),
    createdAt: tstz('created_at').notNull(),
    updatedAt: tstz('updated_at').notNull(),
    finishedAt: tstz('finished_at'),
  },
  (t) => [
    // one open erasure of a whole subject at a time; records-scope erasures (forgetting entries of a living subject) may overlap
    uniqueIndex('erasures_open_subject').on(t.subjectHash).where(sql`${t.status} in ('pending', 'running') and ${t.scope} = 'subject'`),
    index('erasures_claimable').on(t.notBefore).where(sql`${t.status} in ('pending', 'running')`),
    index('erasures_subject').on(t.subjectHash, t.createdAt),
    index('erasures_provisional').on(t.erasureId).where(sql`${t.certificateState} = 'provisional'`),
    // cursor pagination of the list
    index('erasures_created').on(t.createdAt, t.erasureId),
  ],
);

/**
 * Subjects erased for good: from the destruction of an erased subject's key on, no new
 * key, lease or append is accepted for it (410 subject_erased) — a late job must not
 * re-learn the person — until an admin reinstates it (the row is deleted, audited).
 */
export const subjectTombstones = pgTable('subject_tombstones', {
  subjectHash: bytea('subject_hash').primaryKey(),
  erasureId: text('erasure_id').notNull(),
  erasedAt: tstz('erased_at').notNull(),
});

/** One row per transition of an erasure's state machine (the timeline, and the events stream). */
export const erasureTransitions = pgTable(
  'erasure_transitions',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    erasureId: text('erasure_id').notNull(),
    fromStep: text('from_step'),
    toStep: text('to_step'),
    status: text('status').notNull(),
    at: tstz('at').notNull(),
    replica: text('replica').notNull(),
    detail: text('detail'),
  },
  (t) => [index('erasure_transitions_erasure').on(t.erasureId, t.id)],
);

export type EpochRow = typeof epochs.$inferSelect;
export type SubjectKeyRow = typeof subjectKeys.$inferSelect;
export type LedgerRow = typeof destructionLedger.$inferSelect;
export type AuditRow = typeof auditLog.$inferSelect;
export type LogEntryRow = typeof logEntries.$inferSelect;
export type ArtifactRow = typeof artifacts.$inferSelect;
export type ArtifactKeyRow = typeof artifactKeys.$inferSelect;
export type ErasureRow = typeof erasures.$inferSelect;

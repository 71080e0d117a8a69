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
import { bigint, customType, index, integer, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';

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
  },
  (t) => [
    uniqueIndex('subject_keys_subject_hash').on(t.subjectHash),
    index('subject_keys_epoch_key').on(t.epoch, t.keyId),
  ],
);

export const destructionLedger = pgTable(
  'destruction_ledger',
  {
    keyId: text('key_id').primaryKey(),
    subjectHash: bytea('subject_hash').notNull(),
    destroyedAt: tstz('destroyed_at').notNull(),
    reason: text('reason').notNull(),
    /** The epoch whose KEK wrapped the key's last copy: old copies die when it retires. */
    wrappedEpoch: integer('wrapped_epoch').notNull(),
    /** Leases handed to writers stay usable in their memory until this time. */
    leasedUntil: tstz('leased_until'),
  },
  (t) => [index('destruction_ledger_subject_hash').on(t.subjectHash, t.destroyedAt)],
);

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
  },
  (t) => [uniqueIndex('log_entries_key_seq').on(t.keyId, t.seq), index('log_entries_subject').on(t.subjectHash)],
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
});

export type EpochRow = typeof epochs.$inferSelect;
export type SubjectKeyRow = typeof subjectKeys.$inferSelect;
export type LedgerRow = typeof destructionLedger.$inferSelect;
export type AuditRow = typeof auditLog.$inferSelect;
export type LogEntryRow = typeof logEntries.$inferSelect;

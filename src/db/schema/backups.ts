/** The backups' tables (src/backups): backups, the keys they hold, the ledger chain. */
import { bigint, index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { bytea, tstz } from './columns.js';

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

/** The vectors' tables (src/vectors): sealed embeddings and their counts. */
import { bigint, index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { bytea } from './columns.js';

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

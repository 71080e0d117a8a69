/** The log's tables (src/log): the entries' index, the indexing queue, appends' idempotency keys. */
import { sql } from 'drizzle-orm';
import { bigserial, index, integer, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { bytea, tstz } from './columns.js';

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

export type LogEntryRow = typeof logEntries.$inferSelect;

/** The erasure engine's tables (src/erasure): erasures, their transitions, subject tombstones. */
import { sql } from 'drizzle-orm';
import { bigserial, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { bytea, tstz } from './columns.js';

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

export type ErasureRow = typeof erasures.$inferSelect;

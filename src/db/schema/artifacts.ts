/** The artifacts' tables (src/artifacts): derived artifacts, their provenance, training exposures. */
import { index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { bytea, tstz } from './columns.js';

export const ARTIFACT_KINDS = ['summary', 'fact', 'digest'] as const;
export type ArtifactKind = (typeof ARTIFACT_KINDS)[number];

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

export type ArtifactRow = typeof artifacts.$inferSelect;

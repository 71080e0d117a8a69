/** What the artifacts routes share. */
import { z } from '@hono/zod-openapi';
import { ARTIFACT_KINDS, MAX_SOURCES } from '../../../artifacts/service.js';
import { SUBJECT_ID_PATTERN, SUBJECT_ID_RULE } from '../../../ids.js';
import { MAX_SEARCH_K, MAX_SEARCH_SUBJECTS } from '../../../search/service.js';
import { SEARCH_MODES } from '../../../search/rank.js';
import { idParam } from '../../schemas.js';

export const RecordId = z.string().min(1).max(100);

export const ArtifactIdParam = z.object({
  artifactId: idParam('art', 'artifactId'),
});

export const ReadFence = z
  .string()
  .min(1)
  .max(8 * 1024 * 1024);

export const WriteArtifact = z
  .object({
    kind: z.enum(ARTIFACT_KINDS),
    text: z.string().min(1).openapi({ description: 'at most 64 KiB of UTF-8 (413 above)' }),
    sources: z.array(RecordId).max(MAX_SOURCES).openapi({ description: 'entry and artifact ids it was derived from; empty: 422 provenance_required' }),
    generator: z.string().min(1).max(200).optional(),
    readFence: ReadFence.optional().openapi({ description: 'the readFence of the read this artifact was made from' }),
    readFences: z.array(ReadFence).max(1000).optional().openapi({ description: "addition: several reads' fences at once" }),
  })
  .openapi('WriteArtifactRequest');

export const ArtifactSchema = z
  .object({
    artifactId: z.string(),
    kind: z.enum(ARTIFACT_KINDS),
    version: z.number().int(),
    text: z.string(),
    sources: z.array(z.string()),
    generator: z.string().nullable(),
    createdAt: z.string().openapi({ format: 'date-time' }),
    updatedAt: z.string().openapi({ format: 'date-time' }),
    readFence: z.string(),
  })
  .openapi('Artifact');

export const SearchSubject = z.string().regex(SUBJECT_ID_PATTERN, SUBJECT_ID_RULE);

/** An ISO 8601 date or date-time. */
const SearchTime = z
  .string()
  .max(40)
  .refine((v) => /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(v) && !Number.isNaN(Date.parse(v)), 'an ISO 8601 date or date-time')
  .openapi({ format: 'date-time' });

export const SearchRequest = z
  .object({
    query: z.string().min(1).openapi({ description: 'at most 8 KiB' }),
    k: z.number().int().min(1).max(MAX_SEARCH_K).optional(),
    subject: SearchSubject.optional().openapi({ description: "search this subject's records" }),
    subjects: z
      .array(SearchSubject)
      .min(1)
      .max(MAX_SEARCH_SUBJECTS)
      .optional()
      .openapi({ description: `search these subjects' records (1–${MAX_SEARCH_SUBJECTS})` }),
    allSubjects: z.boolean().optional().openapi({ description: "true: search every subject's records (admin only; hits have subject null)" }),
    mode: z.enum(SEARCH_MODES).optional().openapi({
      description:
        'how hits are ranked: hybrid (default; cosine and BM25 fused), vector (cosine to the embedding only) or lexical (BM25 over words and word pairs only)',
    }),
    since: SearchTime.optional().openapi({ description: 'keep to memories of this time or later (createdAt, or the metadata field `timeField`)' }),
    until: SearchTime.optional().openapi({ description: 'keep to memories of this time or earlier' }),
    timeField: z.string().min(1).max(64).optional().openapi({
      description: 'a metadata field holding an ISO date (an event date) that since/until apply to instead of createdAt; entries without one are left out',
    }),
  })
  .superRefine((body, ctx) => {
    if (body.timeField !== undefined && body.since === undefined && body.until === undefined) {
      ctx.addIssue({ code: 'custom', path: ['timeField'], message: 'timeField needs since or until' });
    }
    if (body.since !== undefined && body.until !== undefined && Date.parse(body.since) > Date.parse(body.until)) {
      ctx.addIssue({ code: 'custom', path: ['until'], message: 'until is before since' });
    }
    const named = [body.subject !== undefined, body.subjects !== undefined, body.allSubjects === true].filter(Boolean).length;
    if (named === 0) ctx.addIssue({ code: 'custom', message: 'name the subject to search: subject, subjects or allSubjects' });
    if (named > 1) ctx.addIssue({ code: 'custom', message: 'name the subject to search one way only: subject, subjects or allSubjects' });
  })
  .openapi('SearchRequest');

export { SearchHitSchema } from '../../../wire/artifacts.js';

export const ArtifactSummarySchema = ArtifactSchema.pick({
  artifactId: true,
  kind: true,
  version: true,
  generator: true,
  createdAt: true,
  updatedAt: true,
}).openapi('ArtifactSummary');

/** How long a regeneration waits for its destroyed version keys to be durable before answering 202. */
export const REGENERATE_ACK_WAIT_MS = 5000;

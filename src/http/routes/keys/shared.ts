/** What the keys routes share. */
import { z } from '@hono/zod-openapi';
import { SUBJECT_ID_PATTERN, SUBJECT_ID_RULE } from '../../../ids.js';
import { MAX_BULK_SUBJECTS, MAX_VALIDITY_IDS } from '../../../vault/keys.js';
import { KeyIdSchema, ProblemSchema } from '../../schemas.js';

/**
 * The body limit of POST /v1/keys/batch when it is above LETHE_BODY_LIMIT_BYTES:
 * MAX_BULK_SUBJECTS subject ids of the longest kind (200 characters) fit.
 */
export const KEY_BATCH_BODY_LIMIT_BYTES = 3 * 1024 * 1024;

export const KEY_BATCH_PATH = '/v1/keys/batch';

export const KeyBatchRequest = z
  .object({
    subjects: z
      .array(z.string().regex(SUBJECT_ID_PATTERN, SUBJECT_ID_RULE))
      .min(1, 'at least one subject')
      .openapi({ maxItems: MAX_BULK_SUBJECTS, description: `1 to ${MAX_BULK_SUBJECTS.toLocaleString('en-US')} distinct subject ids (more: 413)` }),
  })
  .openapi('KeyBatchRequest', { example: { subjects: ['user:42', 'user:43', 'user:erased-1'] } });

export const KeyBatchItem = z
  .object({
    subject: z.string(),
    status: z.enum(['created', 'existing', 'refused']).openapi({
      description:
        '`created`: a key was made now; `existing`: the subject already had a live, active key (this one); `refused`: no key for it now (`problem` says why)',
    }),
    keyId: z.string().optional().openapi({ description: "the subject's key (created or existing); absent when refused" }),
    createdAt: z.string().optional().openapi({ format: 'date-time' }),
    problem: ProblemSchema.optional().openapi({
      description:
        'why the subject was refused: 410 `subject_erased` (erased, not reinstated), 409 `erasure_in_progress` (an erasure of it is open, or its key is fenced)',
    }),
  })
  .openapi('KeyBatchItem');

export const KeyBatchResponse = z
  .object({
    created: z.number().int(),
    existing: z.number().int(),
    refused: z.number().int(),
    keys: z.array(KeyBatchItem).openapi({ description: 'one per subject, in the order asked' }),
  })
  .openapi('KeyBatch', {
    example: {
      created: 1,
      existing: 1,
      refused: 1,
      keys: [
        { subject: 'user:42', status: 'created', keyId: 'key_3q2-7wEXAMPLE000000000', createdAt: '2026-12-02T10:00:00.000Z' },
        { subject: 'user:43', status: 'existing', keyId: 'key_9f1-2aEXAMPLE000000000', createdAt: '2026-11-30T08:12:44.120Z' },
        {
          subject: 'user:erased-1',
          status: 'refused',
          problem: {
            type: 'urn:lethe:problem:subject_erased',
            title: 'Subject erased',
            status: 410,
            detail: 'the subject was erased: no new key, lease or append is accepted for it until an admin reinstates it',
            code: 'subject_erased',
          },
        },
      ],
    },
  });

export const ValidityRequest = z.object({ keyIds: z.array(KeyIdSchema).min(1).max(MAX_VALIDITY_IDS) }).openapi('KeyValidityRequest');

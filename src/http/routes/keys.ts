/** Keys: PUT /v1/subjects/{subject}/key, POST .../key/lease, DELETE .../key/lease/{leaseId}, POST /v1/keys/batch, POST /v1/keys/validity. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { zeroize } from '../../crypto/index.js';
import { LetheError } from '../../errors.js';
import { SUBJECT_ID_PATTERN, SUBJECT_ID_RULE } from '../../ids.js';
import { encodeDek, MAX_BULK_SUBJECTS, MAX_VALIDITY_IDS } from '../../vault/keys.js';
import type { Services } from '../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../auth.js';
import { problemBody } from '../problem.js';
import { authErrors, idParam, json, jsonBody, KeyIdSchema, ProblemSchema, problemResponse, security, SubjectParam } from '../schemas.js';

/**
 * The body limit of POST /v1/keys/batch when it is above LETHE_BODY_LIMIT_BYTES:
 * MAX_BULK_SUBJECTS subject ids of the longest kind (200 characters) fit.
 */
export const KEY_BATCH_BODY_LIMIT_BYTES = 3 * 1024 * 1024;
export const KEY_BATCH_PATH = '/v1/keys/batch';

const KeyInfo = z
  .object({
    subject: z.string(),
    keyId: z.string(),
    state: z.enum(['active', 'fenced']),
    createdAt: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('SubjectKey');

const LeaseSchema = z
  .object({
    keyId: z.string(),
    dek: z.string().openapi({ description: 'base64url (no padding) of the 32-byte data key' }),
    leaseId: z.string(),
    expiresAt: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('KeyLease');

const KeyBatchRequest = z
  .object({
    subjects: z
      .array(z.string().regex(SUBJECT_ID_PATTERN, SUBJECT_ID_RULE))
      .min(1, 'at least one subject')
      .openapi({ maxItems: MAX_BULK_SUBJECTS, description: `1 to ${MAX_BULK_SUBJECTS.toLocaleString('en-US')} distinct subject ids (more: 413)` }),
  })
  .openapi('KeyBatchRequest', { example: { subjects: ['user:42', 'user:43', 'user:erased-1'] } });

const KeyBatchItem = z
  .object({
    subject: z.string(),
    status: z.enum(['created', 'existing', 'refused']).openapi({
      description: '`created`: a key was made now; `existing`: the subject already had a live, active key (this one); `refused`: no key for it now (`problem` says why)',
    }),
    keyId: z.string().optional().openapi({ description: 'the subject\'s key (created or existing); absent when refused' }),
    createdAt: z.string().optional().openapi({ format: 'date-time' }),
    problem: ProblemSchema.optional().openapi({
      description: 'why the subject was refused: 410 `subject_erased` (erased, not reinstated), 409 `erasure_in_progress` (an erasure of it is open, or its key is fenced)',
    }),
  })
  .openapi('KeyBatchItem');

const KeyBatchResponse = z
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

const ValidityRequest = z
  .object({ keyIds: z.array(KeyIdSchema).min(1).max(MAX_VALIDITY_IDS) })
  .openapi('KeyValidityRequest');

const ValidityResponse = z
  .object({ keys: z.record(z.string(), z.enum(['active', 'destruction_pending', 'destroyed', 'unknown'])) })
  .openapi('KeyValidity');

export function registerKeyRoutes(app: OpenAPIHono<AuthEnv>, services: Services, tokens: TokenStore): void {
  app.openapi(
    createRoute({
      method: 'put',
      path: '/v1/subjects/{subject}/key',
      tags: ['keys'],
      summary: 'Create the subject\'s data key, or return the live one',
      security,
      middleware: [authorize(tokens, 'writer')] as const,
      request: { params: SubjectParam },
      responses: {
        200: json(KeyInfo, 'The subject already had a live key'),
        201: json(KeyInfo, 'A new key was created'),
        409: problemResponse('erasure_in_progress: an erasure of the subject is open; no new key until it ends'),
        410: problemResponse('subject_erased: an erasure destroyed the subject\'s key; no new key until an admin reinstates it (POST /v1/subjects/{subject}/reinstate)'),
        ...authErrors,
      },
    }),
    async (c) => {
      const { subject } = c.req.valid('param');
      const info = await services.keys.ensureKey(subject, c.get('role'));
      return c.json(
        { subject, keyId: info.keyId, state: info.state, createdAt: info.createdAt.toISOString() },
        info.created ? 201 : 200,
      );
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/subjects/{subject}/key/lease',
      tags: ['keys'],
      summary: 'Lease the subject\'s data key (created if needed)',
      security,
      middleware: [authorize(tokens, 'writer')] as const,
      request: { params: SubjectParam },
      responses: {
        200: json(LeaseSchema, 'The lease'),
        409: problemResponse('erasure_in_progress'),
        410: problemResponse('subject_erased: an erasure destroyed the subject\'s key; no lease until an admin reinstates it (POST /v1/subjects/{subject}/reinstate)'),
        ...authErrors,
      },
    }),
    async (c) => {
      const { subject } = c.req.valid('param');
      const lease = await services.keys.lease(subject, c.get('role'));
      let dek: string;
      try {
        dek = encodeDek(lease.dek);
      } finally {
        zeroize(lease.dek);
      }
      c.header('cache-control', 'no-store');
      return c.json({ keyId: lease.keyId, dek, leaseId: lease.leaseId, expiresAt: lease.expiresAt.toISOString() }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'delete',
      path: '/v1/subjects/{subject}/key/lease/{leaseId}',
      tags: ['keys'],
      summary: 'Release a lease: the writer is done with the data key',
      description:
        'The writer has zeroed the DEK it leased and will not use it again. Recorded in the audit log; an erasure of the subject waiting for its ' +
        'leases (drain_leases) waits no longer for this one — and ends as soon as the last outstanding lease is released or expires. Works for a ' +
        'lease of a key destroyed meanwhile (an erasure in progress). Idempotent: releasing again, or releasing an expired lease, answers 204 too. ' +
        'A lease is known for a day after it was handed out.',
      security,
      middleware: [authorize(tokens, 'writer')] as const,
      request: { params: SubjectParam.extend({ leaseId: idParam('lease', 'leaseId') }) },
      responses: {
        204: { description: 'Released (or released already, or expired)' },
        404: problemResponse('not_found: lethe handed out no such lease for this subject (within the last day)'),
        ...authErrors,
      },
    }),
    async (c) => {
      const { subject, leaseId } = c.req.valid('param');
      await services.keys.releaseLease(subject, leaseId, c.get('role'));
      return c.body(null, 204);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: KEY_BATCH_PATH,
      tags: ['keys'],
      summary: 'Create keys for many subjects at once (imports)',
      description:
        `Role: writer (or admin), as PUT /v1/subjects/{subject}/key. Up to ${MAX_BULK_SUBJECTS.toLocaleString('en-US')} distinct subjects per request: a key is created for each ` +
        'subject that has none, and a subject with a live key answers it — idempotent, so a retried import creates nothing twice. A subject refused a key ' +
        '(erased and not reinstated, an erasure of it open, its key fenced) answers its own problem; the others are created regardless. Answers key ids, never ' +
        'data keys (lease them with POST /v1/subjects/{subject}/key/lease). Each created key has its `key.create` audit row, committed with it. ' +
        `The body may be up to ${KEY_BATCH_BODY_LIMIT_BYTES / (1024 * 1024)} MiB (or LETHE_BODY_LIMIT_BYTES, if higher).`,
      security,
      middleware: [authorize(tokens, 'writer')] as const,
      request: { body: jsonBody(KeyBatchRequest) },
      responses: {
        200: json(KeyBatchResponse, 'One result per subject, in the order asked'),
        ...authErrors,
        400: problemResponse('validation_failed: no subjects, a malformed subject id, or a subject named twice (the field is named)'),
        413: problemResponse(`payload_too_large: more than ${MAX_BULK_SUBJECTS.toLocaleString('en-US')} subjects, or a body over the limit`),
      },
    }),
    async (c) => {
      const { subjects } = c.req.valid('json');
      if (subjects.length > MAX_BULK_SUBJECTS) {
        throw new LetheError('payload_too_large', `body.subjects: at most ${MAX_BULK_SUBJECTS} subjects per request (got ${subjects.length}); send the rest in another request`);
      }
      const first = new Map<string, number>();
      for (let i = 0; i < subjects.length; i++) {
        const at = first.get(subjects[i]!);
        if (at !== undefined) throw new LetheError('validation_failed', `body.subjects.${i}: the same subject as body.subjects.${at} (name each subject once)`);
        first.set(subjects[i]!, i);
      }
      const results = await services.keys.ensureKeys(subjects, c.get('role'));
      const counts = { created: 0, existing: 0, refused: 0 };
      const keys = results.map((r) => {
        counts[r.status]++;
        return r.status === 'refused'
          ? { subject: r.subject, status: r.status, problem: problemBody(r.refusal.code, r.refusal.message) }
          : { subject: r.subject, status: r.status, keyId: r.keyId, createdAt: r.createdAt.toISOString() };
      });
      return c.json({ ...counts, keys }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/keys/validity',
      tags: ['keys'],
      summary: 'Which of these keys are still valid (for backup jobs)',
      security,
      middleware: [authorize(tokens, 'backup')] as const,
      request: { body: jsonBody(ValidityRequest) },
      responses: { 200: json(ValidityResponse, 'State of each key id'), ...authErrors },
    }),
    async (c) => {
      const { keyIds } = c.req.valid('json');
      return c.json({ keys: await services.keys.validity(keyIds) }, 200);
    },
  );
}

/** POST /v1/keys/batch (createSubjectKeys): create keys for many subjects at once (imports). */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { LetheError } from '../../../errors.js';
import { MAX_BULK_SUBJECTS } from '../../../vault/keys.js';
import type { Services } from '../../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { problemBody } from '../../problem.js';
import { authErrors, json, jsonBody, problemResponse, security } from '../../schemas.js';
import { KEY_BATCH_BODY_LIMIT_BYTES, KEY_BATCH_PATH, KeyBatchRequest, KeyBatchResponse } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly keys: Pick<Services['keys'], 'ensureKeys'>;
}

export const route = createRoute({
  operationId: 'createSubjectKeys',
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
  request: { body: jsonBody(KeyBatchRequest) },
  responses: {
    200: json(KeyBatchResponse, 'One result per subject, in the order asked'),
    ...authErrors,
    400: problemResponse('validation_failed: no subjects, a malformed subject id, or a subject named twice (the field is named)'),
    413: problemResponse(`payload_too_large: more than ${MAX_BULK_SUBJECTS.toLocaleString('en-US')} subjects, or a body over the limit`),
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer')] as const }, async (c) => {
    const { subjects } = c.req.valid('json');
    if (subjects.length > MAX_BULK_SUBJECTS) {
      throw new LetheError(
        'payload_too_large',
        `body.subjects: at most ${MAX_BULK_SUBJECTS} subjects per request (got ${subjects.length}); send the rest in another request`,
      );
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
  });
}

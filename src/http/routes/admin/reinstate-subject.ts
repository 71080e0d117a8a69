/** POST /v1/subjects/{subject}/reinstate (reinstateSubject): reinstate an erased subject: keys, leases and appends are accepted for it again. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { Services } from '../../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, jsonBody, problemResponse, security, SubjectParam } from '../../schemas.js';
import { ReinstateRequest, ReinstateResponse } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly erasures: Pick<Services['erasures'], 'reinstate'>;
}

export const route = createRoute({
  operationId: 'reinstateSubject',
  method: 'post',
  path: '/v1/subjects/{subject}/reinstate',
  tags: ['admin'],
  summary: 'Reinstate an erased subject: keys, leases and appends are accepted for it again',
  description:
    "A subject-scope erasure tombstones its subject: from its key's destruction on, creating a key, leasing, appending, reserving and " +
    'registering entries for it answer 410 `subject_erased`, so a late job cannot re-learn the person. This lifts the tombstone (the person ' +
    'came back, or the erasure was a mistake): the next key is a new one — nothing erased comes back. Recorded in the audit log ' +
    "(`subject.reinstate`: the subject's keyed hash, the erasure and the reason; the reason is kept in the clear, so it must not quote the subject).",
  security,
  request: { params: SubjectParam, body: jsonBody(ReinstateRequest) },
  responses: {
    200: json(ReinstateResponse, 'The tombstone is lifted, and the reinstatement recorded in the audit log'),
    409: problemResponse('conflict: the subject is not erased (no tombstone); erasure_in_progress: an erasure of the subject is open'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'admin')] as const }, async (c) => {
    const { subject } = c.req.valid('param');
    const { reason } = c.req.valid('json');
    await services.erasures.reinstate(subject, reason, c.get('role'));
    return c.json({ subject, reinstated: true as const }, 200);
  });
}

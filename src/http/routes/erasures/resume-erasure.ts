/** POST /v1/erasures/{erasureId}/resume (resumeErasure): take a failed erasure up again from the step that failed. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, problemResponse, security } from '../../schemas.js';
import type { Services } from '../../services.js';
import { documentedErasure, ErasureIdParam, ErasureSchema } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly erasures: Pick<Services['erasures'], 'resume'>;
}

export const route = createRoute({
  operationId: 'resumeErasure',
  method: 'post',
  path: '/v1/erasures/{erasureId}/resume',
  tags: ['erasure'],
  summary: 'Take a failed erasure up again from the step that failed',
  description:
    'A failed erasure can leave its subject fenced (no lease, no append, no new key) and its key undestroyed: its view says what it left (`left`). ' +
    'Once the cause is fixed, resume it: it goes back to running at the step that failed, with its attempts reset, and a transition row records who resumed it. ' +
    'Transient failures (an unreachable object store or database, a step past its deadline) never fail an erasure: they are retried with capped backoff, shown in `retry`.',
  security,
  request: { params: ErasureIdParam },
  responses: {
    202: json(ErasureSchema, 'Accepted: the erasure runs again in the background (its view)'),
    404: problemResponse('not_found: no such erasure'),
    409: problemResponse('conflict: the erasure is not failed, or a newer erasure of the same subject exists'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'eraser')] as const }, async (c) =>
    c.json(documentedErasure(await services.erasures.resume(c.req.valid('param').erasureId, c.get('role'))), 202),
  );
}

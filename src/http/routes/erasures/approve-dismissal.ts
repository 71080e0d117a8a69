/** POST /v1/erasures/{erasureId}/dismissals/{dismissalId}/approve (approveDismissal): approve a proposed dismissal (a second principal): the probe runs again without its records. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { json, problemResponse, security } from '../../schemas.js';
import type { Services } from '../../services.js';
import { actorOf, DismissalParams, DismissalAccepted, dismissalAnswers } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly erasures: Pick<Services['erasures'], 'approveDismissal'>;
  readonly principals: Pick<Services['principals'], 'name'>;
}

export const route = createRoute({
  operationId: 'approveDismissal',
  method: 'post',
  path: '/v1/erasures/{erasureId}/dismissals/{dismissalId}/approve',
  tags: ['erasure'],
  summary: 'Approve a proposed dismissal (a second principal): the probe runs again without its records',
  description:
    'The approver role or admin, with a token other than the one that proposed the dismissal and the one that requested the erasure. ' +
    'Checked again against the last probe (still named, not a near copy); audited as erasure.dismissal.approve. The erasure re-opens at the probe and is certified again; ' +
    'a completion on a ruling says so in its view (`readableByRuling`), its certificate, its report and a `dismissed-content` residual.',
  security,
  request: { params: DismissalParams },
  responses: {
    ...dismissalAnswers('the dismissal is not proposed, or its records are no longer named'),
    202: json(DismissalAccepted, 'Accepted: the probe runs again in the background'),
    422: problemResponse('near_copy: a record became a near copy of the erased content; it can only be redacted'),
    403: problemResponse('forbidden: the role may not approve, or the caller proposed the dismissal or requested the erasure'),
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  const actor = actorOf(services, tokens);
  app.openapi({ ...route, middleware: [authorize(tokens, 'approver')] as const }, async (c) => {
    const { erasureId, dismissalId } = c.req.valid('param');
    return c.json(await services.erasures.approveDismissal(erasureId, dismissalId, actor(c)), 202);
  });
}

/** POST /v1/erasures/{erasureId}/dismissals/{dismissalId}/revoke (revokeDismissal): reject a proposed dismissal, or revoke an approved ruling (the probe runs again and counts its records). */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { DismissalRevocationSchema } from '../../../erasure/request.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { json, security } from '../../schemas.js';
import type { Services } from '../../services.js';
import { actorOf, DismissalParams, DismissalAccepted, dismissalAnswers } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly erasures: Pick<Services['erasures'], 'revokeDismissal'>;
  readonly principals: Pick<Services['principals'], 'name'>;
}

export const route = createRoute({
  operationId: 'revokeDismissal',
  method: 'post',
  path: '/v1/erasures/{erasureId}/dismissals/{dismissalId}/revoke',
  tags: ['erasure'],
  summary: 'Reject a proposed dismissal, or revoke an approved ruling (the probe runs again and counts its records)',
  description:
    'Either way audited as erasure.dismissal.revoke, with the optional reason. A proposal becomes `rejected` and nothing re-runs (200); ' +
    'an approved ruling becomes `revoked` and the erasure re-opens at the probe on its kept fingerprints (202).',
  security,
  request: {
    params: DismissalParams,
    body: { required: false, content: { 'application/json': { schema: DismissalRevocationSchema.meta({ id: 'DismissalRevocation' }) } } },
  },
  responses: {
    ...dismissalAnswers('the dismissal is already rejected or revoked'),
    200: json(DismissalAccepted, "The proposal is rejected; the erasure's status is unchanged"),
    202: json(DismissalAccepted, 'The ruling is revoked: the probe runs again in the background'),
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  const actor = actorOf(services, tokens);
  app.openapi({ ...route, middleware: [authorize(tokens, 'eraser', 'approver')] as const }, async (c) => {
    const { erasureId, dismissalId } = c.req.valid('param');
    const body = (c.req.valid('json') ?? {}) as { reason?: string };
    const result = await services.erasures.revokeDismissal(erasureId, dismissalId, actor(c), body);
    return c.json(result, result.status === 'running' ? 202 : 200);
  });
}

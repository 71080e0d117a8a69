/** POST /v1/erasures/{erasureId}/dismissals (proposeDismissal): propose that records the probe named do not carry the erased subject's content (a ruling two people own). */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { DismissalRequestSchema } from '../../../erasure/request.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, jsonBody, problemResponse, security } from '../../schemas.js';
import type { Services } from '../../services.js';
import { actorOf, ErasureIdParam, DismissalAccepted } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly erasures: Pick<Services['erasures'], 'dismiss'>;
  readonly principals: Pick<Services['principals'], 'name'>;
}

export const route = createRoute({
  operationId: 'proposeDismissal',
  method: 'post',
  path: '/v1/erasures/{erasureId}/dismissals',
  tags: ['erasure'],
  summary: "Propose that records the probe named do not carry the erased subject's content (a ruling two people own)",
  description:
    'A stated human judgement, proposed: each ruling (record id, role, principal, time, reason) is kept as `proposed`, audited, and changes nothing — ' +
    "the erasure stays as it is until a second principal with another token (approver or admin; never the proposer, nor the erasure's requester) approves it " +
    '(POST …/dismissals/{dismissalId}/approve). A near copy (a verbatim run of the erased content, or a score of 0.9 or more) cannot be dismissed: order its redaction.',
  security,
  request: { params: ErasureIdParam, body: jsonBody(DismissalRequestSchema.meta({ id: 'DismissalRequest' })) },
  responses: {
    201: json(DismissalAccepted, "The proposal; the erasure's status is unchanged"),
    404: problemResponse('not_found'),
    409: problemResponse(
      "conflict: the erasure is running or failed, its fingerprints are gone, a record was not named by its probe, is the erased subject's own, or already has a proposal",
    ),
    422: problemResponse('near_copy: a record is a near copy of the erased content; it can only be redacted'),
    ...authErrors,
    400: problemResponse('validation_failed: malformed body'),
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  const actor = actorOf(services, tokens);
  app.openapi({ ...route, middleware: [authorize(tokens, 'eraser')] as const }, async (c) => {
    const { erasureId } = c.req.valid('param');
    const result = await services.erasures.dismiss(erasureId, c.req.valid('json'), actor(c));
    return c.json(result, 201);
  });
}

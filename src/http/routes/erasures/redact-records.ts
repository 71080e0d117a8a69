/** POST /v1/erasures/{erasureId}/redactions (redactRecords): redact the erased subject's content from other subjects' records, then probe again. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { RedactionRequestSchema } from '../../../erasure/request.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, ErasureLocationHeaders, json, jsonBody, problemResponse, security } from '../../schemas.js';
import type { Services } from '../../services.js';
import { actorOf, ErasureIdParam, Accepted } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly erasures: Pick<Services['erasures'], 'redact'>;
  readonly principals: Pick<Services['principals'], 'name'>;
}

export const route = createRoute({
  operationId: 'redactRecords',
  method: 'post',
  path: '/v1/erasures/{erasureId}/redactions',
  tags: ['erasure'],
  summary: "Redact the erased subject's content from other subjects' records, then probe again",
  description:
    "Re-keys each named entry's subject log without it (the old key is destroyed), regenerates what was derived from it, and reruns propagate, probe and certify. " +
    "Only records the erasure's last probe named (a match, or a dismissed match) are taken: anything else is 422 `not_a_match`, unless an admin gives `override.reason` (audited as erasure.redaction.override).",
  security,
  request: { params: ErasureIdParam, body: jsonBody(RedactionRequestSchema.meta({ id: 'RedactionRequest' })) },
  responses: {
    202: { ...json(Accepted, 'Accepted: the redaction runs in the background'), headers: ErasureLocationHeaders },
    404: problemResponse('not_found'),
    409: problemResponse('conflict: the erasure is still running, failed, or its fingerprints are gone'),
    422: problemResponse("not_a_match: a record the erasure's last probe did not name (an admin may override with a reason)"),
    ...authErrors,
    400: problemResponse("validation_failed: malformed body, or an id that is not another subject's readable entry"),
    403: problemResponse("forbidden: the token's role may not call this endpoint, or an override by a role other than admin"),
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  const actor = actorOf(services, tokens);
  app.openapi({ ...route, middleware: [authorize(tokens, 'eraser')] as const }, async (c) => {
    const { erasureId } = c.req.valid('param');
    const body = c.req.valid('json');
    const result = await services.erasures.redact(erasureId, body.ids, actor(c), body.override);
    c.header('Location', `/v1/erasures/${erasureId}`);
    return c.json(result, 202);
  });
}

/** GET /v1/erasures/{erasureId} (getErasure): status, class, steps, residuals, probe and certificate of an erasure. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, problemResponse, security } from '../../schemas.js';
import type { Services } from '../../services.js';
import { documentedErasure, ErasureIdParam, ErasureSchema } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly erasures: Pick<Services['erasures'], 'get'>;
}

export const route = createRoute({
  operationId: 'getErasure',
  method: 'get',
  path: '/v1/erasures/{erasureId}',
  tags: ['erasure'],
  summary: 'Status, class, steps, residuals, probe and certificate of an erasure',
  description:
    'Also readable by the approver role, which rules on dismissals: `dismissals` lists every proposal with its status; `readableByRuling` the records an approved ruling keeps readable.',
  security,
  request: { params: ErasureIdParam },
  responses: { 200: json(ErasureSchema, 'The erasure'), 404: problemResponse('not_found'), ...authErrors },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'eraser', 'approver')] as const }, async (c) =>
    c.json(documentedErasure(await services.erasures.get(c.req.valid('param').erasureId)), 200),
  );
}

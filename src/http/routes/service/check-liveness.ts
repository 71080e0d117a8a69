/** GET /healthz (checkLiveness): the process answers; public, no token. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { AuthEnv, TokenStore } from '../../auth.js';
import { json } from '../../schemas.js';

/** The services this route calls: none. */
export type Uses = {};

export const route = createRoute({
  operationId: 'checkLiveness',
  method: 'get',
  path: '/healthz',
  security: [], // public: no token
  tags: ['service'],
  summary: 'Liveness',
  responses: { 200: json(z.object({ status: z.literal('ok') }), 'The process answers') },
});

export function register(app: OpenAPIHono<AuthEnv>, _services: Uses, _tokens: TokenStore): void {
  app.openapi(route, (c) => c.json({ status: 'ok' as const }, 200));
}

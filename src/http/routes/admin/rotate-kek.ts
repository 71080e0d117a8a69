/** POST /v1/admin/kek/rotate (rotateKek): new KEK epoch; re-wrap live DEKs; retire unreferenced epochs. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { Services } from '../../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, security } from '../../schemas.js';
import { RotateResponse } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly epochs: Pick<Services['epochs'], 'rotate'>;
}

export const route = createRoute({
  operationId: 'rotateKek',
  method: 'post',
  path: '/v1/admin/kek/rotate',
  tags: ['admin'],
  summary: 'New KEK epoch; re-wrap live DEKs; retire unreferenced epochs',
  security,
  responses: { 200: json(RotateResponse, 'Rotation finished'), ...authErrors },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'admin')] as const }, async (c) => c.json(await services.epochs.rotate(c.get('role')), 200));
}

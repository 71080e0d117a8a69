/** GET /v1/admin/kek (listKekEpochs): KEK epochs. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { Services } from '../../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, security } from '../../schemas.js';
import { EpochSchema } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly epochs: Pick<Services['epochs'], 'list'>;
}

export const route = createRoute({
  operationId: 'listKekEpochs',
  method: 'get',
  path: '/v1/admin/kek',
  tags: ['admin'],
  summary: 'KEK epochs',
  security,
  responses: { 200: json(z.object({ epochs: z.array(EpochSchema) }), 'Every epoch, oldest first'), ...authErrors },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'admin')] as const }, async (c) => {
    const list = await services.epochs.list();
    return c.json(
      {
        epochs: list.map((e) => ({
          epoch: e.epoch,
          state: e.state,
          createdAt: e.createdAt.toISOString(),
          ...(e.activatedAt ? { activatedAt: e.activatedAt.toISOString() } : {}),
          ...(e.retiredAt ? { retiredAt: e.retiredAt.toISOString() } : {}),
          keys: e.keys,
        })),
      },
      200,
    );
  });
}

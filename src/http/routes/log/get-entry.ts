/** GET /v1/entries/{entryId} (getEntry): one entry. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { Services } from '../../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, idParam, json, problemResponse, security } from '../../schemas.js';
import { EntrySchema, shape } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly log: Pick<Services['log'], 'get'>;
  readonly fences: Pick<Services['fences'], 'issue'>;
}

export const route = createRoute({
  operationId: 'getEntry',
  method: 'get',
  path: '/v1/entries/{entryId}',
  tags: ['log'],
  summary: 'One entry',
  security,
  request: { params: z.object({ entryId: idParam('entry', 'entryId') }) },
  responses: {
    200: json(EntrySchema.extend({ readFence: z.string() }), 'The entry, and a read fence covering it'),
    404: problemResponse('not_found'),
    410: problemResponse('key_destroyed'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer')] as const }, async (c) => {
    const entry = await services.log.get(c.req.valid('param').entryId);
    c.header('cache-control', 'no-store');
    return c.json({ ...shape(entry), readFence: services.fences.issue([entry.keyId]) }, 200);
  });
}

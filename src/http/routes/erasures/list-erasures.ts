/** GET /v1/erasures (listErasures): the erasures, oldest first, a page at a time (each as GET /v1/erasures/{erasureId} answers it). */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { decodeCursor, listErrors, NextCursor, pageOf } from '../../cursor.js';
import { json, security } from '../../schemas.js';
import type { Services } from '../../services.js';
import { documentedErasure, ErasureSchema, ErasureListQuery } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly erasures: Pick<Services['erasures'], 'list'>;
}

export const route = createRoute({
  operationId: 'listErasures',
  method: 'get',
  path: '/v1/erasures',
  tags: ['erasure'],
  summary: 'The erasures, oldest first, a page at a time (each as GET /v1/erasures/{erasureId} answers it)',
  description:
    "Ordered by (createdAt, erasureId). With `subject`, only that subject's erasures (looked up by its keyed hash; the id is not kept). " +
    '`limit` per page (default 100); `nextCursor` (null on the last page) is the `cursor` of the next.',
  security,
  request: { query: ErasureListQuery },
  responses: {
    200: json(z.object({ erasures: z.array(ErasureSchema), nextCursor: NextCursor }), 'A page of erasures'),
    ...listErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'eraser', 'approver')] as const }, async (c) => {
    const { limit, cursor, subject } = c.req.valid('query');
    const after = decodeCursor('erasures', cursor);
    const page = pageOf('erasures', await services.erasures.list({ after, limit: limit + 1, subject }), limit, (e) => e.position);
    return c.json({ erasures: page.items.map((e) => documentedErasure(e.view)), nextCursor: page.nextCursor }, 200);
  });
}

/** GET /v1/artifacts (listArtifacts): addition: the live artifacts, oldest first, a page at a time. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { decodeCursor, listErrors, NextCursor, PageQuery, pageOf } from '../../cursor.js';
import type { Services } from '../../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { json, security } from '../../schemas.js';
import { ArtifactSummarySchema } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly artifacts: Pick<Services['artifacts'], 'list'>;
}

export const route = createRoute({
  operationId: 'listArtifacts',
  method: 'get',
  path: '/v1/artifacts',
  tags: ['artifacts'],
  summary: 'Addition: the live artifacts, oldest first, a page at a time',
  description:
    'What each artifact is (kind, version, generator, dates), never its text: GET /v1/artifacts/{artifactId} reads that, with its read fence. ' +
    'Ordered by (createdAt, artifactId); erased artifacts are left out. `limit` per page (default 100); `nextCursor` (null on the last page) is ' +
    'the `cursor` of the next.',
  security,
  request: { query: PageQuery },
  responses: {
    200: json(z.object({ artifacts: z.array(ArtifactSummarySchema), nextCursor: NextCursor }), 'A page of artifacts'),
    ...listErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer', 'eraser')] as const }, async (c) => {
    const { limit, cursor } = c.req.valid('query');
    const after = decodeCursor('artifacts', cursor);
    const page = pageOf('artifacts', await services.artifacts.list({ after, limit: limit + 1 }), limit, (a) => a.position);
    const listed = page.items.map(({ position: _, ...a }) => ({ ...a, createdAt: a.createdAt.toISOString(), updatedAt: a.updatedAt.toISOString() }));
    return c.json({ artifacts: listed, nextCursor: page.nextCursor }, 200);
  });
}

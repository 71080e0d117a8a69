/** GET /v1/backups (listBackups): the backups taken, oldest first, a page at a time. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { decodeCursor, listErrors, NextCursor, PageQuery, pageOf } from '../../cursor.js';
import type { Services } from '../../services.js';
import { BackupSchema } from '../../../wire/backups.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { json, security } from '../../schemas.js';

/** The services this route calls. */
export interface Uses {
  readonly backups: Pick<Services['backups'], 'list'>;
}

export const route = createRoute({
  operationId: 'listBackups',
  method: 'get',
  path: '/v1/backups',
  tags: ['backups'],
  summary: 'The backups taken, oldest first, a page at a time',
  description: 'Ordered by (createdAt, backupId). `limit` per page (default 100); `nextCursor` (null on the last page) is the `cursor` of the next.',
  security,
  request: { query: PageQuery },
  responses: {
    200: json(
      z.object({
        backups: z.array(BackupSchema),
        nextCursor: NextCursor,
      }),
      'A page of backups',
    ),
    ...listErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'backup')] as const }, async (c) => {
    const { limit, cursor } = c.req.valid('query');
    const after = decodeCursor('backups', cursor);
    const page = pageOf('backups', await services.backups.list({ after, limit: limit + 1 }), limit, (b) => b.position);
    const backups = page.items.map(({ position: _, ...b }) => ({ ...b, createdAt: b.createdAt.toISOString() }));
    return c.json({ backups, nextCursor: page.nextCursor }, 200);
  });
}

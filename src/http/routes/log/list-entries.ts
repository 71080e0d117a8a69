/** GET /v1/subjects/{subject}/entries (listEntries): the subject's entries in append order, a page at a time. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { decodeCursor, listErrors, NextCursor, PageQuery, pageOf } from '../../cursor.js';
import type { Services } from '../../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { json, problemResponse, security, SubjectParam } from '../../schemas.js';
import { EntrySchema, shape } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly log: Pick<Services['log'], 'read'>;
  readonly fences: Pick<Services['fences'], 'issue'>;
}

export const route = createRoute({
  operationId: 'listEntries',
  method: 'get',
  path: '/v1/subjects/{subject}/entries',
  tags: ['log'],
  summary: "The subject's entries in append order, a page at a time",
  description:
    'Ordered by seq. `limit` entries per page (default 100); `nextCursor` (null on the last page) is the `cursor` of the next. Walking the pages ' +
    'while entries are appended never answers an entry twice and never skips one that existed when the walk began (entries appended meanwhile may ' +
    "or may not appear); a re-key keeps every entry's seq, so a walk goes on across one. Forgotten entries are never listed.",
  security,
  request: { params: SubjectParam, query: PageQuery },
  responses: {
    200: json(
      z.object({ entries: z.array(EntrySchema), readFence: z.string(), nextCursor: NextCursor }),
      "A page of the entries under the subject's live key, and a read fence covering them",
    ),
    404: problemResponse('not_found: a subject lethe has never seen'),
    410: problemResponse('subject_erased'),
    ...listErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer')] as const }, async (c) => {
    const { subject } = c.req.valid('param');
    const { limit, cursor } = c.req.valid('query');
    const after = decodeCursor('entries', cursor);
    const { entries, keyIds } = await services.log.read(subject, { afterSeq: after?.seq, limit: limit + 1 });
    const page = pageOf('entries', entries, limit, (e) => ({ seq: e.seq }));
    c.header('cache-control', 'no-store');
    return c.json({ entries: page.items.map(shape), readFence: services.fences.issue(keyIds), nextCursor: page.nextCursor }, 200);
  });
}

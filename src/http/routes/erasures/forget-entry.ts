/** DELETE /v1/entries/{entryId} (forgetEntry): forget one memory: a records-scope erasure of the entry. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, ErasureLocationHeaders, idParam, json, problemResponse, security } from '../../schemas.js';
import type { Services } from '../../services.js';
import { actorOf, Accepted } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly erasures: Pick<Services['erasures'], 'forgetEntry'>;
  readonly principals: Pick<Services['principals'], 'name'>;
}

export const route = createRoute({
  operationId: 'forgetEntry',
  method: 'delete',
  path: '/v1/entries/{entryId}',
  tags: ['erasure'],
  summary: 'Forget one memory: a records-scope erasure of the entry',
  description:
    'The entry answers 410 `entry_forgotten` from this answer on and leaves lists and search; the erasure re-keys its subject without it ' +
    '(the subject keeps writing), regenerates every artifact that cites it, and certifies. Idempotent: forgetting it again answers the same erasure (200). ' +
    'A writer may forget only the entries its own token wrote.',
  security,
  request: { params: z.object({ entryId: idParam('entry', 'entryId') }) },
  responses: {
    202: { ...json(Accepted, 'Accepted: the erasure runs in the background'), headers: ErasureLocationHeaders },
    200: { ...json(Accepted, 'The entry is already being forgotten (or was): that erasure'), headers: ErasureLocationHeaders },
    404: problemResponse('not_found: no such entry'),
    409: problemResponse('erasure_in_progress: the whole subject is being erased'),
    410: problemResponse('key_destroyed: the entry is already erased'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  const actor = actorOf(services, tokens);
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer', 'eraser')] as const }, async (c) => {
    const result = await services.erasures.forgetEntry(c.req.valid('param').entryId, actor(c));
    c.header('Location', `/v1/erasures/${result.erasureId}`);
    return c.json({ erasureId: result.erasureId, status: result.status }, result.created ? 202 : 200);
  });
}

/** POST /v1/search (searchMemory): nearest entries and artifacts of the named subjects to a query, with their text and a read fence. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { LetheError } from '../../../errors.js';
import type { Services } from '../../services.js';
import { SearchResultSchema } from '../../../wire/artifacts.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, jsonBody, problemResponse, security } from '../../schemas.js';
import { SearchRequest } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly replica?: Pick<NonNullable<Services['replica']>, 'fresh'> | undefined;
  readonly search: Pick<Services['search'], 'search'>;
}

export const route = createRoute({
  operationId: 'searchMemory',
  method: 'post',
  path: '/v1/search',
  tags: ['search'],
  summary: 'Nearest entries and artifacts of the named subjects to a query, with their text and a read fence',
  description:
    'Name whose records to search: `subject`, `subjects` (1–100) or `allSubjects: true` (admin only), exactly one. ' +
    "A scoped search ranks only the named subjects' entries and the artifacts every subject of whose provenance closure is named " +
    "(a summary shared with someone else is never in one person's scope). A subject lethe has never seen has no hits.",
  security,
  request: { body: jsonBody(SearchRequest) },
  responses: {
    200: json(SearchResultSchema, 'Best first'),
    503: problemResponse('unavailable: this replica could not confirm it applied every key destruction (nothing was answered from a stale index)'),
    ...authErrors,
    403: problemResponse("forbidden: the token's role may not call this, or allSubjects without the admin role"),
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer')] as const }, async (c) => {
    const { query, k, subject, subjects, allSubjects, mode, since, until, timeField } = c.req.valid('json');
    if (allSubjects === true && c.get('role') !== 'admin') throw new LetheError('forbidden', 'allSubjects needs the admin role: name the subject to search');
    // a replica that slept through a destruction catches up before it answers from memory
    await services.replica?.fresh();
    const scope = allSubjects === true ? { allSubjects: true as const } : { subjects: subject !== undefined ? [subject] : subjects! };
    const { hits, readFence, shards } = await services.search.search(query, k ?? 10, scope, {
      mode,
      time:
        since === undefined && until === undefined
          ? undefined
          : { since: since === undefined ? undefined : new Date(since), until: until === undefined ? undefined : new Date(until), field: timeField },
    });
    c.header('cache-control', 'no-store');
    const sharded = shards ? { partial: shards.missing.length > 0, shards } : {};
    return c.json({ hits: hits.map((h) => ({ ...h, createdAt: h.createdAt.toISOString() })), readFence, ...sharded }, 200);
  });
}

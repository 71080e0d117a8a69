/** POST /v1/segments (registerSegment): index the frames of a segment a writer sealed and uploaded itself. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { Services } from '../../services.js';
import { SegmentRegistrationResultSchema, SegmentRegistrationSchema } from '../../../wire/log.js';
import { actorOf } from '../../actor.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, jsonBody, problemResponse, security } from '../../schemas.js';

/** The services this route calls. */
export interface Uses {
  readonly log: Pick<Services['log'], 'register'>;
  readonly principals: Pick<Services['principals'], 'name'>;
}

export const route = createRoute({
  operationId: 'registerSegment',
  method: 'post',
  path: '/v1/segments',
  tags: ['log'],
  summary: 'Index the frames of a segment a writer sealed and uploaded itself',
  description:
    'An append made by a writer is acknowledged only once this answers registered for it. Idempotent per entry id: registering again an entry ' +
    'already indexed at the same place (segment, offset, length, key, seq) answers `registered` again; an entry id indexed at another place is ' +
    '409 `conflict` and nothing of the request is registered. The entries are readable at once and searchable once the indexer has embedded ' +
    'them (off this request: `lethe_search_lag_seconds` in /metrics, `replica.searchLagSeconds` in /readyz). The indexer opens each frame: one ' +
    'that does not open under the key it names, or holds a payload the `Entry` schema refuses (kind 1–64 characters or null, metadata a JSON ' +
    'object or null), is refused — never served (`GET /v1/entries/{id}` answers 404) nor searchable — and counted in `lethe_log_entries_refused_total`. ' +
    'Per entry: `key_destroyed` when its key is gone, `subject_erased` when it is gone because an erasure erased the subject (nothing is ' +
    'accepted for it until an admin reinstates it), `erasure_in_progress` while an erasure holds the key fenced.',
  security,
  request: { body: jsonBody(SegmentRegistrationSchema) },
  responses: {
    201: json(SegmentRegistrationResultSchema, 'Per-entry outcome (registered: indexed and queued for the search indexer)'),
    409: problemResponse('conflict: an entry id is already indexed at another place; nothing was registered'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  const actor = actorOf(services, tokens);
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer')] as const }, async (c) => {
    const { segment, entries } = c.req.valid('json');
    return c.json({ results: await services.log.register(segment, entries, actor(c).principal) }, 201);
  });
}

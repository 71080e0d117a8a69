/** GET /v1/items/namespaces (listItemNamespaces): one live entry of each store namespace in use, of one subject or of all. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { SUBJECT_ID_PATTERN, SUBJECT_ID_RULE } from '../../../ids.js';
import type { Services } from '../../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, problemResponse, security } from '../../schemas.js';
import { EntrySchema, shape } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly log: Pick<Services['log'], 'namespaceEntries'>;
}

const Query = z.object({
  subject: z
    .string()
    .regex(SUBJECT_ID_PATTERN, SUBJECT_ID_RULE)
    .optional()
    .openapi({ param: { name: 'subject', in: 'query' }, example: 'user:42' }),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(100)
    .openapi({ param: { name: 'limit', in: 'query' } }),
  offset: z.coerce
    .number()
    .int()
    .min(0)
    .max(1_000_000)
    .default(0)
    .openapi({ param: { name: 'offset', in: 'query' } }),
});

export const route = createRoute({
  operationId: 'listItemNamespaces',
  method: 'get',
  path: '/v1/items/namespaces',
  tags: ['log'],
  summary: 'One live entry of each store namespace in use (its labels are in the entry), of one subject or of every subject',
  description:
    'For each namespace entries were appended with (`item.namespace`) that still has a live entry under a live key: its newest such entry. lethe ' +
    'indexes namespaces as keyed hashes only; the labels are read back from the entry, where the caller put them (the LangGraph store keeps them in ' +
    "the entry's metadata). An erased subject's namespaces are gone with its keys. `offset` and `limit` page through them in a stable order.",
  security,
  request: { query: Query },
  responses: {
    200: json(z.object({ entries: z.array(EntrySchema) }), 'One entry per namespace'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer')] as const }, async (c) => {
    const entries = await services.log.namespaceEntries(c.req.valid('query'));
    c.header('cache-control', 'no-store');
    return c.json({ entries: entries.map(shape) }, 200);
  });
}

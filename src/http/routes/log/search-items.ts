/** POST /v1/subjects/{subject}/items/search (searchItems): a subject's store items, ranked by a query or newest first, filtered and paged on the service. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { EntryMetadataSchema, NamespaceSchema } from '../../../log/payload.js';
import { MAX_QUERY_BYTES } from '../../../search/service.js';
import type { Services } from '../../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, jsonBody, security, SubjectParam } from '../../schemas.js';
import { EntrySchema, shape } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly search: Pick<Services['search'], 'searchItems'>;
}

const SearchItemsRequest = z
  .object({
    query: z.string().max(MAX_QUERY_BYTES, `at most ${MAX_QUERY_BYTES} characters`).optional(),
    namespaces: z.array(NamespaceSchema).min(1, 'name at least one namespace, or leave it out').max(64, 'at most 64').optional(),
    metadata: EntryMetadataSchema.optional(),
    limit: z.number().int().min(1).max(100).default(10),
    offset: z.number().int().min(0).max(10_000).default(0),
  })
  .strict()
  .openapi('SearchItemsRequest');

export const route = createRoute({
  operationId: 'searchItems',
  method: 'post',
  path: '/v1/subjects/{subject}/items/search',
  tags: ['log'],
  summary: "A subject's store items: ranked by a query, or newest first; filtered and paged on the service",
  description:
    'The live items of the subject (entries appended with an `item`), one answer per item with its matching entries, newest first: ' +
    "with `query`, ranked by the subject's scoped search (an item at its best entry's score); without, by the newest entry. " +
    '`namespaces` keeps the items of those namespaces; `metadata` the entries whose metadata holds those fields with those values (objects field by field). ' +
    'Then `offset` and `limit` (items). With `metadata`, at most 5,000 items are read a request: a rare match in a larger subject may leave the page short.',
  security,
  request: { params: SubjectParam, body: jsonBody(SearchItemsRequest) },
  responses: {
    200: json(
      z.object({
        items: z.array(z.object({ entries: z.array(EntrySchema), score: z.number().optional() })),
        readFence: z.string(),
      }),
      'The page of items, and a read fence covering their entries',
    ),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer')] as const }, async (c) => {
    const { subject } = c.req.valid('param');
    const { items, readFence } = await services.search.searchItems(subject, c.req.valid('json'));
    c.header('cache-control', 'no-store');
    return c.json({ items: items.map((i) => ({ entries: i.entries.map(shape), ...(i.score !== undefined ? { score: i.score } : {}) })), readFence }, 200);
  });
}

/** POST /v1/subjects/{subject}/items/lookup (lookupItem): a store item's live entries, one index lookup whatever the subject holds. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { StoreItemSchema } from '../../../log/payload.js';
import type { Services } from '../../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, jsonBody, problemResponse, security, SubjectParam } from '../../schemas.js';
import { EntrySchema, shape } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly log: Pick<Services['log'], 'lookupItem'>;
  readonly fences: Pick<Services['fences'], 'issue'>;
}

export const route = createRoute({
  operationId: 'lookupItem',
  method: 'post',
  path: '/v1/subjects/{subject}/items/lookup',
  tags: ['log'],
  summary: "A store item's live entries (the entries appended with this `item`), newest first",
  description:
    'The entries appended or superseded with `item: { namespace, key }` that are live (not forgotten), newest first: one lookup by the keyed hash of ' +
    'the namespace and key, whatever the subject holds. An empty list when the subject holds no such item (or lethe never saw the subject).',
  security,
  request: { params: SubjectParam, body: jsonBody(StoreItemSchema) },
  responses: {
    200: json(z.object({ entries: z.array(EntrySchema), readFence: z.string() }), "The item's live entries, and a read fence covering them"),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer')] as const }, async (c) => {
    const { subject } = c.req.valid('param');
    const entries = await services.log.lookupItem(subject, c.req.valid('json'));
    c.header('cache-control', 'no-store');
    return c.json({ entries: entries.map(shape), readFence: services.fences.issue([...new Set(entries.map((e) => e.keyId))]) }, 200);
  });
}

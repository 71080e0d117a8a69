/** POST /v1/erasures/batch (requestBulkErasure): request the erasure of many subjects at once (up to MAX_BULK_SUBJECTS, 1000): one erasure and one certificate each. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { MAX_BULK_SUBJECTS } from '../../../erasure/request.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, jsonBody, security } from '../../schemas.js';
import type { Services } from '../../services.js';
import { actorOf, BulkErasureRequest, BulkAccepted } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly erasures: Pick<Services['erasures'], 'requestMany'>;
  readonly principals: Pick<Services['principals'], 'name'>;
}

export const route = createRoute({
  operationId: 'requestBulkErasure',
  method: 'post',
  path: '/v1/erasures/batch',
  tags: ['erasure'],
  summary: `Request the erasure of many subjects at once (up to ${MAX_BULK_SUBJECTS}): one erasure and one certificate each`,
  description:
    "Each subject is requested as `POST /v1/erasures` would request it — a new erasure, or the subject's open one — with the fields they share. " +
    'A subject refused (lethe has never seen it, …) is answered in its own item and stops no other. The erasures then run as any other, on every replica, ' +
    'destructions waiting for the ledger at the same moment sharing one chain record. Follow each with `GET /v1/erasures/{erasureId}`.',
  security,
  request: { body: jsonBody(BulkErasureRequest) },
  responses: {
    202: json(BulkAccepted, 'Accepted: at least one new erasure runs in the background'),
    200: json(BulkAccepted, "No new erasure: every subject's erasure was already open, or refused"),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  const actor = actorOf(services, tokens);
  app.openapi({ ...route, middleware: [authorize(tokens, 'eraser')] as const }, async (c) => {
    const items = await services.erasures.requestMany(c.req.valid('json'), actor(c));
    const created = items.filter((i) => 'created' in i && i.created).length;
    const open = items.filter((i) => 'created' in i && !i.created).length;
    return c.json({ erasures: items, created, open, refused: items.length - created - open }, created > 0 ? 202 : 200);
  });
}

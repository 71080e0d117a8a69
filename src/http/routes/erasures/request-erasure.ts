/** POST /v1/erasures (requestErasure): request the erasure of a subject, or (with entryIds) forget some of its entries (idempotent while it is open). */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, ErasureLocationHeaders, json, jsonBody, problemResponse, security } from '../../schemas.js';
import type { Services } from '../../services.js';
import { actorOf, ErasureRequest, Accepted } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly erasures: Pick<Services['erasures'], 'request'>;
  readonly principals: Pick<Services['principals'], 'name'>;
}

export const route = createRoute({
  operationId: 'requestErasure',
  method: 'post',
  path: '/v1/erasures',
  tags: ['erasure'],
  summary: 'Request the erasure of a subject, or (with entryIds) forget some of its entries (idempotent while it is open)',
  description:
    'Without `entryIds`: the whole subject — its key destroyed, everything derived from it regenerated, the subject tombstoned. ' +
    'With `entryIds`: a records-scope erasure — those entries are unreadable from the answer on, the subject is re-keyed without them ' +
    "(its other entries' record keys re-wrapped under a new key, the old key destroyed), every artifact citing them regenerated, the probe " +
    'run for their content, a certificate signed; the subject keeps writing. Asking again for the entries one erasure already forgets answers that erasure.',
  security,
  request: { body: jsonBody(ErasureRequest) },
  responses: {
    202: { ...json(Accepted, 'Accepted: the erasure runs in the background'), headers: ErasureLocationHeaders },
    200: {
      ...json(Accepted, "The subject's erasure is already open (or these entries are already being forgotten): the same erasure"),
      headers: ErasureLocationHeaders,
    },
    404: problemResponse("not_found: lethe has never seen the subject, or an entry is not one of the subject's"),
    409: problemResponse(
      'conflict: some of the entries are already being forgotten by another erasure; erasure_in_progress: the whole subject is being erased',
    ),
    410: problemResponse('key_destroyed: an entry is already erased'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  const actor = actorOf(services, tokens);
  app.openapi({ ...route, middleware: [authorize(tokens, 'eraser')] as const }, async (c) => {
    const body = c.req.valid('json');
    const result = await services.erasures.request(body, actor(c));
    c.header('Location', `/v1/erasures/${result.erasureId}`);
    return c.json({ erasureId: result.erasureId, status: result.status }, result.created ? 202 : 200);
  });
}

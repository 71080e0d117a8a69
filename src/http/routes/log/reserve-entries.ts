/** POST /v1/subjects/{subject}/entries/reservations (reserveEntries): reserve sequence numbers under the subject's key (writers that encrypt locally). */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { MAX_RESERVATION } from '../../../log/service.js';
import type { Services } from '../../services.js';
import { ReservationSchema } from '../../../wire/log.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, jsonBody, problemResponse, security, SubjectParam } from '../../schemas.js';

/** The services this route calls. */
export interface Uses {
  readonly log: Pick<Services['log'], 'reserve'>;
}

export const route = createRoute({
  operationId: 'reserveEntries',
  method: 'post',
  path: '/v1/subjects/{subject}/entries/reservations',
  tags: ['log'],
  summary: "Reserve sequence numbers under the subject's key (writers that encrypt locally)",
  security,
  request: { params: SubjectParam, body: jsonBody(z.object({ count: z.number().int().min(1).max(MAX_RESERVATION) }).openapi('ReservationRequest')) },
  responses: {
    201: json(ReservationSchema, 'Reserved'),
    409: problemResponse('erasure_in_progress'),
    410: problemResponse("subject_erased: an erasure destroyed the subject's key; nothing is accepted for it until an admin reinstates it"),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer')] as const }, async (c) => {
    const { subject } = c.req.valid('param');
    return c.json(await services.log.reserve(subject, c.req.valid('json').count, c.get('role')), 201);
  });
}

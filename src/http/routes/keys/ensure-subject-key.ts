/** PUT /v1/subjects/{subject}/key (ensureSubjectKey): create the subject's data key, or return the live one. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { Services } from '../../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, problemResponse, security, SubjectParam } from '../../schemas.js';
import { SubjectKeySchema } from '../../../wire/keys.js';

/** The services this route calls. */
export interface Uses {
  readonly keys: Pick<Services['keys'], 'ensureKey'>;
}

export const route = createRoute({
  operationId: 'ensureSubjectKey',
  method: 'put',
  path: '/v1/subjects/{subject}/key',
  tags: ['keys'],
  summary: "Create the subject's data key, or return the live one",
  security,
  request: { params: SubjectParam },
  responses: {
    200: json(SubjectKeySchema, 'The subject already had a live key'),
    201: json(SubjectKeySchema, 'A new key was created'),
    409: problemResponse('erasure_in_progress: an erasure of the subject is open; no new key until it ends'),
    410: problemResponse(
      "subject_erased: an erasure destroyed the subject's key; no new key until an admin reinstates it (POST /v1/subjects/{subject}/reinstate)",
    ),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer')] as const }, async (c) => {
    const { subject } = c.req.valid('param');
    const info = await services.keys.ensureKey(subject, c.get('role'));
    return c.json({ subject, keyId: info.keyId, state: info.state, createdAt: info.createdAt.toISOString() }, info.created ? 201 : 200);
  });
}

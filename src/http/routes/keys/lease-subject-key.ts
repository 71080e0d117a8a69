/** POST /v1/subjects/{subject}/key/lease (leaseSubjectKey): lease the subject's data key (created if needed). */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { zeroize } from '../../../crypto/index.js';
import { encodeDek } from '../../../vault/keys.js';
import type { Services } from '../../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, problemResponse, security, SubjectParam } from '../../schemas.js';
import { KeyLeaseSchema } from '../../../wire/keys.js';

/** The services this route calls. */
export interface Uses {
  readonly keys: Pick<Services['keys'], 'lease'>;
}

export const route = createRoute({
  operationId: 'leaseSubjectKey',
  method: 'post',
  path: '/v1/subjects/{subject}/key/lease',
  tags: ['keys'],
  summary: "Lease the subject's data key (created if needed)",
  security,
  request: { params: SubjectParam },
  responses: {
    200: json(KeyLeaseSchema, 'The lease'),
    409: problemResponse('erasure_in_progress'),
    410: problemResponse(
      "subject_erased: an erasure destroyed the subject's key; no lease until an admin reinstates it (POST /v1/subjects/{subject}/reinstate)",
    ),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer')] as const }, async (c) => {
    const { subject } = c.req.valid('param');
    const lease = await services.keys.lease(subject, c.get('role'));
    let dek: string;
    try {
      dek = encodeDek(lease.dek);
    } finally {
      zeroize(lease.dek);
    }
    c.header('cache-control', 'no-store');
    return c.json({ keyId: lease.keyId, dek, leaseId: lease.leaseId, expiresAt: lease.expiresAt.toISOString() }, 200);
  });
}

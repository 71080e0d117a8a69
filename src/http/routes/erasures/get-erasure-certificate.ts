/** GET /v1/erasures/{erasureId}/certificate (getErasureCertificate): the erasure's signed certificate alone (JSON), as `lethe certificate verify` reads it. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, problemResponse, security } from '../../schemas.js';
import type { Services } from '../../services.js';
import { CertificateSchema, documentedCertificate, ErasureIdParam } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly erasures: Pick<Services['erasures'], 'certificate'>;
}

export const route = createRoute({
  operationId: 'getErasureCertificate',
  method: 'get',
  path: '/v1/erasures/{erasureId}/certificate',
  tags: ['erasure'],
  summary: "The erasure's signed certificate alone (JSON), as `lethe certificate verify` reads it",
  security,
  request: { params: ErasureIdParam },
  responses: {
    200: json(CertificateSchema, 'The certificate: { payload, signature, publicKey, algorithm }'),
    404: problemResponse('not_found: no such erasure'),
    409: problemResponse('conflict: the erasure has no certificate yet (still running, or failed)'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'eraser')] as const }, async (c) => {
    const certificate = await services.erasures.certificate(c.req.valid('param').erasureId);
    c.header('cache-control', 'no-store');
    return c.json(documentedCertificate(certificate), 200);
  });
}

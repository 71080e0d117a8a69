/** POST /v1/certificates/keys/rotate (rotateSigningKey): a new certificate-signing key; the current one retires (its private part destroyed, its public part still listed). */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, security } from '../../schemas.js';
import type { Services } from '../../services.js';
import { SigningKeyRotationSchema } from '../../../wire/certificates.js';

/** The services this route calls. */
export interface Uses {
  readonly certificateKeys: Pick<Services['certificateKeys'], 'rotate'>;
}

export const route = createRoute({
  operationId: 'rotateSigningKey',
  method: 'post',
  path: '/v1/certificates/keys/rotate',
  tags: ['certificates', 'admin'],
  summary: 'A new certificate-signing key; the current one retires (its private part destroyed, its public part still listed)',
  description: 'Certificates signed from now on (including provisional ones turning final) name the new key. Audited as certificate.key.rotate.',
  security,
  responses: { 200: json(SigningKeyRotationSchema, 'The new current key and the key it retired'), ...authErrors },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'admin')] as const }, async (c) => c.json(await services.certificateKeys.rotate(c.get('role')), 200));
}

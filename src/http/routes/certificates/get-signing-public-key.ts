/** GET /v1/certificates/public-key (getSigningPublicKey): the current certificate-signing public key alone (no token needed); GET /v1/certificates/keys also lists the retired ones. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { AuthEnv, TokenStore } from '../../auth.js';
import { json } from '../../schemas.js';
import type { Services } from '../../services.js';
import { CurrentSigningKeySchema } from '../../../wire/certificates.js';

/** The services this route calls. */
export interface Uses {
  readonly certificateKeys: Pick<Services['certificateKeys'], 'list'>;
}

export const route = createRoute({
  operationId: 'getSigningPublicKey',
  method: 'get',
  path: '/v1/certificates/public-key',
  security: [], // public: no token
  tags: ['certificates'],
  summary: 'The current certificate-signing public key alone (no token needed); GET /v1/certificates/keys also lists the retired ones',
  responses: { 200: json(CurrentSigningKeySchema, 'The key, base64url, and its id') },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi(route, async (c) => {
    const [current] = await services.certificateKeys.list();
    return c.json({ algorithm: 'Ed25519' as const, keyId: current!.keyId, publicKey: current!.publicKey }, 200);
  });
}

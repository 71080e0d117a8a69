/** GET /v1/certificates/keys (listSigningKeys): every certificate-signing public key, current and retired, with ids, states and times (no token needed). */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { AuthEnv, TokenStore } from '../../auth.js';
import { json } from '../../schemas.js';
import type { Services } from '../../services.js';
import { SigningKeyListSchema } from '../../../wire/certificates.js';

/** The services this route calls. */
export interface Uses {
  readonly certificateKeys: Pick<Services['certificateKeys'], 'list'>;
}

export const route = createRoute({
  operationId: 'listSigningKeys',
  method: 'get',
  path: '/v1/certificates/keys',
  security: [], // public: no token
  tags: ['certificates'],
  summary: 'Every certificate-signing public key, current and retired, with ids, states and times (no token needed)',
  description:
    'The trusted set for `lethe certificate verify --url`: a certificate is valid only when the key its payload names (signingKeyId) is listed here and its signature holds under that key. The key a certificate carries is never trusted by itself.',
  responses: { 200: json(SigningKeyListSchema, 'The current key first, then the retired keys, most recently retired first') },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi(route, async (c) => c.json({ keys: await services.certificateKeys.list() }, 200));
}

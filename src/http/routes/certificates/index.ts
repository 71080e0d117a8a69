/** The certificates operations, one file each, registered in the order the OpenAPI document lists them. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AuthEnv, TokenStore } from '../../auth.js';
import * as listSigningKeys from './list-signing-keys.js';
import * as getSigningPublicKey from './get-signing-public-key.js';
import * as rotateSigningKey from './rotate-signing-key.js';

/** The services the certificates routes call, together. */
export type Uses = listSigningKeys.Uses &
  getSigningPublicKey.Uses &
  rotateSigningKey.Uses;

export function registerCertificateRoutes(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  listSigningKeys.register(app, services, tokens);
  getSigningPublicKey.register(app, services, tokens);
  rotateSigningKey.register(app, services, tokens);
}

/** The certificates operations, one file each, registered in the order the OpenAPI document lists them. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AuthEnv, TokenStore } from '../../auth.js';
import { registerAll, type UsesOf } from '../operations.js';
import * as listSigningKeys from './list-signing-keys.js';
import * as getSigningPublicKey from './get-signing-public-key.js';
import * as rotateSigningKey from './rotate-signing-key.js';

/** The operations, in the order the document lists them. */
const OPERATIONS = [listSigningKeys, getSigningPublicKey, rotateSigningKey] as const;

/** The services these routes call, together. */
export type Uses = UsesOf<typeof OPERATIONS>;

export function registerCertificateRoutes(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  registerAll(app, services, tokens, OPERATIONS);
}

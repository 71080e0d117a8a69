/** The service's own operations (liveness, readiness; public, no token), one file each, registered in the order the OpenAPI document lists them. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AuthEnv, TokenStore } from '../../auth.js';
import { registerAll, type UsesOf } from '../operations.js';
import * as checkLiveness from './check-liveness.js';
import * as checkReadiness from './check-readiness.js';

/** The operations, in the order the document lists them. */
const OPERATIONS = [checkLiveness, checkReadiness] as const;

/** The services these routes call, together. */
export type Uses = UsesOf<typeof OPERATIONS>;

export function registerServiceRoutes(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  registerAll(app, services, tokens, OPERATIONS);
}

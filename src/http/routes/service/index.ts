/** The service's own operations (liveness, readiness; public, no token), one file each, registered in the order the OpenAPI document lists them. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AuthEnv, TokenStore } from '../../auth.js';
import * as checkLiveness from './check-liveness.js';
import * as checkReadiness from './check-readiness.js';

/** The services the service routes call, together. */
export type Uses = checkLiveness.Uses &
  checkReadiness.Uses;

export function registerServiceRoutes(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  checkLiveness.register(app, services, tokens);
  checkReadiness.register(app, services, tokens);
}

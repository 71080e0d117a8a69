/** The keys operations, one file each, registered in the order the OpenAPI document lists them. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AuthEnv, TokenStore } from '../../auth.js';
import * as ensureSubjectKey from './ensure-subject-key.js';
import * as leaseSubjectKey from './lease-subject-key.js';
import * as releaseKeyLease from './release-key-lease.js';
import * as createSubjectKeys from './create-subject-keys.js';
import * as checkKeyValidity from './check-key-validity.js';

export { KEY_BATCH_BODY_LIMIT_BYTES, KEY_BATCH_PATH } from './shared.js';

/** The services the keys routes call, together. */
export type Uses = ensureSubjectKey.Uses &
  leaseSubjectKey.Uses &
  releaseKeyLease.Uses &
  createSubjectKeys.Uses &
  checkKeyValidity.Uses;

export function registerKeyRoutes(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  ensureSubjectKey.register(app, services, tokens);
  leaseSubjectKey.register(app, services, tokens);
  releaseKeyLease.register(app, services, tokens);
  createSubjectKeys.register(app, services, tokens);
  checkKeyValidity.register(app, services, tokens);
}

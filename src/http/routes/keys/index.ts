/** The keys operations, one file each, registered in the order the OpenAPI document lists them. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AuthEnv, TokenStore } from '../../auth.js';
import { registerAll, type UsesOf } from '../operations.js';
import * as ensureSubjectKey from './ensure-subject-key.js';
import * as leaseSubjectKey from './lease-subject-key.js';
import * as releaseKeyLease from './release-key-lease.js';
import * as createSubjectKeys from './create-subject-keys.js';
import * as checkKeyValidity from './check-key-validity.js';

export { KEY_BATCH_BODY_LIMIT_BYTES, KEY_BATCH_PATH } from './shared.js';

/** The operations, in the order the document lists them. */
const OPERATIONS = [ensureSubjectKey, leaseSubjectKey, releaseKeyLease, createSubjectKeys, checkKeyValidity] as const;

/** The services these routes call, together. */
export type Uses = UsesOf<typeof OPERATIONS>;

export function registerKeyRoutes(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  registerAll(app, services, tokens, OPERATIONS);
}

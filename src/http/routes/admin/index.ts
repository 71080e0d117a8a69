/** The admin operations, one file each, registered in the order the OpenAPI document lists them. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AuthEnv, TokenStore } from '../../auth.js';
import { registerAll, type UsesOf } from '../operations.js';
import * as rotateKek from './rotate-kek.js';
import * as listKekEpochs from './list-kek-epochs.js';
import * as destroyKey from './destroy-key.js';
import * as reinstateSubject from './reinstate-subject.js';

/** The operations, in the order the document lists them. */
const OPERATIONS = [rotateKek, listKekEpochs, destroyKey, reinstateSubject] as const;

/** The services these routes call, together. */
export type Uses = UsesOf<typeof OPERATIONS>;

export function registerAdminRoutes(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  registerAll(app, services, tokens, OPERATIONS);
}

/** The admin operations, one file each, registered in the order the OpenAPI document lists them. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AuthEnv, TokenStore } from '../../auth.js';
import * as rotateKek from './rotate-kek.js';
import * as listKekEpochs from './list-kek-epochs.js';
import * as destroyKey from './destroy-key.js';
import * as reinstateSubject from './reinstate-subject.js';

/** The services the admin routes call, together. */
export type Uses = rotateKek.Uses &
  listKekEpochs.Uses &
  destroyKey.Uses &
  reinstateSubject.Uses;

export function registerAdminRoutes(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  rotateKek.register(app, services, tokens);
  listKekEpochs.register(app, services, tokens);
  destroyKey.register(app, services, tokens);
  reinstateSubject.register(app, services, tokens);
}

/** The log operations, one file each, registered in the order the OpenAPI document lists them. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AuthEnv, TokenStore } from '../../auth.js';
import * as appendEntry from './append-entry.js';
import * as listEntries from './list-entries.js';
import * as getEntry from './get-entry.js';
import * as reserveEntries from './reserve-entries.js';
import * as registerSegment from './register-segment.js';

/** The services the log routes call, together. */
export type Uses = appendEntry.Uses &
  listEntries.Uses &
  getEntry.Uses &
  reserveEntries.Uses &
  registerSegment.Uses;

export function registerLogRoutes(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  appendEntry.register(app, services, tokens);
  listEntries.register(app, services, tokens);
  getEntry.register(app, services, tokens);
  reserveEntries.register(app, services, tokens);
  registerSegment.register(app, services, tokens);
}

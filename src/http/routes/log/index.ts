/** The log operations, one file each, registered in the order the OpenAPI document lists them. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AuthEnv, TokenStore } from '../../auth.js';
import { registerAll, type UsesOf } from '../operations.js';
import * as appendEntry from './append-entry.js';
import * as listEntries from './list-entries.js';
import * as getEntry from './get-entry.js';
import * as reserveEntries from './reserve-entries.js';
import * as registerSegment from './register-segment.js';
import * as lookupItem from './lookup-item.js';
import * as listItemNamespaces from './list-item-namespaces.js';
import * as searchItems from './search-items.js';

/** The operations, in the order the document lists them. */
const OPERATIONS = [appendEntry, listEntries, getEntry, reserveEntries, registerSegment, lookupItem, searchItems, listItemNamespaces] as const;

/** The services these routes call, together. */
export type Uses = UsesOf<typeof OPERATIONS>;

export function registerLogRoutes(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  registerAll(app, services, tokens, OPERATIONS);
}

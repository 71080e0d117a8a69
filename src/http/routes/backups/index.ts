/** The backups operations, one file each, registered in the order the OpenAPI document lists them. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AuthEnv, TokenStore } from '../../auth.js';
import { registerAll, type UsesOf } from '../operations.js';
import * as takeBackup from './take-backup.js';
import * as listBackups from './list-backups.js';
import * as getBackupManifest from './get-backup-manifest.js';

/** The operations, in the order the document lists them. */
const OPERATIONS = [takeBackup, listBackups, getBackupManifest] as const;

/** The services these routes call, together. */
export type Uses = UsesOf<typeof OPERATIONS>;

export function registerBackupRoutes(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  registerAll(app, services, tokens, OPERATIONS);
}

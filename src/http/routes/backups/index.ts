/** The backups operations, one file each, registered in the order the OpenAPI document lists them. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AuthEnv, TokenStore } from '../../auth.js';
import * as takeBackup from './take-backup.js';
import * as listBackups from './list-backups.js';
import * as getBackupManifest from './get-backup-manifest.js';

/** The services the backups routes call, together. */
export type Uses = takeBackup.Uses &
  listBackups.Uses &
  getBackupManifest.Uses;

export function registerBackupRoutes(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  takeBackup.register(app, services, tokens);
  listBackups.register(app, services, tokens);
  getBackupManifest.register(app, services, tokens);
}

/** GET /v1/backups/{backupId}/manifest (getBackupManifest): a backup's manifest as it stands: the base written with the backup, folded with every later destruction the ledger chain holds. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { Services } from '../../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, problemResponse, security } from '../../schemas.js';
import { BackupIdParam, ManifestSchema } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly backups: Pick<Services['backups'], 'manifest'>;
}

export const route = createRoute({
  operationId: 'getBackupManifest',
  method: 'get',
  path: '/v1/backups/{backupId}/manifest',
  tags: ['backups'],
  summary: "A backup's manifest as it stands: the base written with the backup, folded with every later destruction the ledger chain holds",
  security,
  request: { params: BackupIdParam },
  responses: {
    200: json(ManifestSchema, 'The manifest'),
    404: problemResponse('not_found'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'backup')] as const }, async (c) =>
    c.json(await services.backups.manifest(c.req.valid('param').backupId), 200),
  );
}

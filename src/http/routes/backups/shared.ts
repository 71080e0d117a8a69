/** What the backups routes share. */
import { z } from '@hono/zod-openapi';
import { idParam } from '../../schemas.js';

export const BackupIdParam = z.object({
  backupId: idParam('bak', 'backupId'),
});

export const ManifestSchema = z
  .object({
    format: z.string(),
    backupId: z.string(),
    version: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
    keyTable: z.object({ key: z.string(), sha256: z.string(), keys: z.number().int() }),
    objects: z.array(z.object({ key: z.string(), sha256: z.string(), size: z.number().int(), stored: z.string(), keyIds: z.array(z.string()) })),
    keys: z.array(
      z.object({
        keyId: z.string(),
        kind: z.enum(['subject', 'artifact-version', 'unknown']),
        state: z.enum(['active', 'destroyed']),
        destroyedAt: z.string().optional(),
      }),
    ),
    base: z.object({ version: z.number().int(), mac: z.string().nullable() }).openapi({
      description: 'The manifest as written with the backup (never rewritten): its version and MAC. The keys above are its keys folded with the ledger chain.',
    }),
    overlay: z.object({ destroyed: z.number().int(), through: z.number().int().nullable() }).openapi({
      description:
        "What the backup bucket's ledger chain adds to the base: how many keys it marks destroyed after the backup, and the newest chain record among them.",
    }),
  })
  .openapi('BackupManifest');

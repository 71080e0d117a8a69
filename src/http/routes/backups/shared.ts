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
    keyTable: z.object({ key: z.string(), sha256: z.string(), keys: z.number().int() }).openapi({
      description: 'The export of the key table (wrapped keys and their epochs) in the backup bucket: its object key, sha256 (hex) and how many keys it holds.',
    }),
    database: z.object({ key: z.string(), sha256: z.string() }).openapi({
      description: "The export of lethe's tables (ciphertext and metadata only) a restore loads: its object key in the backup bucket and sha256 (hex).",
    }),
    ledgerEntries: z.number().int().openapi({ description: 'Destruction-ledger rows when the backup was taken; each is also a ledger/<keyId>.json object.' }),
    objects: z.array(z.object({ key: z.string(), sha256: z.string(), size: z.number().int(), stored: z.string(), keyIds: z.array(z.string()) })),
    keys: z.array(
      z.object({
        keyId: z.string(),
        kind: z.enum(['subject', 'artifact-version', 'unknown']),
        state: z.enum(['active', 'destroyed']),
        destroyedAt: z.string().optional(),
      }),
    ),
    ledgerHead: z.object({ seq: z.number().int(), mac: z.string() }).optional().openapi({
      description:
        "The backup bucket's ledger chain record (its seq and MAC, hex) that was last when the backup was taken: a restore refuses a chain cut back behind it. Absent when the chain was empty.",
    }),
    base: z.object({ version: z.number().int(), mac: z.string().nullable() }).openapi({
      description: 'The manifest as written with the backup (never rewritten): its version and MAC. The keys above are its keys folded with the ledger chain.',
    }),
    overlay: z.object({ destroyed: z.number().int(), through: z.number().int().nullable() }).openapi({
      description:
        "What the backup bucket's ledger chain adds to the base: how many keys it marks destroyed after the backup, and the newest chain record among them.",
    }),
  })
  .openapi('BackupManifest');

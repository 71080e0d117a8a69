/**
 * Wire types of backups (GET /v1/backups): declared once, as zod schemas, and imported by
 * the route and the TypeScript client. Plain zod.
 */
import { z } from 'zod';

/** A backup as GET /v1/backups lists it. */
export const BackupSchema = z.object({
  backupId: z.string(),
  createdAt: z.string(),
  objects: z.number().int(),
  keys: z.number().int(),
  manifestVersion: z.number().int(),
});
export type Backup = z.infer<typeof BackupSchema>;

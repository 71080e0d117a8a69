/** What the admin routes share. */
import { z } from '@hono/zod-openapi';
import { ReinstateRequestSchema } from '../../../erasure/reinstatement.js';

export const RotateResponse = z
  .object({
    epoch: z.number().int(),
    rewrapped: z.number().int(),
    retired: z.array(z.number().int()),
    resumed: z.boolean(),
  })
  .openapi('KekRotation');

export const EpochSchema = z
  .object({
    epoch: z.number().int(),
    state: z.enum(['pending', 'active', 'retiring', 'retired']),
    createdAt: z.string().openapi({ format: 'date-time' }),
    activatedAt: z.string().optional(),
    retiredAt: z.string().optional(),
    keys: z.number().int().openapi({ description: 'live DEKs wrapped under this epoch' }),
  })
  .openapi('KekEpoch');

export const DestroyRequest = z.object({ reason: z.string().trim().min(1).max(500) }).openapi('KeyDestroyRequest');

export const DestroyResponse = z
  .object({
    keyId: z.string(),
    state: z.enum(['destroyed', 'destruction_pending']).openapi({
      description:
        "`destroyed` once the destruction record is durable in the backup store's ledger chain (no restore can bring the key back); " +
        '`destruction_pending` while that write is still being retried: the key is already unusable, but a database lost now and restored from a backup would bring it back',
    }),
    pending: z.string().optional().openapi({ description: "why the destruction is still pending (the ledger write's last error)" }),
    destroyedAt: z.string(),
    wrappedEpoch: z.number().int().openapi({ description: 'copies of the wrapped key in database backups stay inert once this epoch is retired' }),
    leasedUntil: z.string().optional().openapi({ description: 'leases handed out before destruction stay usable by their holders until this time' }),
  })
  .openapi('KeyDestruction');

export const ReinstateRequest = ReinstateRequestSchema.meta({ id: 'ReinstateRequest' });

export const ReinstateResponse = z.object({ subject: z.string(), reinstated: z.literal(true) }).openapi('SubjectReinstated');

/** How long a destroy call waits for its destruction record to be durable before answering 202. */
export const DESTROY_ACK_WAIT_MS = 5000;

/** Admin: KEK rotation and epochs; break-glass key destruction; reinstating an erased subject. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { ReinstateRequestSchema } from '../../erasure/reinstatement.js';
import type { Services } from '../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../auth.js';
import { authErrors, idParam, json, jsonBody, problemResponse, security, SubjectParam } from '../schemas.js';

const RotateResponse = z
  .object({
    epoch: z.number().int(),
    rewrapped: z.number().int(),
    retired: z.array(z.number().int()),
    resumed: z.boolean(),
  })
  .openapi('KekRotation');

const EpochSchema = z
  .object({
    epoch: z.number().int(),
    state: z.enum(['pending', 'active', 'retiring', 'retired']),
    createdAt: z.string().openapi({ format: 'date-time' }),
    activatedAt: z.string().optional(),
    retiredAt: z.string().optional(),
    keys: z.number().int().openapi({ description: 'live DEKs wrapped under this epoch' }),
  })
  .openapi('KekEpoch');

const DestroyRequest = z
  .object({ reason: z.string().trim().min(1).max(500) })
  .openapi('KeyDestroyRequest');

const DestroyResponse = z
  .object({
    keyId: z.string(),
    state: z.enum(['destroyed', 'destruction_pending']).openapi({
      description:
        '`destroyed` once the destruction record is durable in the backup store\'s ledger chain (no restore can bring the key back); ' +
        '`destruction_pending` while that write is still being retried: the key is already unusable, but a database lost now and restored from a backup would bring it back',
    }),
    pending: z.string().optional().openapi({ description: 'why the destruction is still pending (the ledger write\'s last error)' }),
    destroyedAt: z.string(),
    wrappedEpoch: z.number().int().openapi({ description: 'copies of the wrapped key in database backups stay inert once this epoch is retired' }),
    leasedUntil: z.string().optional().openapi({ description: 'leases handed out before destruction stay usable by their holders until this time' }),
  })
  .openapi('KeyDestruction');

const ReinstateRequest = ReinstateRequestSchema.meta({ id: 'ReinstateRequest' });

const ReinstateResponse = z.object({ subject: z.string(), reinstated: z.literal(true) }).openapi('SubjectReinstated');

/** How long a destroy call waits for its destruction record to be durable before answering 202. */
const DESTROY_ACK_WAIT_MS = 5000;

export function registerAdminRoutes(app: OpenAPIHono<AuthEnv>, services: Services, tokens: TokenStore): void {
  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/admin/kek/rotate',
      tags: ['admin'],
      summary: 'New KEK epoch; re-wrap live DEKs; retire unreferenced epochs',
      security,
      middleware: [authorize(tokens, 'admin')] as const,
      responses: { 200: json(RotateResponse, 'Rotation finished'), ...authErrors },
    }),
    async (c) => c.json(await services.epochs.rotate(c.get('role')), 200),
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/admin/kek',
      tags: ['admin'],
      summary: 'KEK epochs',
      security,
      middleware: [authorize(tokens, 'admin')] as const,
      responses: { 200: json(z.object({ epochs: z.array(EpochSchema) }), 'Every epoch, oldest first'), ...authErrors },
    }),
    async (c) => {
      const list = await services.epochs.list();
      return c.json(
        {
          epochs: list.map((e) => ({
            epoch: e.epoch,
            state: e.state,
            createdAt: e.createdAt.toISOString(),
            ...(e.activatedAt ? { activatedAt: e.activatedAt.toISOString() } : {}),
            ...(e.retiredAt ? { retiredAt: e.retiredAt.toISOString() } : {}),
            keys: e.keys,
          })),
        },
        200,
      );
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/admin/keys/{keyId}/destroy',
      tags: ['admin'],
      summary: 'Destroy one key now (break-glass; erasures are the normal path)',
      description:
        'Removes the wrapped DEK, records the destruction in the ledger and the audit log, and tells every replica to drop it; then waits (a few seconds) for ' +
        'the destruction record to be durable in the backup store\'s ledger chain. 200 `destroyed` once it is; 202 `destruction_pending` while the write is ' +
        'retried in the background (the key is unusable already; call again to see it acknowledged). Idempotent.',
      security,
      middleware: [authorize(tokens, 'admin')] as const,
      request: {
        params: z.object({ keyId: idParam('key', 'keyId') }),
        body: jsonBody(DestroyRequest),
      },
      responses: {
        200: json(DestroyResponse, 'The key is destroyed and its destruction durable in the backup store\'s ledger'),
        202: json(DestroyResponse, 'The key is unusable; its destruction record is not yet durable in the backup store (retried in the background)'),
        404: problemResponse('not_found: no such key'),
        ...authErrors,
      },
    }),
    async (c) => {
      const { keyId } = c.req.valid('param');
      const { reason } = c.req.valid('json');
      const d = await services.keys.destroyKey(keyId, { reason, actor: c.get('role') });
      const durable = await services.backups.awaitDurable([keyId], DESTROY_ACK_WAIT_MS);
      const body = {
        keyId: d.keyId,
        destroyedAt: d.destroyedAt.toISOString(),
        wrappedEpoch: d.wrappedEpoch,
        ...(d.leasedUntil ? { leasedUntil: d.leasedUntil.toISOString() } : {}),
      };
      if (durable.pending.length > 0) {
        const pending = `the destruction record is not yet durable in the backup store's ledger (${durable.error ?? 'still being written'}); retried in the background`;
        return c.json({ ...body, state: 'destruction_pending' as const, pending }, 202);
      }
      return c.json({ ...body, state: 'destroyed' as const }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/subjects/{subject}/reinstate',
      tags: ['admin'],
      summary: 'Reinstate an erased subject: keys, leases and appends are accepted for it again',
      description:
        'A subject-scope erasure tombstones its subject: from its key\'s destruction on, creating a key, leasing, appending, reserving and ' +
        'registering entries for it answer 410 `subject_erased`, so a late job cannot re-learn the person. This lifts the tombstone (the person ' +
        'came back, or the erasure was a mistake): the next key is a new one — nothing erased comes back. Recorded in the audit log ' +
        '(`subject.reinstate`: the subject\'s keyed hash, the erasure and the reason; the reason is kept in the clear, so it must not quote the subject).',
      security,
      middleware: [authorize(tokens, 'admin')] as const,
      request: { params: SubjectParam, body: jsonBody(ReinstateRequest) },
      responses: {
        200: json(ReinstateResponse, 'The tombstone is lifted, and the reinstatement recorded in the audit log'),
        409: problemResponse('conflict: the subject is not erased (no tombstone); erasure_in_progress: an erasure of the subject is open'),
        ...authErrors,
      },
    }),
    async (c) => {
      const { subject } = c.req.valid('param');
      const { reason } = c.req.valid('json');
      await services.erasures.reinstate(subject, reason, c.get('role'));
      return c.json({ subject, reinstated: true as const }, 200);
    },
  );
}

/** POST /v1/admin/keys/{keyId}/destroy (destroyKey): destroy one key now (break-glass; erasures are the normal path). */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { Services } from '../../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, idParam, json, jsonBody, problemResponse, security } from '../../schemas.js';
import { DestroyRequest, DestroyResponse, DESTROY_ACK_WAIT_MS } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly keys: Pick<Services['keys'], 'destroyKey'>;
  readonly backups: Pick<Services['backups'], 'awaitDurable'>;
}

export const route = createRoute({
  operationId: 'destroyKey',
  method: 'post',
  path: '/v1/admin/keys/{keyId}/destroy',
  tags: ['admin'],
  summary: 'Destroy one key now (break-glass; erasures are the normal path)',
  description:
    'Removes the wrapped DEK, records the destruction in the ledger and the audit log, and tells every replica to drop it; then waits (a few seconds) for ' +
    "the destruction record to be durable in the backup store's ledger chain. 200 `destroyed` once it is; 202 `destruction_pending` while the write is " +
    'retried in the background (the key is unusable already; call again to see it acknowledged). Idempotent.',
  security,
  request: {
    params: z.object({ keyId: idParam('key', 'keyId') }),
    body: jsonBody(DestroyRequest),
  },
  responses: {
    200: json(DestroyResponse, "The key is destroyed and its destruction durable in the backup store's ledger"),
    202: json(DestroyResponse, 'The key is unusable; its destruction record is not yet durable in the backup store (retried in the background)'),
    404: problemResponse('not_found: no such key'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'admin')] as const }, async (c) => {
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
  });
}

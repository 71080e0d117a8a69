/**
 * What /readyz says about this replica: its listener (other replicas' events), its
 * in-memory indexes, its destruction cursor and its erasure worker. A listener down
 * for longer than LISTENER_GRACE_MS makes the replica unready (`checks.listener:
 * failed`); within the grace (a reconnect takes a second) it is `pending`, a warning.
 */
import { z } from '@hono/zod-openapi';
import type { Services } from './services.js';

export const LISTENER_GRACE_MS = 5000;

export const ReplicaView = z
  .object({
    id: z.string(),
    listener: z.enum(['up', 'down']),
    listenerDownSince: z.string().optional(),
    index: z.enum(['ready', 'rebuilding']),
    appliedSeq: z.number().int().openapi({ description: 'every key destruction up to this destruction-ledger seq was applied here (cache and indexes)' }),
    lastCatchUpAt: z.string().optional(),
    erasureWorker: z.enum(['running', 'stopped']),
    lastWorkerPassAt: z.string().optional(),
    indexWorker: z.enum(['running', 'stopped']).optional().openapi({ description: "this replica's indexer, draining the indexing queue" }),
    searchQueued: z
      .number()
      .int()
      .optional()
      .openapi({ description: 'writer-registered entries waiting in the indexing queue (shared by every replica): not yet searchable' }),
    searchLagSeconds: z.number().optional().openapi({ description: 'age of the oldest of them (lethe_search_lag_seconds); 0 when none waits' }),
  })
  .openapi({ description: 'this replica: listener, index, destruction cursor, erasure worker, indexer and search freshness' });

export interface ReplicaReadinessResult {
  readonly check: 'ok' | 'pending' | 'failed' | undefined;
  readonly warning: string | undefined;
  readonly view: z.infer<typeof ReplicaView> | undefined;
}

export function replicaReadiness(
  services: Pick<Services, 'replica' | 'erasures'> & { log?: Pick<Services['log'], 'indexer'> },
  now = Date.now(),
  search?: { queued: number; lagSeconds: number },
): ReplicaReadinessResult {
  const status = services.replica?.status();
  if (!status) return { check: undefined, warning: undefined, view: undefined };
  const worker = services.erasures.workerStatus();
  const indexer = services.log?.indexer.status();
  const down = status.listener.state === 'down';
  const downFor = now - status.listener.since.getTime();
  const check = !down ? 'ok' : downFor > LISTENER_GRACE_MS ? 'failed' : 'pending';
  return {
    check,
    warning: down
      ? `the replica event listener has been down since ${status.listener.since.toISOString()}: key destructions reach this replica through its ledger catch-up only`
      : undefined,
    view: {
      id: status.replicaId,
      listener: status.listener.state,
      ...(down ? { listenerDownSince: status.listener.since.toISOString() } : {}),
      index: status.index,
      appliedSeq: status.appliedSeq,
      ...(status.lastCatchUpAt ? { lastCatchUpAt: status.lastCatchUpAt.toISOString() } : {}),
      erasureWorker: worker.running ? 'running' : 'stopped',
      ...(worker.lastPassAt ? { lastWorkerPassAt: worker.lastPassAt.toISOString() } : {}),
      ...(indexer ? { indexWorker: indexer.running ? ('running' as const) : ('stopped' as const) } : {}),
      ...(search ? { searchQueued: search.queued, searchLagSeconds: Math.round(search.lagSeconds * 1000) / 1000 } : {}),
    },
  };
}

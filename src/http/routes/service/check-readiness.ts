/**
 * GET /readyz (checkReadiness): the database and the object store answer (a MinIO
 * cluster: it holds its write quorum); public, no token. Every read starts at once and is bounded at 2 s, so the answer comes within
 * about 2 s even when the database hangs. The ledger chain and search freshness are
 * reported, never a reason to be unready.
 */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { describeError } from '../../../observability/logger.js';
import type { AuthEnv, TokenStore } from '../../auth.js';
import { replicaReadiness, ReplicaView } from '../../replica-readiness.js';
import { json } from '../../schemas.js';
import type { Services } from '../../services.js';

/** The services this route calls. */
export interface Uses {
  readonly db: Services['db'];
  readonly objects: Services['objects'];
  readonly log: Pick<Services['log'], 'queueStatus' | 'indexer'>;
  readonly backups: Pick<Services['backups'], 'ledgerStatus'>;
  readonly erasures: Services['erasures'];
  readonly replica?: Services['replica'];
  readonly shards?: Pick<NonNullable<Services['shards']>, 'count' | 'answering'> | undefined;
  readonly logger: Pick<Services['logger'], 'warn'>;
}

const ReadyResponse = z.object({
  status: z
    .enum(['ok', 'degraded', 'unavailable'])
    .openapi({ description: "`degraded` (still 200) while `checks.ledgerChain` is `failed`: the backup bucket's ledger chain was cut" }),
  checks: z.record(z.string(), z.enum(['ok', 'failed', 'off', 'pending', 'bypassable'])),
  warnings: z
    .array(z.string())
    .optional()
    .openapi({ description: 'what does not stop readiness but an operator must know (the ledger chain not under Object Lock, destructions pending)' }),
  replica: ReplicaView.optional(),
  shards: z
    .object({ count: z.number().int(), answering: z.array(z.number().int()) })
    .optional()
    .openapi({ description: 'sharded deployments only (LETHE_INDEX_SHARDS > 1): the index shards this replica holds and answers searches for' }),
});

export const route = createRoute({
  operationId: 'checkReadiness',
  method: 'get',
  path: '/readyz',
  security: [], // public: no token
  tags: ['service'],
  summary: 'Readiness: the database and the object store answer',
  description:
    "`checks.ledgerLock` is `off` when the backup bucket's ledger chain is not retained under Object Lock, `bypassable` when lethe's own credential can remove retained versions; `checks.ledgerChain` is `failed` (status `degraded`) " +
    'when the chain lacks a record this database stored there or its head was rolled back; `checks.ledgerWrites` is `pending` while ' +
    'destructions wait for their record to be durable in the backup store. Neither makes the service unready; both are named in `warnings`. ' +
    '`checks.objectStoreWrites` (MinIO only) is `failed`, and the service unready, while the MinIO cluster has lost its write quorum (reads may still work); ' +
    '`checks.listener` is `pending` while the replica event listener reconnects and `failed` (unready) once it has been down for longer than a short grace; ' +
    '`replica` names the listener, the index state, the last key destruction applied, the erasure worker, the indexer, and search freshness: ' +
    '`searchQueued` writer-registered entries not yet searchable, the oldest waiting `searchLagSeconds`.',
  responses: { 200: json(ReadyResponse, 'Ready'), 503: json(ReadyResponse, 'Not ready') },
});

type LedgerStatus = Awaited<ReturnType<Services['backups']['ledgerStatus']>>;
type LedgerCheck = 'ok' | 'off' | 'pending' | 'failed' | 'bypassable';

/** The ledger chain's checks and what an operator must know of it. */
function ledgerChecks(status: LedgerStatus): { checks: Record<string, LedgerCheck>; warnings: string[] } {
  const checks: Record<string, LedgerCheck> = {};
  const warnings: string[] = [];
  checks.ledgerLock = !status.locked ? 'off' : status.bypassable ? 'bypassable' : 'ok';
  if (!status.locked) warnings.push(`the ledger chain is not under Object Lock: ${status.why}`);
  if (status.bypassable)
    warnings.push(
      "lethe's own credential can remove retained versions of the ledger chain (the governance bypass or version deletes): give it a least-privilege policy (infra/minio/lethe-policy.json) or use compliance mode",
    );
  checks.ledgerWrites = status.pending > 0 ? 'pending' : 'ok';
  if (status.anchor.state !== 'unchecked') checks.ledgerChain = status.anchor.state === 'cut' ? 'failed' : 'ok';
  if (status.anchor.state === 'cut')
    warnings.push(
      `the ledger chain in the backup bucket was cut: ${status.anchor.problem}; no destruction is recorded there until it is repaired (lethe backup repair-ledger)`,
    );
  if (status.pending > 0) {
    warnings.push(
      `${status.pending} destruction(s) not yet durable in the backup store's ledger, the oldest since ${status.oldestPending?.toISOString() ?? '?'}`,
    );
  }
  return { checks, warnings };
}

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, _tokens: TokenStore): void {
  const { logger } = services;
  app.openapi(route, async (c) => {
    const checks = [
      { name: 'database', check: () => services.db.ping() },
      { name: 'objectStore', check: () => services.objects.ping() },
    ];
    const results: Record<string, 'ok' | 'failed'> = {};
    // a MinIO cluster that lost its write quorum still answers reads: said apart, and unready
    const writesRead = services.objects.writable
      ? withTimeout(services.objects.writable(), 2000).then(
          (w) => (w === undefined ? undefined : w ? ('ok' as const) : ('failed' as const)),
          // no answer in time says nothing of the quorum: the objectStore check speaks for the store then
          () => undefined,
        )
      : Promise.resolve(undefined);
    // every read below starts now and is bounded at 2 s: the answer comes within about 2 s even when the database hangs
    // search freshness (the indexing queue): reported, never a reason to be unready
    const searchRead = services.replica ? withTimeout(services.log.queueStatus(), 2000).catch(() => undefined) : Promise.resolve(undefined);
    // the ledger chain: advisory, never a reason to be unready
    const ledgerRead = withTimeout(services.backups.ledgerStatus(), 2000).then(
      (status) => ({ status }),
      (e: unknown) => ({ error: e }),
    );
    await Promise.all(
      checks.map(async ({ name, check }) => {
        try {
          await withTimeout(check(), 2000);
          results[name] = 'ok';
        } catch (e) {
          logger.warn({ check: name, err: describeError(e) }, 'readiness check failed');
          results[name] = 'failed';
        }
      }),
    );
    const writes = await writesRead;
    if (writes) results.objectStoreWrites = writes;
    if (writes === 'failed')
      logger.warn({ check: 'objectStoreWrites' }, 'readiness check failed: the object store takes no writes (a MinIO cluster without its write quorum)');
    const search = await searchRead;
    const replica = replicaReadiness(services, Date.now(), search);
    const ok = Object.values(results).every((r) => r === 'ok') && replica.check !== 'failed';
    const read = await ledgerRead;
    const { checks: ledger, warnings } = 'status' in read ? ledgerChecks(read.status) : { checks: {} as Record<string, LedgerCheck>, warnings: [] as string[] };
    if (!('status' in read)) logger.warn({ err: describeError(read.error) }, 'readiness: the ledger status could not be read');
    return c.json(
      {
        status: ok ? (ledger.ledgerChain === 'failed' ? ('degraded' as const) : ('ok' as const)) : ('unavailable' as const),
        checks: { ...results, ...ledger, ...(replica.check ? { listener: replica.check } : {}) },
        ...(replica.warning || warnings.length > 0 ? { warnings: [...warnings, ...(replica.warning ? [replica.warning] : [])] } : {}),
        ...(replica.view ? { replica: replica.view } : {}),
        ...(services.shards ? { shards: { count: services.shards.count, answering: [...services.shards.answering().keys()].sort((a, b) => a - b) } } : {}),
      },
      ok ? 200 : 503,
    );
  });
}

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

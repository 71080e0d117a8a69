/**
 * The Hono application: middleware (request metrics and logs, body limit), the
 * feature routes, the OpenAPI document generated from their zod schemas, and the one
 * error handler that turns every failure into problem+json.
 */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import { routePath } from 'hono/route';
import { isLetheError, isTransientDatabaseError } from '../errors.js';
import { describeError } from '../observability/logger.js';
import type { AuthEnv, TokenStore } from './auth.js';
import { MAX_JSON_DEPTH, rejectBadInput } from './bad-input.js';
import { registerDocs, withOperationIds } from './docs.js';
import { allowedMethods } from './methods.js';
import { problem, statusOf } from './problem.js';
import { registerAdminRoutes } from './routes/admin.js';
import { registerArtifactRoutes } from './routes/artifacts.js';
import { registerBackupRoutes } from './routes/backups.js';
import { registerCertificateRoutes } from './routes/certificates.js';
import { registerErasureRoutes } from './routes/erasures.js';
import { KEY_BATCH_BODY_LIMIT_BYTES, KEY_BATCH_PATH, registerKeyRoutes } from './routes/keys.js';
import { registerLogRoutes } from './routes/log.js';
import { replicaReadiness, ReplicaView } from './replica-readiness.js';
import { json } from './schemas.js';
import type { Services } from './services.js';

export interface HttpAppOptions {
  readonly services: Services;
  readonly tokens: TokenStore;
}

/** How the problem detail names where a bad field was. */
const TARGET_NAMES: Record<string, string> = { json: 'body', param: 'path', query: 'query', header: 'header' };

export function createHttpApp(options: HttpAppOptions): OpenAPIHono<AuthEnv> {
  const { services, tokens } = options;
  const { metrics, logger, config } = services;

  const app = new OpenAPIHono<AuthEnv>({
    defaultHook: (result, c) => {
      if (result.success) return;
      const issue = result.error.issues[0];
      const target = TARGET_NAMES[result.target] ?? result.target;
      const field = issue ? [target, ...issue.path].join('.') : target;
      return problem(c, 'validation_failed', `${field}: ${issue?.message ?? 'invalid'}`);
    },
  });

  app.use('*', async (c, next) => {
    const started = performance.now();
    await next();
    const route = routePath(c, -1);
    const label = route === '/*' || route === '*' ? 'unmatched' : route;
    const status = c.res.status;
    metrics.httpRequests.inc({ method: c.req.method, route: label, status: String(status) });
    metrics.httpDuration.observe({ method: c.req.method, route: label }, (performance.now() - started) / 1000);
    if (status >= 500) logger.error({ method: c.req.method, route: label, status }, 'request failed');
    else if (logger.isLevelEnabled('debug')) logger.debug({ method: c.req.method, route: label, status }, 'request');
  });

  // POST /v1/keys/batch takes up to 10,000 subject ids: its limit fits them (or is LETHE_BODY_LIMIT_BYTES, if higher)
  const limits = [config.bodyLimitBytes, Math.max(config.bodyLimitBytes, KEY_BATCH_BODY_LIMIT_BYTES)].map((maxSize) => {
    const tooLarge = (c: Context) => problem(c, 'payload_too_large', `request bodies are limited to ${maxSize} bytes`);
    return { maxSize, tooLarge, streaming: bodyLimit({ maxSize, onError: tooLarge }) };
  });
  app.use('*', async (c, next) => {
    const limit = limits[c.req.method === 'POST' && c.req.path === KEY_BATCH_PATH ? 1 : 0]!;
    // On the Node server, decide from the raw headers when possible: asking the Fetch
    // Request for its body would make the adapter build one for every call.
    const headers = c.env?.incoming?.headers;
    if (headers && headers['transfer-encoding'] === undefined) {
      const length = Number(headers['content-length'] ?? 0);
      if (length > limit.maxSize) return limit.tooLarge(c);
      return next();
    }
    return limit.streaming(c, next);
  });
  // NUL, unpaired surrogates and over-deep JSON, for every route at once (bad-input.ts)
  app.use('*', rejectBadInput());

  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer' });

  app.openapi(
    createRoute({
      method: 'get',
      path: '/healthz',
      security: [], // public: no token
      tags: ['service'],
      summary: 'Liveness',
      responses: { 200: json(z.object({ status: z.literal('ok') }), 'The process answers') },
    }),
    (c) => c.json({ status: 'ok' as const }, 200),
  );

  const ReadyResponse = z.object({
    status: z.enum(['ok', 'degraded', 'unavailable']).openapi({ description: '`degraded` (still 200) while `checks.ledgerChain` is `failed`: the backup bucket\'s ledger chain was cut' }),
    checks: z.record(z.string(), z.enum(['ok', 'failed', 'off', 'pending', 'bypassable'])),
    warnings: z.array(z.string()).optional().openapi({ description: 'what does not stop readiness but an operator must know (the ledger chain not under Object Lock, destructions pending)' }),
    replica: ReplicaView.optional(),
  });
  app.openapi(
    createRoute({
      method: 'get',
      path: '/readyz',
      security: [], // public: no token
      tags: ['service'],
      summary: 'Readiness: the database and the object store answer',
      description:
        '`checks.ledgerLock` is `off` when the backup bucket\'s ledger chain is not retained under Object Lock, `bypassable` when lethe\'s own credential can remove retained versions; `checks.ledgerChain` is `failed` (status `degraded`) ' +
        'when the chain lacks a record this database stored there or its head was rolled back; `checks.ledgerWrites` is `pending` while ' +
        'destructions wait for their record to be durable in the backup store. Neither makes the service unready; both are named in `warnings`. ' +
        '`checks.listener` is `pending` while the replica event listener reconnects and `failed` (unready) once it has been down for longer than a short grace; ' +
        '`replica` names the listener, the index state, the last key destruction applied, the erasure worker, the indexer, and search freshness: ' +
        '`searchQueued` writer-registered entries not yet searchable, the oldest waiting `searchLagSeconds`.',
      responses: { 200: json(ReadyResponse, 'Ready'), 503: json(ReadyResponse, 'Not ready') },
    }),
    async (c) => {
      const checks = [
        { name: 'database', check: () => services.db.ping() },
        { name: 'objectStore', check: () => services.objects.ping() },
      ];
      const results: Record<string, 'ok' | 'failed'> = {};
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
      const search = await searchRead;
      const replica = replicaReadiness(services, Date.now(), search);
      const ok = Object.values(results).every((r) => r === 'ok') && replica.check !== 'failed';
      const warnings: string[] = [];
      const ledger: Record<string, 'ok' | 'off' | 'pending' | 'failed' | 'bypassable'> = {};
      const read = await ledgerRead;
      if ('status' in read) {
        const { status } = read;
        ledger.ledgerLock = !status.locked ? 'off' : status.bypassable ? 'bypassable' : 'ok';
        if (!status.locked) warnings.push(`the ledger chain is not under Object Lock: ${status.why}`);
        if (status.bypassable) warnings.push("lethe's own credential can remove retained versions of the ledger chain (the governance bypass or version deletes): give it a least-privilege policy (infra/minio/lethe-policy.json) or use compliance mode");
        ledger.ledgerWrites = status.pending > 0 ? 'pending' : 'ok';
        if (status.anchor.state !== 'unchecked') ledger.ledgerChain = status.anchor.state === 'cut' ? 'failed' : 'ok';
        if (status.anchor.state === 'cut') warnings.push(`the ledger chain in the backup bucket was cut: ${status.anchor.problem}; no destruction is recorded there until it is repaired (lethe backup repair-ledger)`);
        if (status.pending > 0) {
          warnings.push(`${status.pending} destruction(s) not yet durable in the backup store's ledger, the oldest since ${status.oldestPending?.toISOString() ?? '?'}`);
        }
      } else {
        logger.warn({ err: describeError(read.error) }, 'readiness: the ledger status could not be read');
      }
      return c.json(
        {
          status: ok ? (ledger.ledgerChain === 'failed' ? ('degraded' as const) : ('ok' as const)) : ('unavailable' as const),
          checks: { ...results, ...ledger, ...(replica.check ? { listener: replica.check } : {}) },
          ...(replica.warning || warnings.length > 0 ? { warnings: [...warnings, ...(replica.warning ? [replica.warning] : [])] } : {}),
          ...(replica.view ? { replica: replica.view } : {}),
        },
        ok ? 200 : 503,
      );
    },
  );

  app.get('/metrics', async (c) => {
    c.header('content-type', metrics.registry.contentType);
    return c.body(await metrics.registry.metrics());
  });

  registerKeyRoutes(app, services, tokens);
  registerAdminRoutes(app, services, tokens);
  registerLogRoutes(app, services, tokens);
  registerArtifactRoutes(app, services, tokens);
  registerBackupRoutes(app, services, tokens);
  registerErasureRoutes(app, services, tokens);
  registerCertificateRoutes(app, services, tokens);

  // doc31, plus what the generator leaves out: an operationId on every operation, and the servers.
  const documentConfig: Parameters<typeof app.getOpenAPI31Document>[0] = {
    openapi: '3.1.0',
    servers: [{ url: '/' }],
    info: {
      title: 'lethe',
      version: '1',
      license: { name: 'Apache-2.0', url: 'https://www.apache.org/licenses/LICENSE-2.0' },
      description:
        'Crypto-shredding key vault for AI-agent memory. Errors are RFC 9457 problem documents. ' +
        `Every JSON body is at most LETHE_BODY_LIMIT_BYTES (413 above) and ${MAX_JSON_DEPTH} levels deep; no string in a body, its object keys, ` +
        'the query or a path parameter may hold NUL (U+0000) or an unpaired UTF-16 surrogate (400 `validation_failed` naming the field). ' +
        'A known path with a method it does not take is 405 `method_not_allowed` with an `Allow` header. ' +
        'A database that is down, restarting, read-only or out of connections is 503 `unavailable` with `Retry-After`.',
    },
  };
  app.get('/openapi.json', (c) => c.json(withOperationIds(app.getOpenAPI31Document(documentConfig))));
  registerDocs(app);

  // The path is not echoed: it may carry a subject id.
  const allowed = allowedMethods(() => app.routes);
  app.notFound((c) => {
    const methods = allowed(c.req.path);
    if (methods.length > 0) return problem(c, 'method_not_allowed', `this path does not take ${c.req.method}`, { allow: methods.join(', ') });
    return problem(c, 'not_found', `no route for this ${c.req.method} request path`);
  });

  app.onError((err, c) => {
    if (isLetheError(err)) {
      if (err.code === 'internal' || err.code === 'decrypt_failed' || err.code === 'key_commitment_mismatch') {
        logger.error({ code: err.code, err: err.message }, 'integrity or internal error');
      }
      const retry = err.retryable && statusOf(err.code) === 503 ? { 'retry-after': String(RETRY_AFTER_SECONDS) } : undefined;
      return problem(c, err.code, err.message, retry);
    }
    if (err instanceof HTTPException) {
      // Hono's validator raises 400 for malformed JSON bodies.
      if (err.status === 413) return problem(c, 'payload_too_large', err.message);
      if (err.status === 401) return problem(c, 'unauthorized', 'a valid bearer token is required');
      // 400 malformed JSON, 415 a body that is not application/json: both are bad input
      if (err.status === 415) return problem(c, 'validation_failed', 'body: content-type must be application/json');
      if (err.status < 500) return problem(c, 'validation_failed', `body: ${err.message || 'malformed request'}`);
    }
    if (isTransientDatabaseError(err)) {
      logger.error({ err: describeError(err) }, 'database unavailable');
      return problem(c, 'unavailable', 'the database is not answering; try again', { 'retry-after': String(RETRY_AFTER_SECONDS) });
    }
    logger.error({ err: describeError(err) }, 'unhandled error');
    return problem(c, 'internal', 'internal error');
  });

  return app;
}

/** What a retryable 503 (a database outage, a retryable `unavailable`) asks the client to wait before trying again. */
const RETRY_AFTER_SECONDS = 1;

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

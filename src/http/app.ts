/**
 * The Hono application: middleware (request metrics and logs, body limit), the
 * feature routes, the OpenAPI document generated from their zod schemas, and the one
 * error handler that turns every failure into problem+json.
 */
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import { routePath } from 'hono/route';
import { isLetheError, isTransientDatabaseError } from '../errors.js';
import { describeError } from '../observability/logger.js';
import type { AuthEnv, TokenStore } from './auth.js';
import { MAX_JSON_DEPTH, rejectBadInput } from './bad-input.js';
import { registerDocs, withOperationIds } from './docs.js';
import { type McpHandler, registerMcpRoute } from './mcp.js';
import { allowedMethods } from './methods.js';
import { problem, statusOf } from './problem.js';
import { registerAdminRoutes } from './routes/admin/index.js';
import { registerArtifactRoutes } from './routes/artifacts/index.js';
import { registerBackupRoutes } from './routes/backups/index.js';
import { registerCertificateRoutes } from './routes/certificates/index.js';
import { registerErasureRoutes } from './routes/erasures/index.js';
import { KEY_BATCH_BODY_LIMIT_BYTES, KEY_BATCH_PATH, registerKeyRoutes } from './routes/keys/index.js';
import { peerCalls } from './routes/internal/peer-call.js';
import { register as registerPeerProbe } from './routes/internal/probe-for-peer.js';
import { register as registerPeerRank } from './routes/internal/rank-for-peer.js';
import { registerLogRoutes } from './routes/log/index.js';
import { registerServiceRoutes } from './routes/service/index.js';
import type { Services } from './services.js';

export interface HttpAppOptions {
  readonly services: Services;
  readonly tokens: TokenStore;
  /** `POST /mcp`, the MCP server over Streamable HTTP (src/http/mcp.ts): mounted when given. */
  readonly mcp?: McpHandler;
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

  // the replicas' own calls: signed (checked before a body is read), and not the clients' input rules
  app.use('/internal/*', peerCalls(services, config.replicaUrl));
  app.use('*', bodyLimits(config.bodyLimitBytes));
  // NUL, unpaired surrogates and over-deep JSON, for every route at once (bad-input.ts)
  const badInput = rejectBadInput();
  app.use('*', (c, next) => (c.req.path.startsWith('/internal/') ? next() : badInput(c, next)));

  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer' });

  registerServiceRoutes(app, services, tokens);

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
  // the replicas' own calls (sharded): signed by their key, not in the OpenAPI document
  registerPeerRank(app, services);
  registerPeerProbe(app, services);
  if (options.mcp) registerMcpRoute(app, tokens, options.mcp);

  // doc31, plus the servers; every operation's hand-written operationId is checked as it is served (docs.ts).
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
      return problem(c, err.code, err.message, retry, err.retryable);
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

/**
 * The body limit of each request: LETHE_BODY_LIMIT_BYTES; POST /v1/keys/batch takes up
 * to 10,000 subject ids, so its limit fits them (or is the setting, if higher).
 */
function bodyLimits(bodyLimitBytes: number): MiddlewareHandler {
  const limits = [bodyLimitBytes, Math.max(bodyLimitBytes, KEY_BATCH_BODY_LIMIT_BYTES)].map((maxSize) => {
    const tooLarge = (c: Context) => problem(c, 'payload_too_large', `request bodies are limited to ${maxSize} bytes`);
    return { maxSize, tooLarge, streaming: bodyLimit({ maxSize, onError: tooLarge }) };
  });
  return async (c, next) => {
    // /internal/ calls have their own limit, past their signature (peer-call.ts)
    if (c.req.path.startsWith('/internal/')) return next();
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
  };
}

/** What a retryable 503 (a database outage, a retryable `unavailable`) asks the client to wait before trying again. */
const RETRY_AFTER_SECONDS = 1;

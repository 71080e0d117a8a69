/**
 * `lethe serve`: the app behind the Hono routes on a Node HTTP server — HTTPS when
 * LETHE_TLS_CERT / LETHE_TLS_KEY are set (client certificates required when
 * LETHE_TLS_CLIENT_CA is), and never plain HTTP on a non-loopback address in production
 * unless LETHE_BEHIND_TLS_PROXY says a proxy terminates TLS in front.
 */
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { serve as serveNode, type ServerType } from '@hono/node-server';
import { type Config, ConfigError } from '../config/index.js';
import { checkPlainHttp, readServerTls, SERVER_TLS_OPTIONS, type ServerTls } from '../config/tls.js';
import { createHttpApp } from '../http/app.js';
import { TokenStore } from '../http/auth.js';
import type { McpHandler } from '../http/mcp.js';
import type { Logger } from '../observability/logger.js';
import { createMetrics } from '../observability/metrics.js';
import { type App, openApp } from './open.js';
import { guardUnhandledRejections } from './rejections.js';
import { s3Endpoints } from '../storage/s3-endpoint.js';

export interface RunningServer {
  readonly app: App;
  readonly port: number;
  readonly host: string;
  close(): Promise<void>;
}

/** HSTS on every HTTPS answer: a browser that reached lethe over TLS never falls back to plain HTTP for a year. */
const HSTS = 'max-age=31536000';

/** The listener options: HTTPS with the certificate, and with client verification when a client CA is given. */
function listenOptions(tls: ServerTls | undefined) {
  if (!tls) return {};
  return {
    createServer: createHttpsServer,
    serverOptions: {
      ...SERVER_TLS_OPTIONS,
      cert: tls.cert,
      key: tls.key,
      ...(tls.clientCa ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: true } : {}),
    },
  };
}

/** What every request gets while the app opens behind a bound port. */
function starting(): Response {
  return new Response(
    JSON.stringify({ type: 'about:blank', title: 'Service starting', status: 503, code: 'starting', detail: 'lethe is opening its vault: retry in a second' }),
    {
      status: 503,
      headers: { 'content-type': 'application/problem+json', 'retry-after': '1' },
    },
  );
}

/** A listener the system refused, as the configuration error it is (exit 2, naming PORT or HOST). */
function listenRefused(config: Config, e: unknown): unknown {
  const code = (e as { code?: unknown } | undefined)?.code;
  const where = `${config.host}:${config.port}`;
  if (code === 'EADDRINUSE') return new ConfigError([{ variable: 'PORT', message: `${where} is in use: stop what holds it, or choose another PORT` }]);
  if (code === 'EACCES') return new ConfigError([{ variable: 'PORT', message: `${where} needs privileges this process lacks: choose a PORT above 1023` }]);
  if (code === 'EADDRNOTAVAIL') return new ConfigError([{ variable: 'HOST', message: `${config.host} is not an address of this machine` }]);
  return e;
}

export interface ServeOptions {
  /** The version the MCP endpoint says it is (`lethe --version`). */
  readonly version?: string;
}

/**
 * `POST /mcp` (src/mcp/http.ts, loaded on its first request): the tools' client calls this
 * service's own app in process, with the caller's token, so each call meets its route's auth
 * and role checks as any request does, and never leaves the process (no TLS, no client
 * certificate, no Host header to trust). `url` is only how answers name the service.
 */
function mcpHandler(url: string, version: string, app: () => Pick<ReturnType<typeof createHttpApp>, 'fetch'>): McpHandler {
  const fetch = async (input: string, init: RequestInit) => app().fetch(new Request(input, init));
  return async ({ request, body, token, role, toolSet }) => {
    const { handleMcpRequest } = await import('../mcp/http.js');
    return handleMcpRequest({ request, body, token, forgetAs: role === 'writer' ? 'writer' : 'eraser', toolSet }, { baseUrl: url, fetch, version });
  };
}

export async function startServer(config: Config, logger: Logger, options: ServeOptions = {}): Promise<RunningServer> {
  // before anything opens: a refused listener, or unreadable TLS files, end the start (ConfigError: exit 2)
  checkPlainHttp(config);
  const tls = readServerTls(config);
  const tokens = config.tokensFile ? TokenStore.fromFile(config.tokensFile) : TokenStore.fromPairs(config.tokens);
  if (tokens.size === 0) {
    logger.warn('no tokens configured (LETHE_TOKENS or LETHE_TOKENS_FILE): every /v1 endpoint will answer 401');
  }
  // listening first: a port in use ends the start before anything is opened or created; until the
  // app is open every request answers 503 starting (the app's own /healthz and /readyz come with it)
  type Fetch = (request: Request, env?: unknown, ctx?: unknown) => Response | Promise<Response>;
  let handler: Fetch | undefined;
  const fetch: Fetch = (request, env, ctx) => handler?.(request, env, ctx) ?? starting();
  let server: ServerType;
  let port: number;
  try {
    port = await new Promise<number>((resolve, reject) => {
      server = serveNode({ fetch, port: config.port, hostname: config.host, ...listenOptions(tls) }, (info: AddressInfo) => resolve(info.port));
      server.once('error', reject);
    });
  } catch (e) {
    tls?.key.fill(0);
    throw listenRefused(config, e);
  }
  // the server's secure context holds the key now: zero the copy read from the file
  tls?.key.fill(0);
  const metrics = createMetrics({ defaultMetrics: true });
  guardUnhandledRejections(logger, (origin) => metrics.orphanedRejections.inc({ origin }));
  let app: App;
  try {
    // LETHE_AUTO_MIGRATE off: a schema behind drizzle/ stops the start (`lethe migrate` applies it)
    app = await openApp(config, { logger, metrics, migrate: config.autoMigrate });
  } catch (e) {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    throw e;
  }
  const url = `${tls ? 'https' : 'http'}://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  const http = createHttpApp({ services: app, tokens, mcp: mcpHandler(url, options.version ?? '0.0.0', () => http) });
  handler = tls
    ? async (request, env, ctx) => {
        const res = await http.fetch(request, env as never, ctx as never);
        try {
          res.headers.set('strict-transport-security', HSTS);
          return res;
        } catch {
          // immutable headers (a Response passed through as it came): copy it
          const copy = new Response(res.body, res);
          copy.headers.set('strict-transport-security', HSTS);
          return copy;
        }
      }
    : (request, env, ctx) => http.fetch(request, env as never, ctx as never);
  // where to go next, and which defaults this process runs on (never a secret: no credentials, no token)
  logger.info(
    {
      host: config.host,
      port,
      url,
      docs: `${url}/docs`,
      tls: tls
        ? tls.clientCa
          ? 'HTTPS, client certificates required (LETHE_TLS_CLIENT_CA)'
          : 'HTTPS'
        : config.behindTlsProxy
          ? 'plain HTTP behind a TLS proxy'
          : 'plain HTTP',
      database: config.databaseUrl ? 'PostgreSQL (DATABASE_URL)' : `embedded PGlite under ${config.dataDir}`,
      objectStore: config.s3
        ? `S3 at ${s3Endpoints(config.s3.endpoint)
            .map((u) => u.host)
            .join(', ')}`
        : `local folder under ${config.dataDir}`,
      keyring: config.keyringDir,
    },
    'lethe listening',
  );
  let closing: Promise<void> | undefined;
  return {
    app,
    port,
    host: config.host,
    close() {
      closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          // idle keep-alive connections would otherwise hold close() open
          (server as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.();
        });
        await app.close();
      })();
      return closing;
    },
  };
}

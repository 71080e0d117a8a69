/** `lethe serve`: the app behind the Hono routes on a Node HTTP server. */
import type { AddressInfo } from 'node:net';
import { serve as serveNode, type ServerType } from '@hono/node-server';
import type { Config } from '../config/index.js';
import { createHttpApp } from '../http/app.js';
import { TokenStore } from '../http/auth.js';
import type { Logger } from '../observability/logger.js';
import { createMetrics } from '../observability/metrics.js';
import { type App, openApp } from './open.js';
import { guardUnhandledRejections } from './rejections.js';

export interface RunningServer {
  readonly app: App;
  readonly port: number;
  readonly host: string;
  close(): Promise<void>;
}

export async function startServer(config: Config, logger: Logger): Promise<RunningServer> {
  const tokens = config.tokensFile ? TokenStore.fromFile(config.tokensFile) : TokenStore.fromPairs(config.tokens);
  if (tokens.size === 0) {
    logger.warn('no tokens configured (LETHE_TOKENS or LETHE_TOKENS_FILE): every /v1 endpoint will answer 401');
  }
  const metrics = createMetrics({ defaultMetrics: true });
  guardUnhandledRejections(logger, () => metrics.orphanedDatabaseRejections.inc());
  const app = await openApp(config, { logger, metrics });
  const http = createHttpApp({ services: app, tokens });
  let server: ServerType;
  const port = await new Promise<number>((resolve, reject) => {
    server = serveNode({ fetch: http.fetch, port: config.port, hostname: config.host }, (info: AddressInfo) => resolve(info.port));
    server.once('error', reject);
  });
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  // where to go next, and which defaults this process runs on (never a secret: no credentials, no token)
  logger.info(
    {
      host: config.host,
      port,
      url,
      docs: `${url}/docs`,
      database: config.databaseUrl ? 'PostgreSQL (DATABASE_URL)' : `embedded PGlite under ${config.dataDir}`,
      objectStore: config.s3 ? `S3 at ${new URL(config.s3.endpoint).host}` : `local folder under ${config.dataDir}`,
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

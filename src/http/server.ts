/** `lethe serve`: the vault behind the Hono app on a Node HTTP server. */
import type { AddressInfo } from 'node:net';
import { serve as serveNode, type ServerType } from '@hono/node-server';
import type { Config } from '../config/index.js';
import type { Logger } from '../observability/logger.js';
import { createMetrics } from '../observability/metrics.js';
import { openVault, type Vault } from '../vault/vault.js';
import { TokenStore } from './auth.js';
import { createApp } from './app.js';

export interface RunningServer {
  readonly vault: Vault;
  readonly port: number;
  readonly host: string;
  close(): Promise<void>;
}

export async function startServer(config: Config, logger: Logger): Promise<RunningServer> {
  const tokens = config.tokensFile ? TokenStore.fromFile(config.tokensFile) : TokenStore.fromPairs(config.tokens);
  if (tokens.size === 0) {
    logger.warn('no tokens configured (LETHE_TOKENS or LETHE_TOKENS_FILE): every /v1 endpoint will answer 401');
  }
  const vault = await openVault(config, { logger, metrics: createMetrics({ defaultMetrics: true }) });
  const app = createApp({ vault, tokens });
  let server: ServerType;
  const port = await new Promise<number>((resolve, reject) => {
    server = serveNode({ fetch: app.fetch, port: config.port, hostname: config.host }, (info: AddressInfo) => resolve(info.port));
    server.once('error', reject);
  });
  logger.info({ host: config.host, port }, 'lethe listening');
  let closing: Promise<void> | undefined;
  return {
    vault,
    port,
    host: config.host,
    close() {
      closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          // idle keep-alive connections would otherwise hold close() open
          (server as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.();
        });
        await vault.close();
      })();
      return closing;
    },
  };
}

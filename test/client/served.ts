/**
 * A test vault served over real HTTP on a free loopback port (the app in this process,
 * on @hono/node-server), for clients that call it as a user would: the `Lethe`
 * facade, the LangGraph store. The erasure worker runs (polling every 50 ms).
 */
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { openTestApp, type TestApp } from '../support/vault.js';

export interface ServedVault {
  readonly t: TestApp;
  readonly baseUrl: string;
  close(): Promise<void>;
}

export async function serveTestVault(options: Parameters<typeof openTestApp>[0] = {}): Promise<ServedVault> {
  const t = await openTestApp({ ...options, extraEnv: { LETHE_ERASURE_POLL_MS: '50', LETHE_LEASE_TTL_SECONDS: '2', ...options.extraEnv } });
  let server: ServerType | undefined;
  await new Promise<void>((resolve) => {
    server = serve({ fetch: t.http.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve());
  });
  return {
    t,
    baseUrl: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`,
    async close() {
      (server as { closeAllConnections?: () => void } | undefined)?.closeAllConnections?.();
      if (server) await new Promise((r) => server!.close(r));
      await t.close();
    },
  };
}

/**
 * A real Toxiproxy server for the fault-injection tests and the benchmarks: installed
 * from source by infra/toxiproxy.sh (cached after the first build), its API started on
 * a free loopback port, stopped afterwards. Proxies and toxics are made through its
 * HTTP API (infra/toxiproxy-client.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { freePort, installedBinary, stopChild } from './local-server.js';

export interface ToxiproxyServer {
  /** The HTTP API, e.g. http://127.0.0.1:41234. */
  readonly apiUrl: string;
  readonly port: number;
  stop(): Promise<void>;
}

/** The toxiproxy-server binary, building it from source the first time. Throws a plain message when it cannot. */
export function toxiproxyBinary(): string {
  return installedBinary('toxiproxy.sh', 'Toxiproxy is needed by the fault-injection tests');
}

/** Starts toxiproxy-server with its API on a free loopback port and waits until the API answers. */
export async function startToxiproxy(binary: string): Promise<ToxiproxyServer> {
  const port = await freePort();
  const child: ChildProcess = spawn(binary, ['-host', '127.0.0.1', '-port', String(port)], {
    // its per-request debug lines are noise; warnings and errors are kept for a failure message
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-8192);
  });
  const apiUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`toxiproxy-server exited with ${child.exitCode}: ${stderr}`);
    try {
      const res = await fetch(`${apiUrl}/version`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`toxiproxy-server did not answer in 30 s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    apiUrl,
    port,
    async stop() {
      await stopChild(child);
    },
  };
}

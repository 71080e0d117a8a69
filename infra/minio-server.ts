/**
 * A real MinIO server for the tests and the benchmarks: installed from source by
 * infra/minio.sh (cached after the first build), started on a free loopback port with
 * a temporary data directory, stopped afterwards.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, installedBinary, stopChild } from './local-server.js';

export interface MinioServer {
  readonly endpoint: string;
  readonly accessKey: string;
  readonly secretKey: string;
  readonly port: number;
  readonly dataDir: string;
  /** Freezes the process (SIGSTOP): connections are accepted by the kernel and never answered. */
  pause(): void;
  /** Thaws a paused process (SIGCONT). */
  unpause(): void;
  /** Stops the server; its data directory is removed unless `keepData`. */
  stop(options?: { keepData?: boolean }): Promise<void>;
}

/** The MinIO binary, building it from source the first time. Throws a plain message when it cannot. */
export function minioBinary(): string {
  return installedBinary('minio.sh', 'MinIO is needed by the tests');
}

/** Starts MinIO; pass `again` (a stopped server kept with keepData) to restart it in place. */
export async function startMinio(binary: string, again?: MinioServer): Promise<MinioServer> {
  const dataDir = again?.dataDir ?? mkdtempSync(path.join(tmpdir(), 'lethe-minio-'));
  const accessKey = again?.accessKey ?? 'lethe-test-access';
  const secretKey = again?.secretKey ?? `lethe-test-secret-${process.pid}`;
  const port = again?.port ?? (await freePort());
  const consolePort = await freePort();
  const child: ChildProcess = spawn(binary, ['server', dataDir, '--address', `127.0.0.1:${port}`, '--console-address', `127.0.0.1:${consolePort}`, '--quiet'], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', MINIO_ROOT_USER: accessKey, MINIO_ROOT_PASSWORD: secretKey, MINIO_BROWSER: 'off' },
    stdio: ['ignore', 'ignore', 'pipe'],
    // its own session: the kernel thaws a stopped process whose group becomes orphaned (SIGHUP + SIGCONT),
    // which would end a pause() while another process of the test runner's group exits
    detached: true,
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`MinIO exited with ${child.exitCode}: ${stderr}`);
    try {
      const res = await fetch(`${endpoint}/minio/health/ready`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`MinIO did not become ready in 60 s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    endpoint,
    accessKey,
    secretKey,
    port,
    dataDir,
    pause() {
      child.kill('SIGSTOP');
      waitForState(child.pid, 'T');
    },
    unpause() {
      child.kill('SIGCONT');
    },
    async stop(options = {}) {
      await stopChild(child, 10_000);
      if (!options.keepData) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Waits (at most 2 s) until /proc says the process is in `state`: a signal is delivered after kill() returns. */
function waitForState(pid: number | undefined, state: string): void {
  if (pid === undefined) throw new Error('MinIO has no process to pause');
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  for (let i = 0; i < 200; i++) {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (stat.slice(stat.lastIndexOf(')') + 2).startsWith(state)) return;
    Atomics.wait(sleeper, 0, 0, 10);
  }
  throw new Error(`MinIO (pid ${pid}) did not reach state ${state} in 2 s`);
}

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
  const child = await spawnMinio(binary, { port, drives: [dataDir], accessKey, secretKey }, '/minio/health/ready');
  return {
    endpoint: `http://127.0.0.1:${port}`,
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

/** What one MinIO process serves: its port, its drives (folders or, for a cluster, every server's drive URLs) and the root credential. */
export interface MinioProcess {
  readonly port: number;
  readonly drives: readonly string[];
  readonly accessKey: string;
  readonly secretKey: string;
}

/**
 * Spawns one MinIO process and waits (60 s at most) until `readyPath` answers 200 on
 * it; throws with its stderr when it exits or never gets there.
 */
export async function spawnMinio(binary: string, p: MinioProcess, readyPath: string, readyMs = 60_000): Promise<ChildProcess> {
  const consolePort = await freePort();
  const child: ChildProcess = spawn(
    binary,
    ['server', ...p.drives, '--address', `127.0.0.1:${p.port}`, '--console-address', `127.0.0.1:${consolePort}`, '--quiet'],
    {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        MINIO_ROOT_USER: p.accessKey,
        MINIO_ROOT_PASSWORD: p.secretKey,
        MINIO_BROWSER: 'off',
        // a cluster's drives are folders on the machine's root disk, which MinIO refuses outside CI
        MINIO_CI_CD: 'on',
        // in a container MinIO waits for a cluster's loopback addresses to resolve elsewhere; this names its own
        _MINIO_SERVER_LOCAL: `127.0.0.1:${p.port}`,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
      // its own session: the kernel thaws a stopped process whose group becomes orphaned (SIGHUP + SIGCONT),
      // which would end a pause() while another process of the test runner's group exits
      detached: true,
    },
  );
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const deadline = Date.now() + readyMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`MinIO exited with ${child.exitCode}: ${stderr}`);
    try {
      const res = await fetch(`http://127.0.0.1:${p.port}${readyPath}`);
      if (res.ok) return child;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`MinIO did not become ready in ${readyMs / 1000} s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
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

/**
 * A whole lethe deployment on one machine, on engines that scale: a PostgreSQL primary
 * and standby kept by pg_auto_failover (infra/pg-failover.ts), an erasure-coded MinIO
 * cluster of four servers with two drives each (infra/minio-cluster.ts), and `replicas`
 * `lethe serve` processes splitting the index into `shards` subject-hash shards
 * (LETHE_INDEX_SHARDS), each in its own process group. The cluster test suite and
 * infra/cluster/start.ts use it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../local-server.js';
import { type MinioCluster, startMinioCluster } from '../minio-cluster.js';
import { minioBinary } from '../minio-server.js';
import { type PgFailover, startPgFailover } from '../pg-failover.js';

export interface ClusterReplica {
  readonly url: string;
  readonly port: number;
  child: ChildProcess;
  /** Its stderr so far (the service's log lines). */
  log(): string;
}

export interface LetheCluster {
  readonly pg: PgFailover;
  readonly minio: MinioCluster;
  readonly replicas: ClusterReplica[];
  /** What every replica is started with (tokens, root key, database, store). */
  readonly env: Readonly<Record<string, string>>;
  /** SIGKILL to replica `i`'s process group: no goodbye, its shard leases run out. */
  kill(i: number): Promise<void>;
  /** Starts replica `i` again on its port; resolves once it is ready. */
  restart(i: number): Promise<void>;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  readonly replicas?: number;
  readonly shards?: number;
  /** More environment for every replica (tokens, timings). */
  readonly env?: Readonly<Record<string, string>>;
  /** How long to wait for each replica's readiness (default 120 s). */
  readonly readyMs?: number;
}

const ROOT = path.resolve(import.meta.dirname, '..', '..');

export async function startCluster(options: ClusterOptions = {}): Promise<LetheCluster> {
  const count = options.replicas ?? 3;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'lethe-cluster-'));
  const started: { pg?: PgFailover; minio?: MinioCluster } = {};
  const replicas: ClusterReplica[] = [];
  const stopAll = async () => {
    await Promise.all(replicas.map((r) => stopGroup(r.child)));
    await started.minio?.stop();
    await started.pg?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    [started.pg, started.minio] = await Promise.all([startPgFailover({ dbname: 'lethe' }), startMinioCluster(minioBinary())]);
    const { pg, minio } = started as { pg: PgFailover; minio: MinioCluster };
    await pg.replicatingSynchronously();
    const tag = randomBytes(4).toString('hex');
    const env: Record<string, string> = {
      DATABASE_URL: pg.url,
      S3_ENDPOINT: minio.endpoints.join(','),
      S3_ACCESS_KEY: minio.accessKey,
      S3_SECRET_KEY: minio.secretKey,
      S3_BUCKET: `lethe-${tag}`,
      S3_BACKUP_BUCKET: `lethe-bak-${tag}`,
      LETHE_DATA_DIR: dataDir,
      LETHE_ROOT_KEY: randomBytes(32).toString('base64'),
      LETHE_INDEX_SHARDS: String(options.shards ?? 2 * count),
      LETHE_LOG_LEVEL: 'info',
      ...options.env,
    };
    // the first replica migrates and creates the buckets (Object Lock on the ledger) alone; the others start after it
    for (let i = 0; i < count; i++) {
      const port = await freePort();
      const replica = startReplica(env, port);
      replicas.push(replica);
      await ready(replica, options.readyMs ?? 120_000);
    }
    return {
      pg,
      minio,
      replicas,
      env,
      async kill(i) {
        await killGroup(replicas[i]!.child);
      },
      async restart(i) {
        const again = startReplica(env, replicas[i]!.port);
        replicas[i] = again;
        await ready(again, options.readyMs ?? 120_000);
      },
      stop: stopAll,
    };
  } catch (e) {
    await stopAll().catch(() => undefined);
    throw e;
  }
}

function startReplica(env: Record<string, string>, port: number): ClusterReplica {
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env, PORT: String(port), LETHE_REPLICA_URL: url },
    stdio: ['ignore', 'ignore', 'pipe'],
    // its own process group: a kill reaches the service and anything it started
    detached: true,
  });
  let log = '';
  child.stderr?.on('data', (d: Buffer) => {
    log = (log + d.toString()).slice(-200_000);
  });
  return { url, port, child, log: () => log };
}

/** Waits until the replica answers /readyz 200, or fails naming its last log lines. */
async function ready(r: ClusterReplica, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (r.child.exitCode !== null) throw new Error(`replica ${r.url} exited with ${r.child.exitCode}:\n${r.log().slice(-4000)}`);
    const status = await fetch(`${r.url}/readyz`, { signal: AbortSignal.timeout(2000) }).then(
      (res) => res.status,
      () => 0,
    );
    if (status === 200) return;
    if (Date.now() > deadline) throw new Error(`replica ${r.url} not ready after ${timeoutMs} ms:\n${r.log().slice(-4000)}`);
    await new Promise((res) => setTimeout(res, 250));
  }
}

async function killGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    // already gone
  }
  await exited;
}

async function stopGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  try {
    process.kill(-child.pid!, 'SIGTERM');
  } catch {
    return;
  }
  const t = setTimeout(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }, 10_000);
  await exited;
  clearTimeout(t);
}

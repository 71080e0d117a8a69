/**
 * A distributed, erasure-coded MinIO cluster on loopback for the tests: `servers`
 * MinIO processes (4 by default) with `drives` folders each (2), one erasure set over
 * all of them. With 8 drives MinIO keeps 4 parity shards: writes need 5 drives, reads
 * 4, so the cluster takes writes with one server down and only reads with two.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, stopChild } from './local-server.js';
import { type MinioProcess, spawnMinio } from './minio-server.js';

export interface MinioCluster {
  /** Every server's endpoint, in server order. */
  readonly endpoints: readonly string[];
  readonly accessKey: string;
  readonly secretKey: string;
  /** Kills server `i` with SIGKILL: no goodbye to its peers or clients. */
  kill(i: number): Promise<void>;
  /** Starts server `i` again on its port and drives (after kill); resolves once it serves reads. */
  restart(i: number): Promise<void>;
  /** Resolves when the cluster (asked through server `via`) has its write quorum again. */
  writable(via?: number): Promise<void>;
  /** Stops every server and removes the drives. */
  stop(): Promise<void>;
}

export async function startMinioCluster(binary: string, options: { servers?: number; drives?: number } = {}): Promise<MinioCluster> {
  const servers = options.servers ?? 4;
  const drives = options.drives ?? 2;
  const root = mkdtempSync(path.join(tmpdir(), 'lethe-minio-cluster-'));
  const ports: number[] = [];
  for (let i = 0; i < servers; i++) ports.push(await freePort());
  const urls = ports.flatMap((port, i) =>
    Array.from({ length: drives }, (_, d) => {
      const folder = path.join(root, `server-${i}`, `drive-${d}`);
      mkdirSync(folder, { recursive: true });
      return `http://127.0.0.1:${port}${folder}`;
    }),
  );
  const credential = { accessKey: 'lethe-test-access', secretKey: `lethe-test-secret-${process.pid}` };
  const processOf = (i: number): MinioProcess => ({ port: ports[i]!, drives: urls, ...credential });
  const children: Array<ChildProcess | undefined> = [];
  try {
    // every server waits for its peers: start them all, then wait for each to see the cluster
    const started = await Promise.all(ports.map((_, i) => spawnMinio(binary, processOf(i), '/minio/health/cluster', 120_000)));
    children.push(...started);
  } catch (e) {
    rmSync(root, { recursive: true, force: true });
    throw e;
  }
  const endpoints = ports.map((port) => `http://127.0.0.1:${port}`);
  return {
    endpoints,
    ...credential,
    async kill(i) {
      const child = children[i];
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    },
    async restart(i) {
      // serving once it reads through the cluster (until then it answers 503, not initialized); writes are `writable`'s question
      children[i] = await spawnMinio(binary, processOf(i), '/minio/health/cluster/read', 120_000);
    },
    async writable(via = 0) {
      const deadline = Date.now() + 120_000;
      for (;;) {
        const res = await fetch(`${endpoints[via]}/minio/health/cluster`).catch(() => undefined);
        if (res?.status === 200) return;
        if (Date.now() > deadline) throw new Error(`the MinIO cluster did not regain its write quorum in 120 s (via server ${via})`);
        await new Promise((r) => setTimeout(r, 200));
      }
    },
    async stop() {
      await Promise.all(children.map((c) => (c ? stopChild(c, 10_000) : undefined)));
      rmSync(root, { recursive: true, force: true });
    },
  };
}

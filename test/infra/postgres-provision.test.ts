/**
 * infra/postgres-cluster.mjs: what npm test does when no PostgreSQL answers. Here against
 * an admin URL on a loopback port nothing listens on and a cache folder made up for the
 * test: a private cluster of the machine's PostgreSQL server (infra/postgres.sh) is
 * initialized there, started on a free port, answers a query, and is stopped with nothing
 * left running. The suite's own PostgreSQL is never touched.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../infra/free-port.mjs';
import { ensurePostgres, type PrivateCluster, postmasterPid, running, serverBinDir, startPrivateCluster } from '../../infra/postgres-cluster.mjs';
import { adminUrl } from '../support/pg.js';

const dirs: string[] = [];
const clusters: PrivateCluster[] = [];
afterAll(() => {
  for (const c of clusters) c.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A cache root the cluster's user can reach (as root, initdb and postgres run as the user postgres). */
function cacheRoot(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'lethe-pg-cache-'));
  chmodSync(dir, 0o755);
  dirs.push(dir);
  return dir;
}

async function deadUrl(): Promise<string> {
  return `postgres://postgres@127.0.0.1:${await freePort()}/postgres`;
}

async function answer(url: string): Promise<{ one: number; user: string; port: string }> {
  const sql = postgres(url, { max: 1, connect_timeout: 5, onnotice: () => {} });
  try {
    const [row] = await sql<{ one: number; user: string; port: string }[]>`select 1 as one, current_user as user, current_setting('port') as port`;
    return row!;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

describe('a private PostgreSQL cluster when none answers (infra/postgres-cluster.mjs)', () => {
  it('initializes one under the cache folder, starts it on a free port, and stops it leaving nothing running; the next run reuses the folder', async () => {
    const root = cacheRoot();
    const dead = await deadUrl();
    const env = { ...process.env, DATABASE_URL_ADMIN: dead, LETHE_POSTGRES_CACHE: root };
    const said: string[] = [];
    const first = await ensurePostgres({ env, say: (line) => said.push(line) });
    expect(first.provisioned).toBe(true);
    if (!first.provisioned) return;
    clusters.push(first.cluster);
    const { cluster } = first;
    expect(cluster.dataDir.startsWith(path.join(root, 'postgres-'))).toBe(true);
    expect(path.basename(cluster.dataDir)).toBe('data');
    expect(cluster.initialized).toBe(true);
    expect(said).toEqual([
      expect.stringMatching(
        new RegExp(
          `^lethe: PostgreSQL: none answers at ${new URL(dead).host} \\(ECONNREFUSED\\); started a private cluster at ${cluster.dataDir} on port ${cluster.port} \\(.*initialized in [\\d.]+ s, started in [\\d.]+ s`,
        ),
      ),
    ]);
    // a password of its own, kept beside the folder (0600), never inside it
    expect(first.url).toMatch(new RegExp(`^postgres://postgres:[0-9a-f]{48}@127\\.0\\.0\\.1:${cluster.port}/postgres$`));
    expect(readFileSync(`${cluster.dataDir}.password`, 'utf8').trim()).toBe(new URL(first.url).password);
    expect(statSync(`${cluster.dataDir}.password`).mode & 0o077).toBe(0);
    expect(await answer(first.url)).toEqual({ one: 1, user: 'postgres', port: String(cluster.port) });
    // over TCP, without the password: refused (no trust on 127.0.0.1 for whoever finds the port)
    const noPassword = new URL(first.url);
    noPassword.password = '';
    await expect(answer(noPassword.toString())).rejects.toThrow(/password/i);
    const pid = cluster.pid!;
    expect(running(pid)).toBe(true);
    expect(existsSync(`${cluster.dataDir}.owner`)).toBe(true);

    cluster.stop();
    expect(running(pid)).toBe(false);
    expect(postmasterPid(cluster.dataDir)).toBeUndefined();
    expect(existsSync(path.join(cluster.dataDir, 'postmaster.pid'))).toBe(false);
    expect(existsSync(`${cluster.dataDir}.owner`)).toBe(false);

    // the second run: no initdb, the same folder, a port of its own
    const second = await ensurePostgres({ env, say: () => {} });
    if (!second.provisioned) throw new Error('the second run did not start the cluster');
    clusters.push(second.cluster);
    expect(second.cluster.dataDir).toBe(cluster.dataDir);
    expect(second.cluster.initialized).toBe(false);
    expect((await answer(second.url)).one).toBe(1);
    const pid2 = second.cluster.pid!;
    second.cluster.stop();
    expect(running(pid2)).toBe(false);
  });

  it('leaves a PostgreSQL that answers alone', async () => {
    const said: string[] = [];
    const r = await ensurePostgres({
      env: { DATABASE_URL_ADMIN: adminUrl(), LETHE_POSTGRES_CACHE: '/nonexistent/lethe-cache' },
      say: (line) => said.push(line),
    });
    expect(r).toEqual({ url: adminUrl(), provisioned: false });
    expect(said).toEqual([`lethe: PostgreSQL answers at ${new URL(adminUrl()).host}`]);
  });

  it('gives a second run at the same time a folder of its own, and takes over a cluster a dead run left running', async () => {
    const root = cacheRoot();
    const binDir = serverBinDir();
    const first = await startPrivateCluster({ binDir, cacheRoot: root });
    clusters.push(first);
    const second = await startPrivateCluster({ binDir, cacheRoot: root });
    clusters.push(second);
    expect(path.basename(second.dataDir)).toBe('data-2');
    expect(second.port).not.toBe(first.port);
    expect((await answer(second.url)).one).toBe(1);
    second.stop();

    // a run that died (its pid is gone) left its cluster running in data
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    expect(running(dead)).toBe(false);
    first.stop();
    const orphan = await startPrivateCluster({ binDir, cacheRoot: root, owner: dead });
    const orphanPid = orphan.pid!;
    expect(running(orphanPid)).toBe(true);
    const next = await startPrivateCluster({ binDir, cacheRoot: root });
    clusters.push(next, orphan);
    expect(next.dataDir).toBe(orphan.dataDir);
    expect(running(orphanPid)).toBe(false);
    expect((await answer(next.url)).one).toBe(1);
    next.stop();
    expect(running(next.pid!)).toBe(false);
  });
});

/**
 * A PostgreSQL primary and standby kept by pg_auto_failover (Debian's
 * postgresql-<major>-auto-failover, installed by infra/pg-auto-failover.sh) on loopback,
 * for the tests: a monitor and two nodes, each a `pg_autoctl ... --run` process in its
 * own process group, under a temporary folder. As root the processes run as the user
 * `postgres` (initdb refuses root).
 *
 * Replication is pg_auto_failover's default: synchronous (`ANY 1 (standby)`) while both
 * nodes are up; a primary left alone (`wait_primary`) commits without its standby. The
 * monitor's health checks are shortened (a check a second, a node unhealthy after 5 s)
 * so that a failover takes seconds, not the default half minute.
 *
 * Trust authentication on 127.0.0.1 only, for the run's duration: the data is the test's.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { freePort, installedBinary, stopChild } from './local-server.js';

export interface PgFailoverNode {
  readonly name: string;
  readonly port: number;
}

export interface PgFailover {
  /** lethe's DATABASE_URL: both nodes, the primary chosen at connect (`target_session_attrs=primary`). */
  readonly url: string;
  readonly nodes: readonly PgFailoverNode[];
  /** The index of the node the monitor has as primary now; undefined while none is. */
  primary(): Promise<number | undefined>;
  /** Waits until node a is primary and b its synchronous standby (`sync_state` quorum or sync). */
  replicatingSynchronously(timeoutMs?: number): Promise<void>;
  /** SIGKILL to node `i`'s pg_autoctl and its postgres. */
  kill(i: number): Promise<void>;
  /** Waits until a node other than `i` takes writes; its index. */
  failedOver(from: number, timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

const PRIMARY_STATES = new Set(['single', 'primary', 'wait_primary']);

export async function startPgFailover(options: { dbname?: string } = {}): Promise<PgFailover> {
  const autoctl = installedBinary('pg-auto-failover.sh', 'pg_auto_failover is needed by the failover tests');
  const bin = installedBinary('postgres.sh', 'a PostgreSQL server is needed by the failover tests');
  const dbname = options.dbname ?? 'lethe';
  const root = mkdtempSync(path.join(tmpdir(), 'lethe-pg-failover-'));
  const asUser = process.getuid?.() === 0 ? userIds('postgres') : undefined;
  if (asUser) chownSync(root, asUser.uid, asUser.gid);
  const env = {
    PATH: `${bin}:${process.env.PATH ?? ''}`,
    HOME: root,
    XDG_CONFIG_HOME: path.join(root, 'config'),
    XDG_DATA_HOME: path.join(root, 'data'),
    XDG_RUNTIME_DIR: path.join(root, 'run'),
  };
  for (const d of [env.XDG_CONFIG_HOME, env.XDG_DATA_HOME, env.XDG_RUNTIME_DIR]) {
    mkdirSync(d, { recursive: true, mode: 0o700 });
    if (asUser) chownSync(d, asUser.uid, asUser.gid);
  }
  const children = new Map<string, ChildProcess>();
  const logs = new Map<string, string>();
  const run = (name: string, args: string[]) => {
    const child = spawn(autoctl, [...args, '--run'], {
      cwd: root,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
      ...(asUser ? { uid: asUser.uid, gid: asUser.gid } : {}),
    });
    logs.set(name, '');
    child.stderr?.on('data', (d: Buffer) => logs.set(name, (logs.get(name) ?? '').slice(-20_000) + d.toString()));
    child.on('error', (e) => logs.set(name, `${logs.get(name) ?? ''}\n${e.message}`));
    children.set(name, child);
  };
  // each pg_autoctl leads a process group (its postgres and workers): a run that ends any way takes them with it
  const killGroups = () => {
    for (const child of children.values()) if (child.pid && child.exitCode === null && child.signalCode === null) killGroup(child.pid, 'SIGKILL');
  };
  process.once('exit', killGroups);
  const common = ['--hostname', '127.0.0.1', '--listen', '127.0.0.1', '--auth', 'trust', '--no-ssl', '--pgctl', path.join(bin, 'pg_ctl')];
  const monitorPort = await freePort();
  const monitorUrl = `postgres://postgres@127.0.0.1:${monitorPort}/pg_auto_failover`;
  const nodes: PgFailoverNode[] = [
    { name: 'a', port: await freePort() },
    { name: 'b', port: await freePort() },
  ];
  const primaryUrl = `postgres://postgres@127.0.0.1:${nodes[0]!.port}/postgres`;
  const monitor = postgres(monitorUrl, { max: 1, onnotice: () => {}, connect_timeout: 2 });
  const failed = (what: string) => new Error(`${what}; pg_autoctl said:\n${[...logs].map(([n, l]) => `[${n}] ${l.slice(-2_000)}`).join('\n')}`);
  const states = async () => {
    const rows = await monitor<{ nodename: string; reportedstate: string; goalstate: string }[]>`
      select nodename, reportedstate::text, goalstate::text from pgautofailover.node`;
    return new Map(rows.map((r) => [r.nodename, r]));
  };
  const stop = async () => {
    await monitor.end({ timeout: 1 }).catch(() => {});
    await Promise.all(
      [...children.values()].map(async (c) => {
        if (c.pid) killGroup(c.pid, 'SIGTERM');
        await stopChild(c, 10_000);
        if (c.pid) killGroup(c.pid, 'SIGKILL');
      }),
    );
    process.removeListener('exit', killGroups);
    for (const node of nodes) killPostmaster(path.join(root, node.name));
    killPostmaster(path.join(root, 'monitor'));
    rmSync(root, { recursive: true, force: true });
  };
  try {
    run('monitor', ['create', 'monitor', '--pgdata', path.join(root, 'monitor'), '--pgport', String(monitorPort), ...common]);
    await until(
      60_000,
      async () => (await monitor`select 1 from pgautofailover.formation limit 1`.catch(() => [])).length > 0,
      () => failed('the monitor did not start'),
    );
    for (const [setting, value] of Object.entries(FAST_MONITOR)) await monitor.unsafe(`alter system set pgautofailover.${setting} = ${value}`);
    await monitor`select pg_reload_conf()`;
    const nodeArgs = (n: PgFailoverNode) => [
      'create',
      'postgres',
      '--pgdata',
      path.join(root, n.name),
      '--pgport',
      String(n.port),
      '--name',
      n.name,
      '--dbname',
      dbname,
      '--monitor',
      `postgres://autoctl_node@127.0.0.1:${monitorPort}/pg_auto_failover?sslmode=disable`,
      ...common,
    ];
    run('a', nodeArgs(nodes[0]!));
    await until(
      90_000,
      async () => (await states().catch(() => new Map())).get('a')?.reportedstate === 'single',
      () => failed('node a did not become a single primary'),
    );
    run('b', nodeArgs(nodes[1]!));
    // the standby's base backup waits for a checkpoint: ask for one now and then instead of waiting minutes
    await until(
      90_000,
      async () => {
        await checkpoint(primaryUrl);
        const s = await states().catch(() => new Map());
        return s.get('a')?.reportedstate === 'primary' && s.get('b')?.reportedstate === 'secondary';
      },
      () => failed('node b did not become a secondary'),
      1_000,
    );
  } catch (e) {
    await stop();
    throw e;
  }
  // the standby first: every connection has to pass over a node that does not take writes, before the switch and after it
  const url = `postgres://postgres@${[...nodes]
    .reverse()
    .map((n) => `127.0.0.1:${n.port}`)
    .join(',')}/${dbname}?target_session_attrs=primary`;
  const primary = async () => {
    const s = await states();
    const at = nodes.findIndex((n) => PRIMARY_STATES.has(s.get(n.name)?.reportedstate ?? ''));
    return at < 0 ? undefined : at;
  };
  return {
    url,
    nodes,
    primary,
    async replicatingSynchronously(timeoutMs = 60_000) {
      await until(
        timeoutMs,
        async () => {
          const s = await states().catch(() => new Map());
          if (s.get('a')?.reportedstate !== 'primary' || s.get('b')?.reportedstate !== 'secondary') return false;
          return synchronous(primaryUrl);
        },
        () => failed('the standby did not replicate synchronously'),
      );
    },
    async kill(i) {
      const node = nodes[i]!;
      const child = children.get(node.name);
      if (child?.pid && child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        killGroup(child.pid, 'SIGKILL');
        await exited;
      }
      killPostmaster(path.join(root, node.name));
    },
    async failedOver(from, timeoutMs = 60_000) {
      let found = -1;
      await until(
        timeoutMs,
        async () => {
          for (const [i, n] of nodes.entries()) {
            if (i === from) continue;
            if (await writable(`postgres://postgres@127.0.0.1:${n.port}/postgres`)) {
              found = i;
              return true;
            }
          }
          return false;
        },
        () => failed(`no node took writes in ${timeoutMs / 1000} s after node ${nodes[from]!.name}`),
      );
      return found;
    },
    stop,
  };
}

/** The monitor's health checks, shortened: a failover in seconds. */
const FAST_MONITOR = {
  health_check_period: 1000,
  health_check_timeout: 2000,
  health_check_max_retries: 2,
  health_check_retry_delay: 500,
  node_considered_unhealthy_timeout: 5000,
  primary_demote_timeout: 5000,
};

function userIds(name: string): { uid: number; gid: number } {
  const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

/** SIGKILL to the postmaster a data folder's postmaster.pid names, if it still runs. */
function killPostmaster(pgdata: string): void {
  try {
    const pidFile = path.join(pgdata, 'postmaster.pid');
    const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    // a pid outlives its process and may be reused: only a postgres serving this folder is signalled
    if (pid > 0 && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(pgdata)) process.kill(pid, 'SIGKILL');
    rmSync(pidFile, { force: true });
  } catch {
    // no folder, no pid file, or the process is gone
  }
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is gone
  }
}

/** Whether the primary at `url` has a standby confirming its commits (`sync_state` quorum or sync). */
async function synchronous(url: string): Promise<boolean> {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 2 });
  try {
    const rows = await sql<{ sync_state: string }[]>`select sync_state from pg_stat_replication`;
    const [names] = await sql<{ names: string }[]>`select current_setting('synchronous_standby_names') as names`;
    return (names?.names ?? '') !== '' && rows.some((r) => r.sync_state === 'quorum' || r.sync_state === 'sync');
  } catch {
    return false;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

async function checkpoint(url: string): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 2 });
  await sql`checkpoint`.catch(() => {});
  await sql.end({ timeout: 1 }).catch(() => {});
}

async function writable(url: string): Promise<boolean> {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 1 });
  try {
    const [row] = await sql<{ recovery: boolean }[]>`select pg_is_in_recovery() as recovery`;
    return row?.recovery === false;
  } catch {
    return false;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

async function until(timeoutMs: number, done: () => Promise<boolean>, failure: () => Error, everyMs = 250): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw failure();
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

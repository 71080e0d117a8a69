/**
 * PostgreSQL for `npm test` when none answers: a private cluster of the machine's
 * PostgreSQL server (infra/postgres.sh prints its bin folder, installing Debian's
 * postgresql package when there is none), initialized once under the cache folder
 * (${LETHE_POSTGRES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lethe}/postgres-<major>/data,
 * the root MinIO's build is cached under), started with pg_ctl on a free 127.0.0.1 port
 * for one run and stopped (pg_ctl stop -m fast) when the run ends.
 *
 * The cluster: superuser `postgres` with a random password (data.password beside the
 * folder, 0600, never inside it: in the URL the suite gets), trust only on its unix socket
 * (in its own 0700 folder), listening on 127.0.0.1 only — another user of the machine who
 * finds the port meets a password, not a superuser. Port and socket folder are given on
 * pg_ctl's command line: nothing is written into the folder the server's user owns, UTF8 with the C.UTF-8 locale (as Debian's own
 * cluster), its server log in server.log next to it. initdb and postgres refuse to run as
 * root: as root they run as the user `postgres` (LETHE_POSTGRES_USER names another;
 * `nobody` when there is no `postgres`), which then owns the cluster folder; when that
 * user cannot reach the cache folder (root's home is private), the cluster lives under
 * /var/cache/lethe instead.
 *
 * A run owns its cluster through an owner file (data.owner: its pid): a second run at the
 * same time takes the next folder (data-2, ...); a cluster left running by a run that
 * died is stopped and started again.
 *
 * Plain Node, no dependency: scripts/test.mjs imports it; `node infra/postgres-cluster.mjs
 * start --owner <pid>` / `stop <folder>` are for .ci/run.
 */
import { randomBytes } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import path from 'node:path';
import { freePort } from './free-port.mjs';
import { fileURLToPath } from 'node:url';

export const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const here = path.dirname(fileURLToPath(import.meta.url));
const seconds = (since) => Math.round((Date.now() - since) / 100) / 10;

/** The URL the suite's harness connects to: DATABASE_URL_ADMIN, else DATABASE_URL, else 127.0.0.1:5432 as `postgres`. */
export function adminUrlFrom(env = process.env) {
  return env.DATABASE_URL_ADMIN || env.DATABASE_URL || DEFAULT_ADMIN_URL;
}

/** Where a postgres:// URL connects: { host, port, socket } (socket: the unix socket's path, for a host that is a folder). */
export function endpointOf(url) {
  const u = new URL(url);
  const host = u.searchParams.get('host') || decodeURIComponent(u.hostname) || 'localhost';
  const port = Number(u.searchParams.get('port') || u.port || 5432);
  const bare = host.replace(/^\[|\]$/g, '');
  return {
    host: bare,
    port,
    socket: bare.startsWith('/') ? path.join(bare, `.s.PGSQL.${port}`) : undefined,
    shown: host.startsWith('/') ? `${host} (port ${port})` : `${host}:${port}`,
  };
}

/**
 * Whether a PostgreSQL server answers at `url`: sends the 8-byte SSLRequest and reads the
 * one-byte answer ('S' or 'N'). Resolves { answers: true } or { answers: false, why }
 * (nothing listens, the connection timed out or was closed), or { answers: false, why,
 * other: true } when something answers that is not PostgreSQL.
 */
export function probe(url, timeoutMs = 3_000) {
  const where = endpointOf(url);
  return new Promise((resolve) => {
    const socket = where.socket ? createConnection(where.socket) : createConnection({ host: where.host, port: where.port });
    let done = false;
    const finish = (result) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => finish({ answers: false, why: `no answer in ${timeoutMs / 1000} s` }), timeoutMs);
    socket.on('connect', () => {
      const request = Buffer.alloc(8);
      request.writeInt32BE(8, 0);
      request.writeInt32BE(80877103, 4);
      socket.write(request);
    });
    socket.on('data', (data) => {
      const reply = String.fromCharCode(data[0]);
      finish(reply === 'S' || reply === 'N' ? { answers: true } : { answers: false, other: true, why: 'what answers there is not PostgreSQL' });
    });
    socket.on('error', (e) => finish({ answers: false, why: e.code ?? e.message }));
    socket.on('close', () => finish({ answers: false, why: 'the connection was closed without an answer' }));
  });
}

/** The bin folder of an installed PostgreSQL server (infra/postgres.sh, which installs it when missing). Throws with its message. */
export function serverBinDir(env = process.env) {
  const r = spawnSync('bash', [path.join(here, 'postgres.sh')], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const dir = r.stdout?.trim();
  if (r.status !== 0 || !dir) {
    throw new Error(
      `no PostgreSQL server could be found or installed (infra/postgres.sh, ${r.error?.message ?? `exit ${r.status}`}; its message above says why): ` +
        "run 'apt-get install -y postgresql' as root, set LETHE_POSTGRES_BIN_DIR to a folder with initdb, pg_ctl and postgres, or start a PostgreSQL and set DATABASE_URL_ADMIN to it",
    );
  }
  return dir;
}

/** The cache root: LETHE_POSTGRES_CACHE, else the one MinIO's build uses (${XDG_CACHE_HOME:-$HOME/.cache}/lethe). */
export function cacheRootFrom(env = process.env) {
  return env.LETHE_POSTGRES_CACHE || path.join(env.XDG_CACHE_HOME || path.join(env.HOME || '/tmp', '.cache'), 'lethe');
}

/** Who runs initdb and postgres: this process, or (as root) an unprivileged user. */
function runner(env) {
  if (process.getuid?.() !== 0) return { user: undefined, wrap: (command, args) => [command, args] };
  const user = env.LETHE_POSTGRES_USER || (spawnSync('id', ['-u', 'postgres']).status === 0 ? 'postgres' : 'nobody');
  const id = (flag) => Number(execFileSync('id', [flag, user], { encoding: 'utf8' }).trim());
  const uid = id('-u');
  const gid = id('-g');
  if (uid === 0) throw new Error(`LETHE_POSTGRES_USER=${user} is root: PostgreSQL refuses to run as root, name an unprivileged user`);
  // runuser (util-linux) lives in /usr/sbin, which a non-login PATH may lack; setpriv (util-linux too) otherwise
  const runuser = ['runuser', '/usr/sbin/runuser', '/sbin/runuser'].find((c) => spawnSync(c, ['--help'], { stdio: 'ignore' }).error === undefined);
  return {
    user,
    uid,
    gid,
    wrap: (command, args) =>
      runuser
        ? [runuser, ['-u', user, '--', command, ...args]]
        : ['setpriv', ['--reuid', String(uid), '--regid', String(gid), '--init-groups', command, ...args]],
  };
}

function run(as, command, args, { cwd, env, what }) {
  const [c, a] = as.wrap(command, args);
  const r = spawnSync(c, a, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.status !== 0) {
    const output = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim();
    throw new Error(`${what} failed (${r.error?.message ?? `exit ${r.status}`})${output ? `:\n${output}` : ''}`);
  }
  return r.stdout;
}

/** Whether the unprivileged user can reach `dir` (every folder above it lets them through). */
function reachable(as, dir) {
  if (!as.user) return true;
  const [c, a] = as.wrap('test', ['-x', dir]);
  return spawnSync(c, a, { stdio: 'ignore', cwd: '/' }).status === 0;
}

const alive = (pid) => {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
};

/** Whether process `pid` runs (a zombie, ended and not yet reaped, does not). */
export function running(pid) {
  if (!alive(pid)) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false; // gone between the two looks
  }
}

function waitUntilGone(pid, ms) {
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  for (const deadline = Date.now() + ms; running(pid) && Date.now() < deadline; ) Atomics.wait(sleeper, 0, 0, 20);
}

/** The postmaster's pid from the cluster's postmaster.pid, when it is running. */
export function postmasterPid(dataDir) {
  try {
    const pid = Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return alive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Takes the first folder (data, data-2, ...) no live run owns; returns { dataDir, ownerFile }. */
function claimSlot(base, owner) {
  for (let n = 1; n <= 16; n++) {
    const dataDir = path.join(base, n === 1 ? 'data' : `data-${n}`);
    const ownerFile = `${dataDir}.owner`;
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        writeFileSync(ownerFile, `${owner}\n`, { flag: 'wx' });
        return { dataDir, ownerFile };
      } catch (e) {
        if (e.code !== 'EEXIST') throw e;
        const holder = Number(readFileSync(ownerFile, 'utf8').trim());
        if (alive(holder)) break; // in use: the next folder
        unlinkSync(ownerFile); // its run died: take it over
      }
    }
  }
  throw new Error(`all 16 private PostgreSQL clusters under ${base} are in use by runs that are still alive`);
}

/**
 * Starts a private cluster (initializing it the first time). Options: binDir (the server's
 * bin folder), cacheRoot, env (for LETHE_POSTGRES_USER), owner (the pid the cluster is
 * claimed for; this process by default). Resolves { url, port, dataDir, pid, initialized,
 * initSeconds, startSeconds, movedFrom, stop() }: stop() is synchronous (it can run in an
 * 'exit' handler), idempotent, and releases the folder.
 */
export async function startPrivateCluster({ binDir, cacheRoot, env = process.env, owner = process.pid }) {
  const as = runner(env);
  const major = path.basename(path.dirname(binDir)).match(/^\d+/)?.[0] ?? versionOf(binDir);
  let root = cacheRoot;
  let movedFrom;
  mkdirSync(root, { recursive: true });
  if (!reachable(as, root)) {
    movedFrom = root;
    root = '/var/cache/lethe';
    mkdirSync(root, { recursive: true, mode: 0o755 });
    if (!reachable(as, root)) throw new Error(`the user ${as.user} cannot reach ${movedFrom} nor ${root}: set LETHE_POSTGRES_CACHE to a folder they can reach`);
  }
  const base = path.join(root, `postgres-${major}`);
  mkdirSync(base, { recursive: true });
  if (as.user) chmodSync(base, 0o755);
  const { dataDir, ownerFile } = claimSlot(base, owner);
  const cwd = base;
  const pgEnv = { PATH: env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', TZ: env.TZ ?? 'UTC' };
  const pg = (tool, args, what) => run(as, path.join(binDir, tool), args, { cwd, env: pgEnv, what });
  try {
    let initialized = false;
    let initSeconds = 0;
    const passwordFile = `${dataDir}.password`;
    // a cluster without its password file was made with trust on TCP (or half made): made again, stopped first
    if (existsSync(path.join(dataDir, 'PG_VERSION')) && !existsSync(passwordFile) && postmasterPid(dataDir) !== undefined)
      pg('pg_ctl', ['stop', '-D', dataDir, '-m', 'immediate', '-w', '-t', '60'], 'stopping a private cluster made with trust on TCP');
    if (!existsSync(path.join(dataDir, 'PG_VERSION')) || !existsSync(passwordFile)) {
      const started = Date.now();
      const fresh = `${dataDir}.init-${process.pid}`;
      rmSync(dataDir, { recursive: true, force: true });
      const password = randomBytes(24).toString('hex');
      // initdb reads the password from a file its user can read; gone once it has
      const pwfile = `${fresh}.pw`;
      const initdb = (locale) => {
        rmSync(fresh, { recursive: true, force: true });
        mkdirSync(fresh, { mode: 0o700 });
        writeFileSync(pwfile, `${password}\n`, { mode: 0o600, flag: 'w' });
        if (as.user) {
          chownSync(fresh, as.uid, as.gid);
          chownSync(pwfile, as.uid, as.gid);
        }
        pg(
          'initdb',
          [
            '-D',
            fresh,
            '-U',
            'postgres',
            '--auth-local=trust',
            '--auth-host=scram-sha-256',
            `--pwfile=${pwfile}`,
            '-E',
            'UTF8',
            ...locale,
            '--no-instructions',
          ],
          `initdb of a private cluster in ${fresh}`,
        );
      };
      try {
        try {
          initdb(['--locale=C.UTF-8']);
        } catch {
          initdb(['--no-locale']); // a system without the C.UTF-8 locale
        }
      } finally {
        rmSync(pwfile, { force: true });
      }
      renameSync(fresh, dataDir);
      writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
      initialized = true;
      initSeconds = seconds(started);
    }

    // a cluster a dead run left running: stop it first
    if (postmasterPid(dataDir) !== undefined)
      pg('pg_ctl', ['stop', '-D', dataDir, '-m', 'fast', '-w', '-t', '60'], 'stopping a private cluster a dead run left running');

    const started = Date.now();
    const port = await freePort();
    const socketPath = path.join(dataDir, `.s.PGSQL.${port}`);
    // pg_ctl hands -o to postgres through a shell: quoted for it
    const shellQuote = (s) => `'${s.replaceAll("'", "'\\''")}'`;
    // the socket in the cluster folder when its path fits a unix socket's (107 bytes), else TCP only
    const socketDir = Buffer.byteLength(socketPath) < 100 ? dataDir : '';
    const options = `-p ${port} -c listen_addresses=127.0.0.1 -k ${shellQuote(socketDir)}`;
    pg(
      'pg_ctl',
      ['start', '-D', dataDir, '-o', options, '-l', path.join(dataDir, 'server.log'), '-w', '-t', '60', '-s'],
      `starting the private cluster in ${dataDir} (its log: ${path.join(dataDir, 'server.log')})`,
    );
    const pid = postmasterPid(dataDir);
    const password = readFileSync(passwordFile, 'utf8').trim();
    const url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
    let stopped = false;
    const stop = () => {
      if (stopped) return;
      stopped = true;
      try {
        if (postmasterPid(dataDir) !== undefined)
          pg('pg_ctl', ['stop', '-D', dataDir, '-m', 'fast', '-w', '-t', '60', '-s'], `stopping the private cluster in ${dataDir}`);
      } catch (e) {
        if (pid !== undefined && running(pid)) process.kill(pid, 'SIGQUIT'); // immediate shutdown
        throw e;
      } finally {
        // pg_ctl returns once postmaster.pid is gone, a moment before the process ends
        if (pid !== undefined) waitUntilGone(pid, 10_000);
        rmSync(ownerFile, { force: true });
      }
    };
    return { url, port, dataDir, pid, initialized, initSeconds, startSeconds: seconds(started), movedFrom, user: as.user, stop };
  } catch (e) {
    rmSync(ownerFile, { force: true });
    throw e;
  }
}

function versionOf(binDir) {
  const out = execFileSync(path.join(binDir, 'postgres'), ['--version'], { encoding: 'utf8' });
  const major = out.match(/(\d+)(?:\.\d+)?/)?.[1];
  if (!major) throw new Error(`${binDir}/postgres --version said no version: ${out.trim()}`);
  return major;
}

/**
 * What npm test does before the suite: when a PostgreSQL answers at the admin URL, nothing
 * (resolves { url, provisioned: false }); when none answers, a private cluster
 * (resolves { url, provisioned: true, cluster }). `say` gets one line either way. Throws
 * when something that is not PostgreSQL answers, or when the cluster cannot start.
 */
export async function ensurePostgres({ env = process.env, say = console.log, owner } = {}) {
  const adminUrl = adminUrlFrom(env);
  const where = endpointOf(adminUrl).shown;
  const answer = await probe(adminUrl);
  if (answer.answers) {
    say(`lethe: PostgreSQL answers at ${where}`);
    return { url: adminUrl, provisioned: false };
  }
  if (answer.other) throw new Error(`something answers at ${where} and it is not PostgreSQL: set DATABASE_URL_ADMIN to a PostgreSQL server, or free that port`);
  const binDir = serverBinDir(env);
  const cluster = await startPrivateCluster({ binDir, cacheRoot: cacheRootFrom(env), env, owner });
  const how = cluster.initialized ? `initialized in ${cluster.initSeconds} s, started in ${cluster.startSeconds} s` : `started in ${cluster.startSeconds} s`;
  const moved = cluster.movedFrom ? `; the user ${cluster.user} cannot reach ${cluster.movedFrom}` : '';
  say(
    `lethe: PostgreSQL: none answers at ${where} (${answer.why}); started a private cluster at ${cluster.dataDir} on port ${cluster.port} ` +
      `(${binDir}, ${how}${cluster.user ? `, as the user ${cluster.user}` : ''}${moved}); it stops when the suite ends`,
  );
  return { url: cluster.url, provisioned: true, cluster };
}

// `node infra/postgres-cluster.mjs start [--owner <pid>]` prints shell assignments (LETHE_PG_URL, LETHE_PG_DATA);
// `node infra/postgres-cluster.mjs stop <data folder>` stops it and releases the folder
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [command, ...rest] = process.argv.slice(2);
  try {
    if (command === 'start') {
      const i = rest.indexOf('--owner');
      const owner = i >= 0 ? Number(rest[i + 1]) : process.ppid;
      const binDir = serverBinDir();
      const c = await startPrivateCluster({ binDir, cacheRoot: cacheRootFrom(), owner });
      const how = c.initialized ? `initialized in ${c.initSeconds} s, started in ${c.startSeconds} s` : `started in ${c.startSeconds} s`;
      console.error(`started a private PostgreSQL cluster at ${c.dataDir} on port ${c.port} (${binDir}, ${how})`);
      console.log(`LETHE_PG_URL='${c.url}'\nLETHE_PG_DATA='${c.dataDir.replaceAll("'", "'\\''")}'`);
    } else if (command === 'stop' && rest[0]) {
      const dataDir = path.resolve(rest[0]);
      const binDir = serverBinDir();
      const as = runner(process.env);
      if (postmasterPid(dataDir) !== undefined) {
        run(as, path.join(binDir, 'pg_ctl'), ['stop', '-D', dataDir, '-m', 'fast', '-w', '-t', '60', '-s'], {
          cwd: path.dirname(dataDir),
          env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
          what: `stopping the private cluster in ${dataDir}`,
        });
      }
      rmSync(`${dataDir}.owner`, { force: true });
      console.error(`stopped the private PostgreSQL cluster at ${dataDir}`);
    } else {
      console.error('usage: node infra/postgres-cluster.mjs start [--owner <pid>] | stop <data folder>');
      process.exit(2);
    }
  } catch (e) {
    console.error(`lethe: ${e.message}`);
    process.exit(1);
  }
}

/**
 * scripts/test.mjs (`npm test`) runs its steps in order and stops at the first that
 * fails: the dependencies, the services under infra/, the type check, PostgreSQL, the
 * suite. Here it
 * runs in a folder made up for it, without network: its own copies of scripts/ and the
 * infra/ scripts, a package-lock.json that node_modules already matches, a stand-in for
 * tsc and one for test/run-all.mjs, each writing what it was given to a log. The
 * services come from caches filled beforehand or from the variables that name them, so
 * nothing is built or installed. PostgreSQL is the suite's own (it answers), except where
 * none answers: there npm test starts a private cluster under a cache folder made up for
 * it, the stand-in suite queries it, and it is stopped when npm test ends. The real suite
 * never starts from here.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../infra/free-port.mjs';
import { running } from '../../infra/postgres-cluster.mjs';
import { adminUrl } from '../support/pg.js';
import { tempDir } from '../support/vault.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const LOCK = {
  name: 'app',
  lockfileVersion: 3,
  packages: { '': { name: 'app' }, 'node_modules/a': { version: '1.0.0', resolved: 'https://registry.npmjs.org/a/-/a-1.0.0.tgz' } },
};

function executable(file: string, text: string): string {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  chmodSync(file, 0o755);
  return file;
}

const MEM0_CURRENT = "lethe: the Mem0 example's dependencies (examples/mem0) are current (node_modules matches package-lock.json)";

interface Project {
  dir: string;
  log: string;
  env: Record<string, string>;
  cached: { minio: string; toxiproxy: string; localKms: string };
}

/** A folder scripts/test.mjs can run in, with every service at hand. */
function project(): Project {
  const dir = tempDir('lethe-npm-test-');
  dirs.push(dir);
  for (const file of [
    'scripts/test.mjs',
    'scripts/ensure-deps.mjs',
    'scripts/child.mjs',
    'infra/go-install.sh',
    'infra/minio.sh',
    'infra/toxiproxy.sh',
    'infra/local-kms.sh',
    'infra/softhsm.sh',
    'infra/pg-auto-failover.sh',
    'infra/chromium.sh',
    'infra/apt-install.sh',
    'infra/postgres.sh',
    'infra/postgres-cluster.mjs',
    'infra/free-port.mjs',
  ]) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    copyFileSync(file, path.join(dir, file));
  }
  // lethe's and the Mem0 example's dependencies, both installed
  for (const root of [dir, path.join(dir, 'examples', 'mem0')]) {
    mkdirSync(path.join(root, 'node_modules'), { recursive: true });
    writeFileSync(path.join(root, 'package-lock.json'), JSON.stringify(LOCK));
    writeFileSync(path.join(root, 'node_modules', '.package-lock.json'), JSON.stringify({ packages: { 'node_modules/a': LOCK.packages['node_modules/a'] } }));
  }
  const log = path.join(dir, 'steps.log');
  // stand-ins: tsc exits with FAKE_TSC_EXIT (0 by default); the suite reports what it got and exits 7
  executable(path.join(dir, 'node_modules', '.bin', 'tsc'), `#!/bin/sh\necho "tsc $*" >> '${log}'\nexit "\${FAKE_TSC_EXIT:-0}"\n`);
  mkdirSync(path.join(dir, 'test'));
  writeFileSync(
    path.join(dir, 'test', 'run-all.mjs'),
    `import { appendFileSync } from 'node:fs';
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('LETHE_') && !k.endsWith('_CACHE')));
appendFileSync(${JSON.stringify(log)}, 'run-all ' + JSON.stringify({ argv: process.argv.slice(2), env }) + '\\n');
process.exit(7);
`,
  );
  // the go-built servers, already in their caches (no Go is run: a cache hit never looks for it)
  const cache = path.join(dir, 'cache');
  const cached = {
    minio: executable(path.join(cache, 'minio-v0.0.0-20260212201848-7aac2a2c5b7c', 'bin', 'minio'), '#!/bin/sh\n'),
    toxiproxy: executable(path.join(cache, 'toxiproxy-v2.5.0', 'bin', 'toxiproxy-server'), '#!/bin/sh\n'),
    localKms: executable(path.join(cache, 'local-kms-v0.0.0-20260228092603-2a5e92d09ab6', 'bin', 'local-kms'), '#!/bin/sh\n'),
  };
  // SoftHSM2 and Chromium named by their variables; softhsm.sh also wants softhsm2-util on PATH
  const bin = path.join(dir, 'bin');
  executable(path.join(bin, 'softhsm2-util'), '#!/bin/sh\n');
  const module = path.join(dir, 'libsofthsm2.so');
  writeFileSync(module, '');
  const chromium = executable(path.join(dir, 'chromium'), '#!/bin/sh\n');
  const autoctl = executable(path.join(dir, 'pg_autoctl'), '#!/bin/sh\n');
  const env = {
    PATH: `${bin}:/usr/bin:/bin`,
    HOME: dir,
    LETHE_MINIO_CACHE: cache,
    LETHE_TOXIPROXY_CACHE: cache,
    LETHE_LOCAL_KMS_CACHE: cache,
    LETHE_SOFTHSM_MODULE: module,
    LETHE_CHROMIUM: chromium,
    LETHE_PG_AUTOCTL: autoctl,
    // the suite's PostgreSQL, which answers: npm test starts none of its own
    DATABASE_URL_ADMIN: adminUrl(),
  };
  return { dir, log, env, cached };
}

function npmTest(p: Project, env: Record<string, string> = {}, args: string[] = []) {
  const r = spawnSync(process.execPath, [path.join(p.dir, 'scripts', 'test.mjs'), ...args], {
    cwd: p.dir,
    env: { ...p.env, ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, log: existsSync(p.log) ? readFileSync(p.log, 'utf8').trim().split('\n') : [] };
}

describe('scripts/test.mjs (npm test)', () => {
  it('says each step is current, gives the suite what the services printed, passes its arguments on and exits with its code', () => {
    const p = project();
    const args = ['--reporter=default', '--reporter=json', '--outputFile.json=report.json'];
    const first = npmTest(p, {}, args);
    expect(first.stderr).toBe('');
    expect(first.stdout.trim().split('\n')).toEqual([
      'lethe: dependencies are current (node_modules matches package-lock.json)',
      MEM0_CURRENT,
      `lethe: MinIO server is current: ${p.cached.minio}`,
      `lethe: Toxiproxy server is current: ${p.cached.toxiproxy}`,
      `lethe: local-kms server is current: ${p.cached.localKms}`,
      `lethe: SoftHSM2: ${p.env.LETHE_SOFTHSM_MODULE} (named by LETHE_SOFTHSM_MODULE)`,
      `lethe: Chromium: ${p.env.LETHE_CHROMIUM} (named by LETHE_CHROMIUM)`,
      `lethe: pg_auto_failover: ${p.env.LETHE_PG_AUTOCTL} (named by LETHE_PG_AUTOCTL)`,
      'lethe: type-checking (tsc --noEmit -p tsconfig.json)',
      expect.stringMatching(/^lethe: types are sound \(\d+(\.\d)? s\)$/),
      `lethe: PostgreSQL answers at ${new URL(adminUrl()).host}`,
      `lethe: running the suite (node test/run-all.mjs ${args.join(' ')})`,
    ]);
    expect(first.status).toBe(7);
    expect(first.log[0]).toBe('tsc --noEmit -p tsconfig.json');
    expect(first.log[1]?.startsWith('run-all ')).toBe(true);
    expect(JSON.parse(first.log[1]!.slice('run-all '.length))).toEqual({
      argv: args,
      env: {
        LETHE_MINIO_BIN: p.cached.minio,
        LETHE_TOXIPROXY_BIN: p.cached.toxiproxy,
        LETHE_LOCAL_KMS_BIN: p.cached.localKms,
        LETHE_SOFTHSM_MODULE: p.env.LETHE_SOFTHSM_MODULE,
        LETHE_CHROMIUM: p.env.LETHE_CHROMIUM,
        LETHE_PG_AUTOCTL: p.env.LETHE_PG_AUTOCTL,
      },
    });
  });

  it('says how long a service took when its script installed it (it wrote on stderr), and shows what it wrote', () => {
    const p = project();
    const installed = path.join(p.dir, 'installed-chromium');
    executable(path.join(p.dir, 'infra', 'chromium.sh'), `#!/usr/bin/env bash\necho "no Chromium: installing Debian's chromium" >&2\necho '${installed}'\n`);
    const r = npmTest(p, { LETHE_CHROMIUM: '' });
    expect(r.status).toBe(7);
    expect(r.stderr).toBe("no Chromium: installing Debian's chromium\n");
    expect(r.stdout).toMatch(new RegExp(`^lethe: Chromium ready in \\d+(\\.\\d)? s \\(Debian's chromium, installed with apt-get\\): ${installed}$`, 'm'));
    expect(JSON.parse(r.log[1]!.slice('run-all '.length)).env.LETHE_CHROMIUM).toBe(installed);
  });

  it('stops at a service that fails, naming the step and the fix, with exit 1: no type check, no suite', () => {
    const p = project();
    const plain = path.join(p.dir, 'not-executable');
    writeFileSync(plain, '');
    const r = npmTest(p, { LETHE_MINIO_BIN: plain });
    expect(r.status).toBe(1);
    expect(r.stdout.trim().split('\n')).toEqual(['lethe: dependencies are current (node_modules matches package-lock.json)', MEM0_CURRENT]);
    // infra/minio.sh's own message, then the step's
    expect(r.stderr).toBe(
      `LETHE_MINIO_BIN=${plain} is not an executable file\n` +
        'lethe: the MinIO server step failed (infra/minio.sh, exit 1; its message above says why): ' +
        'set LETHE_MINIO_BIN to a minio binary that works, or unset it so that infra/minio.sh provides one, then run npm test again\n',
    );
    expect(r.log).toEqual([]);
  });

  it('stops when a service script prints no path', () => {
    const p = project();
    executable(path.join(p.dir, 'infra', 'softhsm.sh'), '#!/usr/bin/env bash\nexit 0\n');
    const r = npmTest(p, { LETHE_SOFTHSM_MODULE: '' });
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(
      "lethe: the SoftHSM2 step failed: infra/softhsm.sh printed no path; run 'apt-get install -y softhsm2' as root, or set LETHE_SOFTHSM_MODULE to a SoftHSM2 PKCS#11 module\n",
    );
    expect(r.log).toEqual([]);
  });

  it('stops when the type check fails: the suite never starts', () => {
    const p = project();
    const r = npmTest(p, { FAKE_TSC_EXIT: '2' });
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('lethe: the type check failed (tsc --noEmit -p tsconfig.json, exit 2): fix the type errors above and run npm test again\n');
    expect(r.log).toEqual(['tsc --noEmit -p tsconfig.json']);
  });

  it('stops at the dependencies when there is no package-lock.json: no service, no type check, no suite', () => {
    const p = project();
    rmSync(path.join(p.dir, 'package-lock.json'));
    const r = npmTest(p);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('lethe: package-lock.json is missing: the dependencies cannot be installed from a lockfile\n');
    expect(r.log).toEqual([]);
  });
});

/**
 * The stand-in suite for the PostgreSQL cases: it logs the DATABASE_URL_ADMIN it was given, what
 * `select 1` there answers and the postmaster's pid (from the cluster's postmaster.pid), then exits
 * with 7, or (FAKE_SUITE_WAIT) says so and waits for a signal.
 */
function queryingSuite(p: Project): void {
  // the postgres package, as npm ci would have installed it
  symlinkSync(path.resolve('node_modules', 'postgres'), path.join(p.dir, 'node_modules', 'postgres'));
  writeFileSync(
    path.join(p.dir, 'test', 'run-all.mjs'),
    `import { appendFileSync, readFileSync } from 'node:fs';
import postgres from 'postgres';
const url = process.env.DATABASE_URL_ADMIN;
const sql = postgres(url, { max: 1, connect_timeout: 5, onnotice: () => {} });
const [row] = await sql\`select 1 as one, current_setting('data_directory') as data\`;
await sql.end({ timeout: 1 });
const postmaster = Number(readFileSync(row.data + '/postmaster.pid', 'utf8').split('\\n')[0]);
appendFileSync(${JSON.stringify(p.log)}, 'suite ' + JSON.stringify({ url, one: row.one, data: row.data, postmaster }) + '\\n');
if (process.env.FAKE_SUITE_WAIT === 'straggler') {
  // a process of the suite's group that outlives it (as vitest outlives run-all.mjs, which it runs synchronously): a second after
  // SIGTERM it queries the cluster again
  const { spawn } = await import('node:child_process');
  spawn(process.execPath, ['--input-type=module', '-e', \`
    import { appendFileSync } from 'node:fs';
    import postgres from 'postgres';
    process.on('SIGTERM', () => setTimeout(async () => {
      const sql = postgres(\${JSON.stringify(url)}, { max: 1, connect_timeout: 5 });
      const [row] = await sql\\\`select 1 as one\\\`;
      await sql.end({ timeout: 1 });
      appendFileSync(\${JSON.stringify(${JSON.stringify(p.log)})}, 'straggler ' + row.one + '\\\\n');
      process.exit(0);
    }, 1000));
    appendFileSync(\${JSON.stringify(${JSON.stringify(p.log)})}, 'straggler ready\\\\n');
    setInterval(() => {}, 1000);
  \`], { stdio: 'inherit', cwd: process.cwd() });
}
if (process.env.FAKE_SUITE_WAIT) {
  appendFileSync(${JSON.stringify(p.log)}, 'waiting\\n');
  setInterval(() => {}, 1000);
} else process.exit(7);
`,
  );
}

/** npm test's environment when nothing answers at DATABASE_URL_ADMIN, with a cache folder of its own the cluster's user can reach. */
async function nothingAnswers(p: Project): Promise<{ dead: string; cache: string }> {
  const cache = path.join(p.dir, 'pg-cache');
  mkdirSync(cache);
  // as root the cluster runs as the user postgres, who must reach it through the test's folder
  chmodSync(p.dir, 0o755);
  return { dead: `postgres://postgres@127.0.0.1:${await freePort()}/postgres`, cache };
}

const suiteLine = (log: string[]) => JSON.parse(log.find((l) => l.startsWith('suite '))!.slice('suite '.length));

describe('scripts/test.mjs when no PostgreSQL answers', () => {
  it('starts a private cluster under the cache folder, gives the suite its URL, and stops it when the suite ends', async () => {
    const p = project();
    queryingSuite(p);
    const { dead, cache } = await nothingAnswers(p);
    const r = npmTest(p, { DATABASE_URL_ADMIN: dead, LETHE_POSTGRES_CACHE: cache });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(7);
    const suite = suiteLine(r.log);
    const port = Number(new URL(suite.url).port);
    expect(suite).toEqual({
      url: expect.stringMatching(new RegExp(`^postgres://postgres:[0-9a-f]{48}@127\\.0\\.0\\.1:${port}/postgres$`)),
      one: 1,
      data: expect.stringMatching(/\/postgres-\d+\/data$/),
      postmaster: expect.any(Number),
    });
    expect(suite.data.startsWith(`${cache}/`)).toBe(true);
    const lines = r.stdout.trim().split('\n');
    expect(lines.slice(-3)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^lethe: PostgreSQL: none answers at ${new URL(dead).host} \\(ECONNREFUSED\\); started a private cluster at ${suite.data} on port ${port} \\(.*initialized in`,
        ),
      ),
      expect.stringMatching(/^lethe: running the suite/),
      `lethe: stopped the private PostgreSQL cluster (${suite.data})`,
    ]);
    expect(running(suite.postmaster)).toBe(false);
    expect(existsSync(path.join(suite.data, 'postmaster.pid'))).toBe(false);

    // the next run starts the same cluster again: no initdb
    const again = npmTest(p, { DATABASE_URL_ADMIN: dead, LETHE_POSTGRES_CACHE: cache });
    expect(again.status).toBe(7);
    expect(again.stdout).toMatch(new RegExp(`started a private cluster at ${suite.data} on port \\d+ \\([^)]*started in [\\d.]+ s`));
    expect(again.stdout).not.toMatch(/initialized in/);
    const second = suiteLine(again.log.slice(r.log.length));
    expect(second.data).toBe(suite.data);
    expect(running(second.postmaster)).toBe(false);
  });

  it('stops at the PostgreSQL step when there is no server to start, saying what to run: the suite never starts', async () => {
    const p = project();
    const { dead, cache } = await nothingAnswers(p);
    const r = npmTest(p, { DATABASE_URL_ADMIN: dead, LETHE_POSTGRES_CACHE: cache, LETHE_POSTGRES_BIN_DIR: path.join(p.dir, 'no-postgres') });
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(
      `LETHE_POSTGRES_BIN_DIR=${path.join(p.dir, 'no-postgres')} does not hold initdb, pg_ctl and postgres (executables)\n` +
        'lethe: the PostgreSQL step failed: no PostgreSQL server could be found or installed (infra/postgres.sh, exit 1; its message above says why): ' +
        "run 'apt-get install -y postgresql' as root, set LETHE_POSTGRES_BIN_DIR to a folder with initdb, pg_ctl and postgres, " +
        'or start a PostgreSQL and set DATABASE_URL_ADMIN to it; then run npm test again\n',
    );
    expect(r.log).toEqual(['tsc --noEmit -p tsconfig.json']);
  });

  /** npm test with the waiting stand-in suite, up to the point where it waits. */
  async function interrupted(wait: string) {
    const p = project();
    queryingSuite(p);
    const { dead, cache } = await nothingAnswers(p);
    const child = spawn(process.execPath, [path.join(p.dir, 'scripts', 'test.mjs')], {
      cwd: p.dir,
      env: { ...p.env, DATABASE_URL_ADMIN: dead, LETHE_POSTGRES_CACHE: cache, FAKE_SUITE_WAIT: wait },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const deadline = Date.now() + 30_000;
    const ready = wait === 'straggler' ? 'straggler ready' : 'waiting';
    while (!(existsSync(p.log) && readFileSync(p.log, 'utf8').includes(ready))) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the stand-in suite never ran: ${stdout}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const suite = suiteLine(readFileSync(p.log, 'utf8').trim().split('\n'));
    return { p, suite, child, exited, stdout: () => stdout };
  }

  it('stops the cluster when npm test is stopped with SIGTERM while the suite runs', async () => {
    const { suite, child, exited, stdout } = await interrupted('1');
    expect(running(suite.postmaster)).toBe(true);
    child.kill('SIGTERM');
    // the suite ended by SIGTERM: 128 + 15
    expect(await exited).toBe(143);
    expect(stdout()).toContain(`lethe: stopped the private PostgreSQL cluster (${suite.data})`);
    expect(running(suite.postmaster)).toBe(false);
  });

  it('passes the signal on to the rest of the suite (run-all.mjs ends at once, vitest would run on) and keeps the cluster until the last of it is gone', async () => {
    const { p, suite, child, exited, stdout } = await interrupted('straggler');
    child.kill('SIGTERM');
    expect(await exited).toBe(143);
    // the straggler queried the cluster a second after run-all.mjs had gone, then the cluster stopped
    expect(readFileSync(p.log, 'utf8')).toContain('straggler 1\n');
    expect(stdout()).toContain(`lethe: stopped the private PostgreSQL cluster (${suite.data})`);
    expect(running(suite.postmaster)).toBe(false);
  });
});

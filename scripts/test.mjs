#!/usr/bin/env node
/**
 * `npm test`: from a fresh clone to the whole suite, one line per step.
 *
 *   1. dependencies: `npm ci` when node_modules is missing or stale against
 *      package-lock.json (scripts/ensure-deps.mjs, shared with `npm start`), else nothing;
 *      the same for examples/mem0 (Mem0's SDK, kept out of lethe's own dependencies;
 *      `npm ci --ignore-scripts`: its SQLite stores' native build is never used);
 *   2. the services the suite starts, each by its script under infra/, which prints the
 *      path of what it provides and installs it only when it is missing:
 *        MinIO server      infra/minio.sh      go install into ~/.cache/lethe   LETHE_MINIO_BIN
 *        Toxiproxy server  infra/toxiproxy.sh  go install into ~/.cache/lethe   LETHE_TOXIPROXY_BIN
 *        local-kms server  infra/local-kms.sh  go install into ~/.cache/lethe   LETHE_LOCAL_KMS_BIN
 *        SoftHSM2 module   infra/softhsm.sh    apt-get install softhsm2         LETHE_SOFTHSM_MODULE
 *        Chromium          infra/chromium.sh   apt-get install chromium         LETHE_CHROMIUM
 *        pg_auto_failover  infra/pg-auto-failover.sh  apt-get install postgresql-<major>-auto-failover  LETHE_PG_AUTOCTL
 *      What each prints is exported under its variable to the suite (a variable already
 *      set names what to use: the script checks it and installs nothing). A script that
 *      writes nothing on stderr installed nothing: the step says "current";
 *   3. the type check: node_modules/.bin/tsc --noEmit -p tsconfig.json;
 *   4. PostgreSQL (infra/postgres-cluster.mjs): when one answers at DATABASE_URL_ADMIN
 *      (else DATABASE_URL, else postgres://postgres@127.0.0.1:5432/postgres), the suite
 *      uses it; when none answers, a private cluster of the machine's PostgreSQL server
 *      (infra/postgres.sh finds it, or installs Debian's postgresql with apt-get) is
 *      started on a free port, initialized once under the cache folder
 *      (~/.cache/lethe/postgres-<major>/data; /var/cache/lethe as root), its URL exported
 *      to the suite as DATABASE_URL_ADMIN, and stopped (pg_ctl stop -m fast) when this
 *      script exits, however the suite ended;
 *   5. the suite: node test/run-all.mjs (vitest, then the Python client's tests) with the
 *      arguments given to this script (`npm test -- --reporter=json` reaches vitest).
 *      This script exits with its exit code.
 *
 * A step that fails ends the script with a plain message naming the step and the fix,
 * and exit code 1; nothing after it runs. The services' own messages (Go missing,
 * apt-get failing) pass through on stderr above it. python3 is not installed here: the
 * suite checks it and says so when it is missing.
 *
 * While the suite runs it has a process group of its own, so it hears a signal once:
 * SIGINT, SIGTERM and SIGHUP sent to this script are passed on (the same signal twice
 * within a second, once), and this script exits with the suite's code.
 *
 * Plain Node, no dependency: it runs before node_modules exists.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runForwardingSignals } from './child.mjs';
import { ensureDeps, StepError } from './ensure-deps.mjs';
import { ensurePostgres } from '../infra/postgres-cluster.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const say = (line) => console.log(line);

/** The services, in the order they are checked. `installs` says what a first run does. */
const SERVICES = [
  {
    name: 'MinIO server',
    script: 'minio.sh',
    variable: 'LETHE_MINIO_BIN',
    what: 'a minio binary',
    installs: 'built from source with Go, cached in ~/.cache/lethe',
  },
  {
    name: 'Toxiproxy server',
    script: 'toxiproxy.sh',
    variable: 'LETHE_TOXIPROXY_BIN',
    what: 'a toxiproxy-server binary',
    installs: 'built from source with Go, cached in ~/.cache/lethe',
  },
  {
    name: 'local-kms server',
    script: 'local-kms.sh',
    variable: 'LETHE_LOCAL_KMS_BIN',
    what: 'a local-kms binary',
    installs: 'built from source with Go, cached in ~/.cache/lethe',
  },
  {
    name: 'SoftHSM2',
    script: 'softhsm.sh',
    variable: 'LETHE_SOFTHSM_MODULE',
    what: 'a SoftHSM2 PKCS#11 module',
    apt: 'softhsm2',
    installs: "Debian's softhsm2, installed with apt-get",
  },
  {
    name: 'Chromium',
    script: 'chromium.sh',
    variable: 'LETHE_CHROMIUM',
    what: 'a Chromium binary',
    apt: 'chromium',
    installs: "Debian's chromium, installed with apt-get",
  },
  {
    name: 'pg_auto_failover',
    script: 'pg-auto-failover.sh',
    variable: 'LETHE_PG_AUTOCTL',
    what: 'a pg_autoctl binary',
    apt: 'postgresql-15-auto-failover',
    installs: "Debian's postgresql-<major>-auto-failover, installed with apt-get",
  },
];

const seconds = (since) => Math.round((Date.now() - since) / 100) / 10;

/**
 * Runs infra/<script> with bash; its stdout is the path it provides, its stderr is
 * shown as it comes. Resolves with { path, said } (said: it wrote on stderr, i.e. it
 * installed something or explained a failure) or rejects with a StepError.
 */
function runService(service) {
  const where = `infra/${service.script}`;
  const fix = process.env[service.variable]
    ? // what the variable names is what failed, not an install
      `set ${service.variable} to ${service.what} that works, or unset it so that ${where} provides one`
    : service.apt
      ? `run 'apt-get install -y ${service.apt}' as root, or set ${service.variable} to ${service.what}`
      : `install Go (https://go.dev/dl) so that ${where} can build it, or set ${service.variable} to ${service.what}`;
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [path.join(root, 'infra', service.script)], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let said = false;
    child.stdout.setEncoding('utf8').on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => {
      said = true;
      process.stderr.write(chunk);
    });
    child.on('error', (e) =>
      reject(
        new StepError(
          e.code === 'ENOENT'
            ? `the ${service.name} step needs bash to run ${where}, and there is no bash on PATH: install bash and run npm test again`
            : `${where} could not be started: ${e.message}`,
        ),
      ),
    );
    child.on('close', (code, signal) => {
      const printed = out.trim();
      if (code !== 0)
        reject(
          new StepError(`the ${service.name} step failed (${where}, ${signal ?? `exit ${code}`}; its message above says why): ${fix}, then run npm test again`),
        );
      else if (!printed) reject(new StepError(`the ${service.name} step failed: ${where} printed no path; ${fix}`));
      else resolve({ path: printed, said });
    });
  });
}

async function ensureService(service) {
  const given = process.env[service.variable];
  const started = Date.now();
  const { path: provided, said } = await runService(service);
  process.env[service.variable] = provided;
  if (given) say(`lethe: ${service.name}: ${provided} (named by ${service.variable})`);
  else if (!said) say(`lethe: ${service.name} is current: ${provided}`);
  else say(`lethe: ${service.name} ready in ${seconds(started)} s (${service.installs}): ${provided}`);
}

/** Runs a command with the terminal; resolves on exit 0, else rejects with a StepError from `failure`. */
function runStep(command, args, failure) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, stdio: 'inherit' });
    child.on('error', (e) => reject(new StepError(failure(e.code === 'ENOENT' ? `${path.relative(root, command)} was not found` : e.message))));
    child.on('exit', (code, signal) => (code === 0 ? resolve() : reject(new StepError(failure(signal ?? `exit ${code}`)))));
  });
}

async function typecheck() {
  say('lethe: type-checking (tsc --noEmit -p tsconfig.json)');
  const started = Date.now();
  await runStep(
    path.join(root, 'node_modules', '.bin', 'tsc'),
    ['--noEmit', '-p', 'tsconfig.json'],
    (why) => `the type check failed (tsc --noEmit -p tsconfig.json, ${why}): fix the type errors above and run npm test again`,
  );
  say(`lethe: types are sound (${seconds(started)} s)`);
}

/**
 * A PostgreSQL for the suite: the one that answers, else a private cluster, stopped when
 * this script exits (the suite's end, a signal passed on to it, or a failed step).
 */
async function database() {
  let pg;
  try {
    pg = await ensurePostgres({ say });
  } catch (e) {
    throw new StepError(`the PostgreSQL step failed: ${e.message}; then run npm test again`);
  }
  if (!pg.provisioned) return;
  process.env.DATABASE_URL_ADMIN = pg.url;
  process.on('exit', () => {
    try {
      pg.cluster.stop();
      say(`lethe: stopped the private PostgreSQL cluster (${pg.cluster.dataDir})`);
    } catch (e) {
      console.error(`lethe: the private PostgreSQL cluster in ${pg.cluster.dataDir} did not stop: ${e.message}`);
    }
  });
  // the suite starts right after, in this same turn of the event loop: from then on a signal reaches it
  // (scripts/child.mjs), and the suite's exit ends this script. A run killed before (SIGKILL, or a signal
  // while the cluster starts) leaves it running: the next run stops it and takes its folder over
}

/**
 * node test/run-all.mjs with `args`; exits with its exit code. A signal passed on ends
 * run-all.mjs at once (it waits for vitest synchronously) while vitest would run on: when a
 * signal ended it, the signal goes on to the rest of its process group (vitest and its
 * workers), which is waited for (30 s, then SIGKILL), so that nothing of the suite outlives
 * this script nor the private PostgreSQL it uses.
 */
function suite(args) {
  say(`lethe: running the suite (node test/run-all.mjs${args.length ? ` ${args.join(' ')}` : ''})`);
  const child = runForwardingSignals(path.join(root, 'test', 'run-all.mjs'), args, {
    cwd: root,
    what: 'the suite (node test/run-all.mjs)',
    onExit: (_code, signal) => {
      if (!signal || !child.pid) return;
      signalGroup(child.pid, signal);
      if (!waitForGroup(child.pid, 30_000)) signalGroup(child.pid, 'SIGKILL');
    },
  });
}

function signalGroup(pgid, signal) {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: nothing left in the group
  }
}

/** Waits (synchronously, at most `ms`) until no process of group `pgid` is left; false when some still are. */
function waitForGroup(pgid, ms) {
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  for (const deadline = Date.now() + ms; Date.now() < deadline; Atomics.wait(sleeper, 0, 0, 50)) {
    try {
      process.kill(-pgid, 0);
    } catch {
      return true; // ESRCH: the group is empty
    }
  }
  return false;
}

try {
  await ensureDeps(root, say);
  // Mem0's SDK for its example and test, apart from lethe's own (its SQLite stores' native build is not needed: --ignore-scripts)
  await ensureDeps(path.join(root, 'examples', 'mem0'), say, {
    what: "the Mem0 example's dependencies (examples/mem0)",
    size: 'about 60 MB',
    ignoreScripts: true,
  });
  for (const service of SERVICES) await ensureService(service);
  await typecheck();
  await database();
  suite(process.argv.slice(2));
} catch (e) {
  console.error(`lethe: ${e instanceof StepError ? e.message : `npm test failed: ${e instanceof Error ? e.message : String(e)}`}`);
  process.exit(1);
}

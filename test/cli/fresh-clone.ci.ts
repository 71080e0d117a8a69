/**
 * `npm start` from a fresh clone, with no command before it: it installs the
 * dependencies from package-lock.json, builds dist/ and serves on the embedded default,
 * one line per step; /healthz answers; SIGTERM stops it with exit 0. A second `npm start`
 * in the same folder neither reinstalls nor rebuilds (asserted from the lines it prints;
 * both times are printed, not asserted). A third start whose npm process is killed with
 * SIGKILL leaves no process behind (start.mjs watches npm; the server, start.mjs's channel).
 *
 * The "clone" is test/support/clone.ts's copy of the working tree. npm ci in the copy uses
 * npm's usual cache (~/.npm), so after the first run it downloads nothing.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { copyOfWorkingTree } from '../support/clone.js';
import { type RunningService, startService } from '../support/process.js';

const lines = (service: RunningService) =>
  service
    .stdout()
    .split('\n')
    .filter((l) => l.startsWith('lethe: '));

describe('npm start in a fresh clone', () => {
  const clone = copyOfWorkingTree();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'lethe-fresh-data-'));
  let service: RunningService | undefined;

  afterAll(async () => {
    await service?.stop();
    // a server shutting down may still write its data for a moment
    rmSync(clone, { recursive: true, force: true, maxRetries: 20, retryDelay: 250 });
    rmSync(dataDir, { recursive: true, force: true, maxRetries: 20, retryDelay: 250 });
  });

  /** `npm start` in the clone until /healthz answers: the service and how long it took. */
  async function npmStart(): Promise<{ service: RunningService; seconds: number }> {
    const started = Date.now();
    const spawned = await startServiceIn(clone, { LETHE_DATA_DIR: dataDir, HOST: '127.0.0.1' });
    const health = await fetch(`${spawned.url}/healthz`);
    expect(health.status).toBe(200);
    return { service: spawned, seconds: Math.round((Date.now() - started) / 100) / 10 };
  }

  it('installs, builds and serves with no prior command, then starts again without reinstalling or rebuilding', async () => {
    expect(existsSync(path.join(clone, 'node_modules')), 'the copy starts without node_modules').toBe(false);
    expect(existsSync(path.join(clone, 'dist')), 'the copy starts without dist/').toBe(false);

    const first = await npmStart();
    service = first.service;
    const firstLines = lines(service);
    expect(firstLines[0]).toMatch(/^lethe: installing dependencies from package-lock\.json with npm ci \(first run: node_modules is missing/);
    expect(firstLines.some((l) => /^lethe: compiling src\/ into dist\/ with esbuild \(first build: dist\/ is missing\)$/.test(l))).toBe(true);
    expect(firstLines.some((l) => l.startsWith('lethe: starting lethe serve'))).toBe(true);
    await stopCleanly(service);
    service = undefined;

    const second = await npmStart();
    service = second.service;
    expect(lines(service).slice(0, 3)).toEqual([
      'lethe: dependencies are current (node_modules matches package-lock.json)',
      'lethe: build is current (dist/ is newer than src/)',
      'lethe: starting lethe serve (node dist/cli/bin.js serve)',
    ]);
    await stopCleanly(service);
    service = undefined;

    // npm's own process killed with SIGKILL (a supervisor's last resort): nothing it started runs on
    const third = await npmStart();
    service = third.service;
    const serverPids = descendants(third.service.child.pid!);
    expect(serverPids.length, 'npm start runs a shell, start.mjs and the server').toBeGreaterThanOrEqual(2);
    process.kill(third.service.child.pid!, 'SIGKILL');
    const gone = await waitFor(() => serverPids.every((pid) => !alive(pid)), 10_000);
    expect(gone, `still running 10 s after npm was killed: ${serverPids.filter(alive).join(', ')}`).toBe(true);
    expect((await fetch(`${third.service.url}/healthz`).catch(() => undefined))?.status, 'the port is free').toBeUndefined();
    service = undefined;
    console.log(
      `npm start in a fresh clone: ${first.seconds} s to /healthz (${firstLines.filter((l) => / in [\d.]+ s$/.test(l)).join('; ')}); warm second start: ${second.seconds} s`,
    );
  }, 900_000);
});

/** Every process below `pid`, from /proc (the server runs in a process group of its own). */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // gone meanwhile
    }
  }
  const below = (p: number): number[] => (children.get(p) ?? []).flatMap((c) => [c, ...below(c)]);
  return below(pid);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitFor(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return check();
}

/**
 * The environment of a person's shell: this process's, without lethe's configuration and
 * what npm and vitest add (npm needs the rest, e.g. NODE_EXTRA_CA_CERTS behind a proxy).
 */
const USER_ENV = Object.fromEntries(
  Object.entries(process.env).filter(
    (e): e is [string, string] => e[1] !== undefined && !/^(LETHE_|DATABASE_URL|S3_|PORT$|HOST$|npm_|NODE_ENV$|NODE_OPTIONS$|VITEST|TEST$)/.test(e[0]),
  ),
);

/** `npm start` with cwd `dir`: startService runs in the test's cwd, so npm is told where to run (--prefix). */
function startServiceIn(dir: string, env: Record<string, string>): Promise<RunningService> {
  return startService('npm', ['start', '--prefix', dir], { ...USER_ENV, ...env }, 840_000);
}

/**
 * SIGTERM to npm start's process group, as a terminal's Ctrl-C or a supervisor sends it:
 * start.mjs passes it to the server, which shuts down and exits 0 (npm itself exits
 * 128 + 15, as it does on any signal). stop() waits until every process of the group is gone.
 */
async function stopCleanly(service: RunningService): Promise<void> {
  await service.stop();
  // the output pipes close once the last process writing to them (the server, start.mjs) is gone
  const closed = new Promise((resolve) => (service.child.stdout!.readableEnded ? resolve(true) : service.child.once('close', () => resolve(true))));
  expect(
    await Promise.race([closed, new Promise((resolve) => setTimeout(() => resolve(false), 15_000))]),
    'a process of npm start still holds its output 15 s after it exited',
  ).toBe(true);
  expect(service.stderr()).toContain('"signal":"SIGTERM","msg":"shutting down"');
  expect(lines(service).at(-1)).toBe('lethe: lethe serve exited (code 0)');
}

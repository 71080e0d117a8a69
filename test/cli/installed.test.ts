/**
 * The `lethe` command as a user gets it: `npm pack` in a fresh clone (test/support/clone.ts:
 * no dist/; its prepack builds it), the tarball installed into an empty project, and run the
 * ways a user or a cron job runs it — `npx lethe`, `node_modules/.bin/lethe`, a symlink to it, and
 * `node …/dist/cli/main.js` through a symlink. Each does what it was asked, and never exits 0
 * after doing nothing.
 */
import { existsSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyOfWorkingTree } from '../support/clone.js';
import { installInto, pack, type Packed, run } from '../support/npm.js';
import { tempDir } from '../support/vault.js';

const ROOT = path.resolve('.');
const VERSION = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;

let dir = '';
let app = '';
let packed: Packed | undefined;
/** Whether the clone had a dist/ before `npm pack` ran in it. */
let builtBefore = true;

interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command in the consumer project with a bare environment (no LETHE_* token) and answers how it ended. */
async function exec(command: string, args: string[]): Promise<Ran> {
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', npm_config_cache: process.env.npm_config_cache ?? '' };
  try {
    const { stdout, stderr } = await run(command, args, { cwd: app, env: Object.fromEntries(Object.entries(env).filter(([, v]) => v !== '')) });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const failed = e as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw e;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

/** `npx --no -- lethe …`: the installed bin, never one fetched from the registry. */
const npx = (...args: string[]): Promise<Ran> => exec('npx', ['--no', '--', 'lethe', ...args]);

describe('the installed lethe command', () => {
  beforeAll(async () => {
    dir = tempDir('lethe-cli-pack-');
    // a clone after `npm ci`: its dependencies (this checkout's), no dist/ — `npm pack` alone must build it
    const clone = copyOfWorkingTree(path.join(dir, 'clone'));
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(clone, 'node_modules'));
    builtBefore = existsSync(path.join(clone, 'dist'));
    const result = await pack(clone, dir).catch((e: { stdout?: string; stderr?: string }) => {
      throw new Error(`npm pack in a fresh clone failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
    });
    packed = result.packed;
    app = path.join(dir, 'app');
    await installInto(app, 'lethe-cli-consumer', result.tarball);
  }, 600_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('npm pack in a fresh clone builds dist/ (prepack): the tarball holds the compiled CLI, its bin and the migrations, not the sources or tests', () => {
    expect(builtBefore, 'the clone starts without dist/').toBe(false);
    const files = packed!.files.map((f) => f.path);
    expect(files).not.toContain('dist/.tsbuildinfo');
    for (const needed of ['package.json', 'dist/cli/bin.js', 'dist/cli/main.js', 'dist/db/client.js']) expect(files, needed).toContain(needed);
    expect(files.some((f) => /^drizzle\/\d{4}_.*\.sql$/.test(f))).toBe(true);
    for (const needed of ['LICENSE', 'README.md', 'SECURITY.md', 'docs/README.md']) expect(files, needed).toContain(needed);
    for (const absent of ['src/', 'test/', 'bench/', 'infra/', 'clients/', 'patches/', 'examples/'])
      expect(
        files.some((f) => f.startsWith(absent)),
        absent,
      ).toBe(false);
    // the one bundled dependency: postgres.js as patched at install here (patches/), which a consumer's install would not patch
    expect(files.filter((f) => f.startsWith('node_modules/')).every((f) => f.startsWith('node_modules/postgres/'))).toBe(true);
  });

  it('the installed lethe runs the patched postgres.js it bundles', () => {
    const installed = path.join(app, 'node_modules', 'lethe', 'node_modules', 'postgres', 'src', 'connection.js');
    expect(readFileSync(installed, 'utf8')).toContain('lethe patch');
    expect(readFileSync(installed, 'utf8')).toBe(readFileSync(path.join(ROOT, 'node_modules', 'postgres', 'src', 'connection.js'), 'utf8'));
  });

  it('npx lethe --help prints the usage and exits 0', async () => {
    const help = await npx('--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: lethe');
    expect(help.stdout).toContain('erasure');
  });

  it('npx lethe --version prints the package version and exits 0', async () => {
    const version = await npx('--version');
    expect(version).toMatchObject({ code: 0 });
    expect(version.stdout.trim()).toBe(VERSION);
  });

  it('node_modules/.bin/lethe, and a symlink to it, run the CLI', async () => {
    const bin = path.join(app, 'node_modules', '.bin', 'lethe');
    const direct = await exec(bin, ['--version']);
    expect(direct.code).toBe(0);
    expect(direct.stdout.trim()).toBe(VERSION);
    const link = path.join(dir, 'lethe');
    symlinkSync(bin, link);
    const linked = await exec(link, ['--version']);
    expect(linked.code).toBe(0);
    expect(linked.stdout.trim()).toBe(VERSION);
  });

  it('node <a symlink to dist/cli/main.js> runs the CLI too', async () => {
    const link = path.join(dir, 'main.js');
    symlinkSync(path.join(app, 'node_modules', 'lethe', 'dist', 'cli', 'main.js'), link);
    const linked = await exec(process.execPath, [link, '--version']);
    expect(linked.code).toBe(0);
    expect(linked.stdout.trim()).toBe(VERSION);
  });

  it('no command prints the usage on stderr and exits non-zero', async () => {
    const nothing = await npx();
    expect(nothing.code).not.toBe(0);
    expect(nothing.stdout).toBe('');
    expect(nothing.stderr).toContain('Usage: lethe');
  });

  it('an unknown command, or a client command without its token, exits non-zero with a message on stderr', async () => {
    const unknown = await npx('nonsense');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command 'nonsense'");
    const tokenless = await npx('erasure', 'show', 'ers_AAAAAAAAAAAAAAAAAAAAAA');
    expect(tokenless.code).toBe(2);
    expect(tokenless.stdout).toBe('');
    expect(tokenless.stderr).toContain('LETHE_TOKENS has no eraser token');
  });
});

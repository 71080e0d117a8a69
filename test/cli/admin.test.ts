/**
 * The lethe CLI as a child process (`node --import tsx src/cli/main.ts …`) against a
 * real PostgreSQL database: help, exit codes, migrate, KEK rotation and listing, the
 * audit chain (including tampering), and token generation — plus a service started
 * with the generated hashed-token file.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { TokenStore } from '../../src/http/auth.js';
import { startServer } from '../../src/app/serve.js';
import { createLogger } from '../../src/observability/logger.js';
import { openApp } from '../../src/app/open.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { buildProgram } from '../../src/cli/main.js';
import { CLI, type CliRun, runCli } from '../support/process.js';
import { tempDir, testEnv, TOKENS } from '../support/vault.js';

const CLI_TIMEOUT_MS = 60_000;
const TEST_TIMEOUT_MS = 90_000;

let db: TestDatabase;
let dataDir: string;
let env: Record<string, string>;

/** Runs the CLI with the test environment (plus `extra`) and collects its output. */
function cli(args: string[], extra: Record<string, string> = {}): Promise<CliRun> {
  return runCli(args, { ...env, ...extra }, { timeoutMs: CLI_TIMEOUT_MS });
}

function json<T>(run: CliRun): T {
  try {
    return JSON.parse(run.stdout) as T;
  } catch {
    throw new Error(`stdout is not JSON:\n${run.stdout}\nstderr:\n${run.stderr}`);
  }
}

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = tempDir('lethe-cli-');
  env = testEnv({ databaseUrl: db.url, dataDir });
});
afterAll(async () => {
  await db?.drop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('help and usage errors', () => {
  it.concurrent('`lethe --help` exits 0 and prints usage, the description and the configuration variables', { timeout: TEST_TIMEOUT_MS }, async () => {
    const run = await cli(['--help']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('Usage: lethe');
    expect(run.stdout).toContain('Crypto-shredding key vault');
    for (const command of ['serve', 'migrate', 'kek', 'audit', 'token']) expect(run.stdout).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'));
    expect(run.stdout).toContain('LETHE_TOKENS');
  });

  const HELP: ReadonlyArray<{ args: string[]; says: RegExp }> = [
    { args: ['serve'], says: /Run the HTTP service/ },
    { args: ['migrate'], says: /Apply database migrations/ },
    { args: ['kek', 'rotate'], says: /New KEK epoch/ },
    { args: ['kek', 'list'], says: /KEK epochs, their state/ },
    { args: ['audit', 'verify'], says: /Verify the audit chain/ },
    { args: ['token', 'new'], says: /A new token for a role/ },
  ];
  for (const { args, says } of HELP) {
    it.concurrent(`\`lethe ${args.join(' ')} --help\` exits 0 and prints usage with a description`, { timeout: TEST_TIMEOUT_MS }, async () => {
      const run = await cli([...args, '--help']);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain(`Usage: lethe ${args.join(' ')}`);
      expect(run.stdout).toMatch(says);
    });
  }

  it.concurrent('an unknown command exits non-zero and says the command is unknown', { timeout: TEST_TIMEOUT_MS }, async () => {
    const run = await cli(['frobnicate']);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/unknown command 'frobnicate'/);
  });

  it.concurrent('an unknown command with --help exits 2 naming it, with the closest command, at any depth', { timeout: TEST_TIMEOUT_MS }, async () => {
    const [top, nested] = await Promise.all([cli(['vacuum', '--help']), cli(['kek', 'lsit', '--help'])]);
    expect(top.code).toBe(2);
    expect(top.stdout).toBe('');
    expect(top.stderr).toContain("unknown command 'vacuum'; `lethe --help` lists them");
    expect(nested.code).toBe(2);
    expect(nested.stderr).toContain("unknown command 'lsit' (did you mean list?); `lethe kek --help` lists them");
  });

  it('every help is a synopsis: one short line per command and per option (the long story is docs/reference/cli.md)', () => {
    const walk = (c: Command): Command[] => [c, ...c.commands.flatMap(walk)];
    for (const c of walk(buildProgram())) {
      expect(c.description().length, `${c.name()}: ${c.description()}`).toBeLessThanOrEqual(100);
      for (const o of c.options) expect(o.description.length, `${c.name()} ${o.flags}: ${o.description}`).toBeLessThanOrEqual(120);
    }
  });

  it.concurrent('output into a closed pipe (`lethe --help | head -c 5`) ends quietly, exit 0', { timeout: TEST_TIMEOUT_MS }, async () => {
    const piped = spawnSync(
      'bash',
      ['-c', `set -o pipefail; node ${CLI.join(' ')} --help 2>"$1" | head -c 5 >/dev/null; echo "$?"; cat "$1"`, '_', path.join(dataDir, 'pipe.err')],
      {
        encoding: 'utf8',
        env: { ...process.env, ...env },
      },
    );
    const [status, ...stderr] = piped.stdout.split('\n');
    expect(stderr.join('\n').trim(), 'nothing on stderr').toBe('');
    expect(status).toBe('0');
  });

  it.concurrent('a usage error on a subcommand (missing role) exits 2, like one on the program', { timeout: TEST_TIMEOUT_MS }, async () => {
    const [sub, top] = await Promise.all([cli(['token', 'new']), cli(['--bogus'])]);
    expect(top.code).toBe(2);
    expect(sub.stderr).toMatch(/missing required argument 'role'/);
    expect(sub.code).toBe(2);
  });

  it.concurrent('a bad environment (PORT=abc) exits 2, names PORT on stderr and prints no secret', { timeout: TEST_TIMEOUT_MS }, async () => {
    const run = await cli(['migrate'], { PORT: 'abc' });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/\bPORT\b/);
    expect(run.stdout).toBe('');
    for (const secret of [env.LETHE_ROOT_KEY!, ...Object.values(TOKENS)]) expect(run.stderr).not.toContain(secret);
  });
});

describe('migrate, kek and audit against PostgreSQL', () => {
  let dekBefore = '';

  it('`migrate` exits 0 and prints JSON with activeEpoch 1', { timeout: TEST_TIMEOUT_MS }, async () => {
    const run = await cli(['migrate']);
    expect(run.code, run.stderr).toBe(0);
    expect(json(run)).toEqual({ migrated: true, database: 'postgres', activeEpoch: 1 });
  });

  it('`kek rotate` exits 0 and prints epoch 2, re-wrapping the live key', { timeout: TEST_TIMEOUT_MS }, async () => {
    // one live key, created in-process with the same environment
    const vault = await openApp(loadConfig(env), { logger: createLogger('silent'), listen: false });
    try {
      const lease = await vault.keys.lease('user:cli', 'writer');
      dekBefore = Buffer.from(lease.dek).toString('hex');
    } finally {
      await vault.close();
    }
    const run = await cli(['kek', 'rotate', '--quiet']);
    expect(run.code, run.stderr).toBe(0);
    const result = json<{ epoch: number; rewrapped: number; retired: number[]; resumed: boolean }>(run);
    expect(result.epoch).toBe(2);
    expect(result.rewrapped).toBe(1);
    expect(result.retired).toEqual([1]);
    expect(result.resumed).toBe(false);
  });

  it('after the CLI rotation the key still opens to the same DEK', async () => {
    expect(dekBefore).not.toBe('');
    const vault = await openApp(loadConfig(env), { logger: createLogger('silent'), listen: false });
    try {
      const lease = await vault.keys.lease('user:cli', 'writer');
      expect(Buffer.from(lease.dek).toString('hex')).toBe(dekBefore);
    } finally {
      await vault.close();
    }
  });

  it('`kek list` shows epoch 1 retired and epoch 2 active holding the key', { timeout: TEST_TIMEOUT_MS }, async () => {
    const run = await cli(['kek', 'list']);
    expect(run.code, run.stderr).toBe(0);
    const { epochs } = json<{ epochs: Array<{ epoch: number; state: string; keys: number; retiredAt: string | null }> }>(run);
    expect(epochs.map((e) => [e.epoch, e.state])).toEqual([
      [1, 'retired'],
      [2, 'active'],
    ]);
    expect(epochs[0]!.retiredAt).toEqual(expect.any(String));
    expect(epochs[1]!.keys).toBe(1);
  });

  it('`audit verify` exits 0 with ok: true over the whole chain', { timeout: TEST_TIMEOUT_MS }, async () => {
    const run = await cli(['audit', 'verify']);
    expect(run.code, run.stderr).toBe(0);
    const result = json<{ ok: boolean; rows: number; headSeq: number }>(run);
    expect(result.ok).toBe(true);
    expect(result.rows).toBeGreaterThanOrEqual(2);
    expect(result.headSeq).toBe(result.rows);
  });

  it('`audit verify` exits 1 naming row 2 after that row is edited in the database', { timeout: TEST_TIMEOUT_MS }, async () => {
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      const changed = await sql`update audit_log set actor = 'mallory' where seq = 2`;
      expect(changed.count).toBe(1);
    } finally {
      await sql.end({ timeout: 1 });
    }
    const run = await cli(['audit', 'verify']);
    expect(run.code).toBe(1);
    expect(json(run)).toMatchObject({ ok: false, brokenAt: 2 });
    expect(run.stderr).toMatch(/row 2\b/);
  });
});

describe('token new', () => {
  let token = '';
  let line = '';

  it('`token new writer` prints a token and its LETHE_TOKENS_FILE line', { timeout: TEST_TIMEOUT_MS }, async () => {
    const run = await cli(['token', 'new', 'writer']);
    expect(run.code, run.stderr).toBe(0);
    const out = json<{ role: string; token: string; tokensFileLine: string }>(run);
    expect(out.role).toBe('writer');
    expect(out.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(out.tokensFileLine).toMatch(/^writer=sha256:[0-9a-f]{64}$/);
    expect(out.tokensFileLine).toBe(`writer=sha256:${createHash('sha256').update(out.token).digest('hex')}`);
    expect(out.tokensFileLine).not.toContain(out.token);
    token = out.token;
    line = out.tokensFileLine;
  });

  it('`token new wizard` exits non-zero naming the roles', { timeout: TEST_TIMEOUT_MS }, async () => {
    const run = await cli(['token', 'new', 'wizard']);
    expect(run.code).not.toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/writer, backup, eraser, approver, admin/);
  });

  it('a token file holding that line gives the token the writer role and nothing else', () => {
    expect(line).not.toBe('');
    const file = path.join(dataDir, 'tokens');
    writeFileSync(file, `# generated by lethe token new\n${line}\n`);
    const store = TokenStore.fromFile(file);
    expect(store.size).toBe(1);
    expect(store.roleOf(token)).toBe('writer');
    expect(store.roleOf(`${token}x`)).toBeUndefined();
    expect(store.roleOf(line)).toBeUndefined();
  });

  it('a service started with LETHE_TOKENS_FILE accepts the generated token', { timeout: TEST_TIMEOUT_MS }, async () => {
    expect(line).not.toBe('');
    const file = path.join(dataDir, 'tokens-service');
    writeFileSync(file, `${line}\n`);
    const { LETHE_TOKENS: _unused, ...withoutTokens } = env;
    const config = loadConfig({ ...withoutTokens, LETHE_TOKENS_FILE: file, PORT: '0', HOST: '127.0.0.1' });
    const server = await startServer(config, createLogger('silent'));
    try {
      const base = `http://127.0.0.1:${server.port}`;
      const ok = await fetch(`${base}/v1/subjects/user:token-file/key`, { method: 'PUT', headers: { authorization: `Bearer ${token}` } });
      expect(ok.status, await ok.text()).toBe(201);
      const refused = await fetch(`${base}/v1/subjects/user:token-file/key`, { method: 'PUT', headers: { authorization: `Bearer ${TOKENS.writer}` } });
      expect(refused.status).toBe(401);
      const forbidden = await fetch(`${base}/v1/admin/kek`, { headers: { authorization: `Bearer ${token}` } });
      expect(forbidden.status).toBe(403);
    } finally {
      await server.close();
    }
  });
});

describe('serve on a port already in use', () => {
  it('exits 2 within 10 s naming PORT, having opened and created nothing', { timeout: TEST_TIMEOUT_MS }, async () => {
    const holder = createServer(() => {});
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as AddressInfo).port;
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), 'lethe-busy-')), 'vault');
    try {
      const started = Date.now();
      // the CLI's own run is killed at 10 s: an exit after that fails the test
      const run = await runCli(['serve'], { ...env, LETHE_DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1' }, { timeoutMs: 10_000 });
      expect(run.stderr).not.toMatch(/killed after/);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(/PORT: 127\.0\.0\.1:\d+ is in use/);
      expect(existsSync(dataDir), 'no vault was created').toBe(false);
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  });
});

describe('local commands never create a vault', () => {
  const LOCAL: string[][] = [
    ['kek', 'list'],
    ['kek', 'rotate'],
    ['certificate', 'keys'],
    ['certificate', 'public-key'],
    ['log', 'fsck'],
    ['audit', 'verify'],
    ['reindex'],
  ];
  for (const args of LOCAL) {
    it.concurrent(`\`lethe ${args.join(' ')}\` where no vault is: exit 2 naming the folder it would use, nothing created`, {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const empty = mkdtempSync(path.join(tmpdir(), 'lethe-empty-'));
      try {
        const vault = path.join(empty, 'vault');
        // the embedded default (no DATABASE_URL), as on a laptop; a typo'd variable is said on the way
        const { DATABASE_URL: _db, ...embedded } = env;
        const run = await runCli(args, { ...embedded, LETHE_DATA_DIR: vault, LETHE_TOKEN: 'x' }, { timeoutMs: CLI_TIMEOUT_MS });
        expect(run.code, run.stderr).toBe(2);
        expect(run.stderr).toContain(`no vault at ${vault} (LETHE_DATA_DIR): nothing was created`);
        expect(run.stderr).toContain('LETHE_TOKEN: not a variable lethe reads (did you mean LETHE_TOKENS?)');
        expect(existsSync(vault)).toBe(false);
      } finally {
        rmSync(empty, { recursive: true, force: true });
      }
    });
  }

  it.concurrent('an empty keyring folder (a volume mounted, a start that failed) is no vault: exit 2, nothing written', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const vault = mkdtempSync(path.join(tmpdir(), 'lethe-emptyvault-'));
    try {
      mkdirSync(path.join(vault, 'keyring'), { mode: 0o700 });
      const { DATABASE_URL: _db, ...embedded } = env;
      const run = await runCli(['certificate', 'keys'], { ...embedded, LETHE_DATA_DIR: vault }, { timeoutMs: CLI_TIMEOUT_MS });
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain(`no vault at ${vault} (LETHE_DATA_DIR)`);
      expect(readdirSync(path.join(vault, 'keyring'))).toEqual([]);
    } finally {
      rmSync(vault, { recursive: true, force: true });
    }
  });

  it.concurrent('--data-dir names the vault after the command too', { timeout: TEST_TIMEOUT_MS }, async () => {
    const missing = path.join(tmpdir(), `lethe-missing-${process.pid}`);
    const run = await cli(['kek', 'list', '--data-dir', missing]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`no vault at ${missing} (LETHE_DATA_DIR)`);
    expect(existsSync(missing)).toBe(false);
  });
});

/**
 * File modes (issue 13, part 7): LETHE_DATA_DIR and the local keyring are private to
 * the service — folders 0700, files 0600, PGlite's cluster included — and a data
 * directory or keyring that others may write into stops the service at start-up with
 * a message naming the path, its mode and the fix. NODE_ENV is compared trimmed and
 * case-insensitively.
 */
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openApp } from '../../src/app/open.js';
import { loadConfig } from '../../src/config/index.js';
import { isLetheError } from '../../src/errors.js';
import { loadRootKey } from '../../src/keyprovider/root-key.js';
import { createLogger } from '../../src/observability/logger.js';
import { runCli } from '../support/process.js';
import { TOKENS_ENV, tempDir, testEnv } from '../support/vault.js';

const logger = createLogger('silent');

/** Every entry under `root` (itself included) with its type and permission bits. */
function modes(root: string): Array<{ path: string; kind: 'dir' | 'file' | 'link'; mode: string }> {
  const out: Array<{ path: string; kind: 'dir' | 'file' | 'link'; mode: string }> = [];
  const walk = (p: string) => {
    const st = lstatSync(p);
    const kind = st.isSymbolicLink() ? 'link' : st.isDirectory() ? 'dir' : 'file';
    out.push({ path: path.relative(root, p) || '.', kind, mode: (st.mode & 0o777).toString(8).padStart(3, '0') });
    if (kind === 'dir') for (const name of readdirSync(p)) walk(path.join(p, name));
  };
  walk(root);
  return out;
}

/** The entries whose mode is not 700 (folders) or 600 (files). */
function loose(root: string) {
  return modes(root).filter((m) => m.kind !== 'link' && m.mode !== (m.kind === 'dir' ? '700' : '600'));
}

describe('a first start on a fresh data directory', () => {
  const parent = tempDir('lethe-modes-');
  const dataDir = path.join(parent, 'fresh', 'lethe-data');
  let savedUmask: number;

  beforeAll(() => {
    // the most permissive umask: every mode below is set by lethe, none left to the umask
    savedUmask = process.umask(0o000);
  });
  afterAll(() => {
    process.umask(savedUmask);
    rmSync(parent, { recursive: true, force: true });
  });

  it('makes every folder 0700 and every file 0600 — the embedded database, the keyring, the objects and the development root key', {
    timeout: 120_000,
  }, async () => {
    // no DATABASE_URL (PGlite), no S3 (local objects), no root key (a development key in the data directory)
    const config = loadConfig({ LETHE_DATA_DIR: dataDir, LETHE_TOKENS: TOKENS_ENV, LETHE_LOG_LEVEL: 'silent' });
    const app = await openApp(config, { logger });
    try {
      await app.log.append('user:modes', { text: 'a note written to the local object store', kind: 'note' }, 'writer');
      await app.keys.lease('user:modes', 'writer');
      // while the service runs
      expect(loose(dataDir)).toEqual([]);
    } finally {
      await app.close();
    }
    const all = modes(dataDir);
    const names = all.map((m) => m.path);
    expect(names).toEqual(expect.arrayContaining(['.', 'dev-root.key', 'keyring', 'keyring/epoch-00000001.kek', 'pgdata', 'pgdata/PG_VERSION', 'objects']));
    expect(all.filter((m) => m.path.startsWith('pgdata/') && m.kind === 'file').length).toBeGreaterThan(100);
    expect(all.some((m) => m.path.startsWith('objects/') && m.kind === 'file')).toBe(true);
    // and after it stopped
    expect(loose(dataDir)).toEqual([]);

    // a second start finds the cluster private again, whatever it wrote meanwhile
    const again = await openApp(config, { logger });
    await again.close();
    expect(loose(dataDir)).toEqual([]);
  });

  it('tightens a cluster left world-writable by an earlier version on the next start', { timeout: 120_000 }, async () => {
    const pgFile = path.join(dataDir, 'pgdata', 'PG_VERSION');
    chmodSync(pgFile, 0o666);
    chmodSync(path.join(dataDir, 'pgdata', 'base'), 0o755);
    chmodSync(path.join(dataDir, 'keyring', 'epoch-00000001.kek'), 0o644);
    expect(
      loose(dataDir)
        .map((m) => m.path)
        .sort(),
    ).toEqual(['keyring/epoch-00000001.kek', 'pgdata/PG_VERSION', 'pgdata/base']);
    const app = await openApp(loadConfig({ LETHE_DATA_DIR: dataDir, LETHE_TOKENS: TOKENS_ENV, LETHE_LOG_LEVEL: 'silent' }), { logger });
    await app.close();
    expect(loose(dataDir)).toEqual([]);
  });
});

describe('a data directory or keyring that others may write into', () => {
  const dirs: string[] = [];
  const fresh = () => {
    const d = tempDir('lethe-loose-');
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  async function refusal(env: Record<string, string>): Promise<Error> {
    const err = await openApp(loadConfig(env), { logger }).then(
      async (app) => {
        await app.close();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(isLetheError(err, 'validation_failed'), String(err)).toBe(true);
    return err as Error;
  }

  it.each(['0777', '0770', '0775', '0757'])('refuses a data directory of mode %s, naming it, its mode and the fix, before touching it', async (shown) => {
    const dataDir = fresh();
    chmodSync(dataDir, parseInt(shown, 8));
    const err = await refusal(testEnv({ dataDir }));
    expect(err.message).toContain(dataDir);
    expect(err.message).toContain(`mode ${shown}`);
    expect(err.message).toContain('LETHE_DATA_DIR');
    expect(err.message).toContain(`chmod 700 '${dataDir}'`);
    // refused before anything was created in it
    expect(readdirSync(dataDir)).toEqual([]);
  });

  it('refuses a keyring directory of mode 0777 (outside the data directory), naming it', async () => {
    const dataDir = fresh();
    const keyringDir = path.join(fresh(), 'keys');
    mkdirSync(keyringDir);
    chmodSync(keyringDir, 0o777);
    const err = await refusal(testEnv({ dataDir, extra: { LETHE_KEYRING_DIR: keyringDir } }));
    expect(err.message).toContain(keyringDir);
    expect(err.message).toContain('mode 0777');
    expect(err.message).toContain('LETHE_KEYRING_DIR');
    expect(err.message).toContain(`chmod 700 '${keyringDir}'`);
    expect(readdirSync(keyringDir)).toEqual([]);
  });

  it('accepts a data directory others may read but not write (0755), and creates a missing keyring 0700', async () => {
    const dataDir = fresh();
    chmodSync(dataDir, 0o755);
    const keyringDir = path.join(fresh(), 'a', 'keys');
    const app = await openApp(loadConfig(testEnv({ dataDir, extra: { LETHE_KEYRING_DIR: keyringDir } })), { logger });
    await app.close();
    expect(lstatSync(keyringDir).mode & 0o777).toBe(0o700);
    expect(lstatSync(path.dirname(keyringDir)).mode & 0o777).toBe(0o700);
    expect(loose(keyringDir)).toEqual([]);
  });

  it('`lethe serve` stops with exit 2 and the message on stderr', { timeout: 60_000 }, async () => {
    const dataDir = fresh();
    chmodSync(dataDir, 0o777);
    const run = await runCli(['serve'], { ...testEnv({ dataDir }), PORT: '0' }, { timeoutMs: 45_000 });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`${dataDir} has mode 0777`);
    expect(run.stderr).toContain(`chmod 700 '${dataDir}'`);
    expect(existsSync(path.join(dataDir, 'keyring'))).toBe(false);
  });
});

describe('NODE_ENV', () => {
  const base = { LETHE_DATA_DIR: '/nonexistent/lethe', LETHE_TOKENS: TOKENS_ENV };

  it.each(['production', 'Production', 'PRODUCTION', ' production', 'production\n', '\tProDuction  '])('%j is production', (value) => {
    const config = loadConfig({ ...base, NODE_ENV: value });
    expect(config.production).toBe(true);
    // and production never generates a development root key
    expect(() => loadRootKey(config, () => {})).toThrow(/never generated when NODE_ENV=production/);
  });

  it.each(['development', 'test', 'prod', 'productionx', 'pre-production', ''])('%j is not production', (value) => {
    expect(loadConfig({ ...base, NODE_ENV: value }).production).toBe(false);
  });

  it('unset is not production', () => {
    expect(loadConfig(base).production).toBe(false);
  });
});

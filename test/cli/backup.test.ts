/**
 * `lethe backup run | list | verify | propagate` as child processes: run and list go
 * through the running service with the backup role's token; verify and propagate
 * open the vault. Bad input exits non-zero with a plain message.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { startServer, type RunningServer } from '../../src/app/serve.js';
import { createLogger } from '../../src/observability/logger.js';
import { runCli } from '../support/process.js';
import { openTestVault, type TestVault, TOKENS } from '../support/vault.js';

const TIMEOUT = 120_000;

describe('lethe backup', () => {
  let tv: TestVault;
  let server: RunningServer;
  let env: Record<string, string>;
  let keyA = '';

  beforeAll(async () => {
    tv = await openTestVault();
    keyA = (await tv.app.log.append('user:cli-a', { text: 'A: the spare key is under the mat.' }, 'writer')).keyId;
    await tv.app.log.append('user:cli-b', { text: 'B: likes rowing.' }, 'writer');
    server = await startServer(loadConfig({ ...tv.env, PORT: '0', HOST: '127.0.0.1' }), createLogger('silent'));
    env = { ...tv.env, PATH: process.env.PATH ?? '', LETHE_URL: `http://127.0.0.1:${server.port}`, LETHE_TOKENS: `backup=${TOKENS.backup}` };
  }, TIMEOUT);
  afterAll(async () => {
    await server?.close();
    await tv?.close();
  });

  it('`run` takes a backup through the service, `list` shows it, `verify` passes, and after a destruction `propagate` and `verify` show the key destroyed and its data unreadable', {
    timeout: TIMEOUT,
  }, async () => {
    const run = await runCli(['backup', 'run'], env);
    expect(run.code, run.stderr).toBe(0);
    // not a terminal: JSON lines on stdout, progress first, the result last
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.length).toBeGreaterThan(2);
    expect(lines.slice(0, -1).every((l) => typeof l.progress === 'object')).toBe(true);
    expect(lines.slice(0, -1).map((l) => (l.progress as { phase: string }).phase)).toContain('objects');
    const taken = lines.at(-1) as { backupId: string; objects: number; keys: number };
    expect(taken).toMatchObject({ objects: 2, keys: 2 });

    const list = await runCli(['backup', 'list'], env);
    expect(list.code, list.stderr).toBe(0);
    expect((JSON.parse(list.stdout) as { backups: Array<{ backupId: string }> }).backups.map((b) => b.backupId)).toContain(taken.backupId);

    const ok = await runCli(['backup', 'verify', taken.backupId], env);
    expect(ok.code, ok.stderr).toBe(0);
    const verified = JSON.parse(ok.stdout) as { ok: boolean; keys: Array<{ keyId: string; state: string; data: string }> };
    expect(verified.ok).toBe(true);
    expect(verified.keys.every((k) => k.state === 'active' && k.data === 'decrypts')).toBe(true);

    await tv.app.keys.destroyKey(keyA, { reason: 'erasure', actor: 'eraser' });
    const propagated = await runCli(['backup', 'propagate'], env);
    expect(propagated.code, propagated.stderr).toBe(0);
    const after = await runCli(['backup', 'verify', taken.backupId], env);
    expect(after.code, after.stderr).toBe(0);
    const a = (JSON.parse(after.stdout) as { keys: Array<{ keyId: string; state: string; data: string }> }).keys.find((k) => k.keyId === keyA);
    expect(a).toMatchObject({ state: 'destroyed', data: 'unreadable' });
  });

  it('`verify` names a corrupted object and exits 1', { timeout: TIMEOUT }, async () => {
    const { backupId } = await tv.app.backups.run();
    const manifest = await tv.app.backups.manifest(backupId);
    const victim = manifest.objects[0]!;
    const original = await tv.app.backups.store.get(victim.stored);
    await tv.app.backups.store.put(victim.stored, new Uint8Array([0x4c, 0x45, 0, 0]));
    try {
      const run = await runCli(['backup', 'verify', backupId], env);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(victim.key);
      expect((JSON.parse(run.stdout) as { corrupted: Array<{ key: string; reason: string }> }).corrupted).toEqual([
        { key: victim.key, stored: victim.stored, reason: 'sha256-mismatch' },
      ]);
    } finally {
      await tv.app.backups.store.put(victim.stored, original);
    }
  });

  it('`restore --witness` refuses a witness it cannot read or that is neither a head nor a certificate, naming it (exit 2); `repair-ledger` on a whole chain puts nothing back (exit 0)', {
    timeout: TIMEOUT,
  }, async () => {
    const missing = await runCli(['backup', 'restore', 'bak_AAAAAAAAAAAAAAAAAAAAAA', '--witness', path.join(tv.dataDir, 'nowhere.json')], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read witness .*nowhere\.json: ENOENT/);
    const junk = path.join(tv.dataDir, 'junk.json');
    writeFileSync(junk, JSON.stringify({ hello: 'world' }));
    const refused = await runCli(['backup', 'restore', 'bak_AAAAAAAAAAAAAAAAAAAAAA', '--witness', junk], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/junk\.json is neither a ledger head nor an erasure certificate/);
    await runCli(['backup', 'propagate'], env);
    const repaired = await runCli(['backup', 'repair-ledger'], env);
    expect(repaired.code, repaired.stderr).toBe(0);
    expect(JSON.parse(repaired.stdout)).toEqual({ putBack: [], anchored: true });
  });

  it('refuses without a token (exit 2), with a wrong token (exit 1, 401), with a bad URL (exit 2), and for an unknown backup (exit 1)', {
    timeout: TIMEOUT,
  }, async () => {
    const { LETHE_TOKENS: _t, ...noToken } = env;
    const missing = await runCli(['backup', 'run'], noToken);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('LETHE_TOKENS has no backup token');
    const wrong = await runCli(['backup', 'list'], { ...env, LETHE_TOKENS: `backup=${TOKENS.writer}` });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('403');
    expect(wrong.stderr).not.toContain(TOKENS.writer);
    const badUrl = await runCli(['backup', 'run'], { ...env, LETHE_URL: 'ftp://nowhere' });
    expect(badUrl.code).toBe(2);
    const unknown = await runCli(['backup', 'verify', 'bak_AAAAAAAAAAAAAAAAAAAAAA'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('not_found');
  });
});

/**
 * The embedded default: `npm start` with nothing configured but tokens and a data
 * directory runs on PGlite with a local keyring and a generated development root key.
 */
import { readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningService, startService } from '../support/process.js';
import { TOKENS, TOKENS_ENV, tempDir } from '../support/vault.js';

const writer = { authorization: `Bearer ${TOKENS.writer}` };

describe('npm start on the embedded default (PGlite, local keyring, development root key)', () => {
  const dataDir = tempDir('lethe-embedded-');
  const env = { LETHE_DATA_DIR: dataDir, LETHE_TOKENS: TOKENS_ENV };
  let service: RunningService | undefined;

  beforeAll(async () => {
    service = await startService('npm', ['start', '--silent'], env, 150_000);
  }, 180_000);
  afterAll(async () => {
    await service?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts with a loud development-root-key warning and keeps its data under LETHE_DATA_DIR', async () => {
    expect(service!.stderr()).toContain('DEVELOPMENT ROOT KEY');
    const keyFile = path.join(dataDir, 'dev-root.key');
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    // the epoch's KEK, and the certificate-signing keys a fresh keyring gets at its first opening
    expect(readdirSync(path.join(dataDir, 'keyring')).sort()).toEqual(['certificate-signing', 'epoch-00000001.kek']);
    expect(statSync(path.join(dataDir, 'pgdata')).isDirectory()).toBe(true);
    const ready = await fetch(`${service!.url}/readyz`);
    expect(ready.status).toBe(200);
    // the local backup folder cannot enforce Object Lock: ready, with the warning named
    const body = (await ready.json()) as { status: string; checks: Record<string, string>; warnings?: string[] };
    expect(body).toMatchObject({ status: 'ok', checks: { database: 'ok', objectStore: 'ok', ledgerLock: 'off', ledgerWrites: 'ok' } });
    expect(body.warnings?.join(' ')).toMatch(/not under Object Lock: the backup store is a local folder/);
  });

  it('creates keys and leases, and hands out the same DEK after a restart', async () => {
    const put = await fetch(`${service!.url}/v1/subjects/user:embedded/key`, { method: 'PUT', headers: writer });
    expect(put.status).toBe(201);
    const first = (await (await fetch(`${service!.url}/v1/subjects/user:embedded/key/lease`, { method: 'POST', headers: writer })).json()) as {
      keyId: string;
      dek: string;
    };
    await service!.stop();
    // second start: already built, same code path without the build step
    service = await startService(process.execPath, ['dist/cli/main.js', 'serve'], env, 120_000);
    expect(service.stderr()).toContain('DEVELOPMENT ROOT KEY');
    expect(service.stderr()).not.toContain('GENERATED A NEW');
    const again = (await (await fetch(`${service.url}/v1/subjects/user:embedded/key/lease`, { method: 'POST', headers: writer })).json()) as {
      keyId: string;
      dek: string;
    };
    expect(again).toMatchObject({ keyId: first.keyId, dek: first.dek });
  });
});

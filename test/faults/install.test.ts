/**
 * infra/toxiproxy.sh, the way the suite and CI get Toxiproxy: a binary named by
 * LETHE_TOXIPROXY_BIN is used as it is (and refused plainly when it is not an
 * executable), and a binary already in the cache is reused without building.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/vault.js';

const script = 'infra/toxiproxy.sh';
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('infra/toxiproxy.sh', () => {
  it('prints LETHE_TOXIPROXY_BIN when it is an executable, and refuses it with a plain message when not', () => {
    const dir = tempDir('lethe-toxi-');
    dirs.push(dir);
    const bin = path.join(dir, 'toxiproxy-server');
    writeFileSync(bin, '#!/bin/sh\n');
    chmodSync(bin, 0o755);
    const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' };
    expect(execFileSync('bash', [script], { env: { ...env, LETHE_TOXIPROXY_BIN: bin }, encoding: 'utf8' }).trim()).toBe(bin);
    const missing = spawnSync('bash', [script], { env: { ...env, LETHE_TOXIPROXY_BIN: path.join(dir, 'nothing') }, encoding: 'utf8' });
    expect(missing.status).toBe(1);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toContain('is not an executable file');
  });

  it('reuses a binary already in the cache (no build)', () => {
    const cache = tempDir('lethe-toxi-cache-');
    dirs.push(cache);
    const binDir = path.join(cache, 'toxiproxy-v2.5.0', 'bin');
    mkdirSync(binDir, { recursive: true });
    const bin = path.join(binDir, 'toxiproxy-server');
    writeFileSync(bin, '#!/bin/sh\n');
    chmodSync(bin, 0o755);
    // no Go on the PATH: a build would fail, so an answer proves none was attempted
    const r = spawnSync('/bin/bash', [script], {
      env: { PATH: '/nonexistent', HOME: process.env.HOME ?? '/tmp', LETHE_TOXIPROXY_CACHE: cache },
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe(bin);
  });
});

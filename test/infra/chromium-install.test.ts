/**
 * infra/chromium.sh, the way `npm test` and .ci/run get Chromium: a binary that is there
 * is printed and nothing is installed; when there is none and apt-get cannot install
 * it, the script says what to do and exits 1, printing no path.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/vault.js';

const script = 'infra/chromium.sh';
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('infra/chromium.sh', () => {
  it('prints LETHE_CHROMIUM when it is an executable, and installs nothing', () => {
    const dir = tempDir('lethe-chromium-');
    dirs.push(dir);
    const bin = path.join(dir, 'chromium');
    writeFileSync(bin, '#!/bin/sh\n');
    chmodSync(bin, 0o755);
    // no apt-get on the PATH: an install would fail, so a clean answer proves none was tried
    const r = spawnSync('/bin/bash', [script], { env: { PATH: '/nonexistent', LETHE_CHROMIUM: bin }, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`${bin}\n`);
  });

  it('says how to install Chromium and exits 1 when there is none and apt-get is not there', () => {
    const dir = tempDir('lethe-chromium-');
    dirs.push(dir);
    // a PATH with `id` only: no apt-get, no sudo
    const bin = path.join(dir, 'bin');
    mkdirSync(bin);
    symlinkSync('/usr/bin/id', path.join(bin, 'id'));
    const missing = path.join(dir, 'no-chromium');
    const r = spawnSync('/bin/bash', [script], { env: { PATH: bin, LETHE_CHROMIUM: missing }, encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`no Chromium at ${missing}: installing Debian's chromium\n`);
    expect(r.stderr).toContain(
      "Chromium could not be installed (apt-get failed): run 'apt-get install -y chromium' as root, or set LETHE_CHROMIUM to a Chromium binary\n",
    );
  });
});

/**
 * scripts/ensure-deps.mjs decides when `npm start` runs `npm ci`: on folders made up
 * here (a package-lock.json, and what npm would have left in node_modules), without npm.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error plain JavaScript without declarations (it runs before node_modules exists)
import { dependencyState } from '../../scripts/ensure-deps.mjs';

const state = dependencyState as (root: string) => { current: boolean; reason?: string };

const pkg = (version: string, extra: object = {}) => ({ version, resolved: `https://registry.npmjs.org/x/-/x-${version}.tgz`, ...extra });
const LOCK = {
  name: 'app',
  lockfileVersion: 3,
  packages: { '': { name: 'app' }, 'node_modules/a': pkg('1.0.0'), 'node_modules/b': pkg('2.0.0'), 'node_modules/c-darwin': pkg('3.0.0', { optional: true }) },
};
/** What npm ci leaves in node_modules/.package-lock.json for LOCK on Linux (no root entry, no other platform's optional package). */
const INSTALLED = { name: 'app', lockfileVersion: 3, packages: { 'node_modules/a': pkg('1.0.0'), 'node_modules/b': pkg('2.0.0') } };

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function project(installed: object | undefined, lock: object = LOCK): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'lethe-deps-'));
  dirs.push(dir);
  writeFileSync(path.join(dir, 'package-lock.json'), JSON.stringify(lock));
  if (installed) {
    mkdirSync(path.join(dir, 'node_modules'));
    writeFileSync(path.join(dir, 'node_modules', '.package-lock.json'), JSON.stringify(installed));
  }
  return dir;
}

describe('scripts/ensure-deps.mjs: are the dependencies current?', () => {
  it('installs on a first run (no node_modules)', () => {
    expect(state(project(undefined))).toEqual({ current: false, reason: 'first run: node_modules is missing' });
  });

  it("is current when npm's record matches the lockfile (optional packages of other platforms absent), and remembers it", () => {
    const dir = project(INSTALLED);
    expect(state(dir)).toEqual({ current: true });
    expect(readFileSync(path.join(dir, 'node_modules', '.lethe-lock-hash'), 'utf8')).toMatch(/^[0-9a-f]{64}\n$/);
    expect(state(dir)).toEqual({ current: true });
  });

  it('installs when package-lock.json changed since (a package at another version)', () => {
    const dir = project(INSTALLED);
    expect(state(dir).current).toBe(true);
    writeFileSync(path.join(dir, 'package-lock.json'), JSON.stringify({ ...LOCK, packages: { ...LOCK.packages, 'node_modules/b': pkg('2.1.0') } }));
    expect(state(dir)).toEqual({ current: false, reason: 'node_modules does not match package-lock.json: b is not at the locked version' });
  });

  it('installs when a locked package is missing, or one is installed that the lockfile does not name', () => {
    expect(state(project({ packages: { 'node_modules/a': pkg('1.0.0') } }))).toEqual({
      current: false,
      reason: 'node_modules does not match package-lock.json: b is not installed',
    });
    expect(state(project({ packages: { ...INSTALLED.packages, 'node_modules/z': pkg('9.0.0') } }))).toEqual({
      current: false,
      reason: 'node_modules does not match package-lock.json: z is installed but not in package-lock.json',
    });
  });

  it('installs when node_modules holds no record of what npm installed', () => {
    const dir = project(undefined);
    mkdirSync(path.join(dir, 'node_modules'));
    expect(state(dir)).toEqual({ current: false, reason: 'node_modules does not match package-lock.json: node_modules has no record of what npm installed' });
  });

  it('fails with a plain message without package-lock.json', () => {
    const dir = project(undefined);
    rmSync(path.join(dir, 'package-lock.json'));
    expect(() => state(dir)).toThrow('package-lock.json is missing: the dependencies cannot be installed from a lockfile');
  });
});

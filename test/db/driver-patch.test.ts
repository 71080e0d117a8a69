/**
 * The postgres.js dropped-connection crash is patched at install (patch-package,
 * patches/postgres+3.4.9.patch): a query on a connection whose backend went away
 * rejects with CONNECTION_CLOSED instead of ending the process from a setImmediate.
 * The same reproduction is run against the installed driver and against a copy with
 * the patch taken out, so the test shows both that the crash is real and that the
 * patch is what stops it.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const script = path.join(root, 'test/support/pg-dropped-connection.mjs');
const installed = path.join(root, 'node_modules/postgres');
const patchFile = path.join(root, 'patches/postgres+3.4.9.patch');

function reproduce(driverDir: string, url: string): { status: number | null; out: string } {
  const run = spawnSync(process.execPath, [script, path.join(driverDir, 'src/index.js'), url], { encoding: 'utf8', timeout: 30_000 });
  return { status: run.status, out: `${run.stdout}${run.stderr}` };
}

describe('postgres.js on a dropped connection', () => {
  let db: TestDatabase;
  let unpatched: string;

  beforeAll(async () => {
    db = await createTestDatabase('lethe_driver');
    unpatched = mkdtempSync(path.join(tmpdir(), 'lethe-postgres-unpatched-'));
    cpSync(installed, path.join(unpatched, 'postgres'), { recursive: true });
    // take the patch out again: the driver as npm ships it
    const reverse = spawnSync('patch', ['-R', '-p3', '-d', path.join(unpatched, 'postgres'), '-i', patchFile], { encoding: 'utf8' });
    expect(reverse.status, reverse.stdout + reverse.stderr).toBe(0);
  });
  afterAll(async () => {
    if (unpatched) rmSync(unpatched, { recursive: true, force: true });
    await db?.drop();
  });

  it('the installed driver carries the patch (applied by patch-package at install)', () => {
    expect(existsSync(patchFile)).toBe(true);
    for (const build of ['src', 'cjs/src']) {
      expect(readFileSync(path.join(installed, build, 'connection.js'), 'utf8')).toContain('lethe patch (porsager/postgres#1154');
    }
    expect(readFileSync(path.join(unpatched, 'postgres/src/connection.js'), 'utf8')).not.toContain('lethe patch');
  });

  it('unpatched, a query on a reserved connection whose backend was terminated ends the process', () => {
    const { status, out } = reproduce(path.join(unpatched, 'postgres'), db.url);
    expect(status).not.toBe(0);
    expect(out).toContain("Cannot read properties of null (reading 'write')");
    expect(out).not.toContain('alive');
  });

  it('patched, the same query rejects with CONNECTION_CLOSED; the process lives on and the released connection does not poison the pool', () => {
    const { status, out } = reproduce(installed, db.url);
    expect(out).toContain('reserved: CONNECTION_CLOSED');
    expect(out).toContain('pool after: 1');
    expect(out).toContain('alive');
    expect(status).toBe(0);
    // transactions whose backend died are rejected, never left hanging
    expect(out.match(/^transaction: /gm)).toHaveLength(3);
    expect(out).not.toContain('transaction: no error');
    // and a query waiting behind a dead transaction gets the reconnected connection, not its ROLLBACK's error
    expect(out).toContain('one-connection transaction: ');
    expect(out).toContain('queued behind it: 42');
  });
});

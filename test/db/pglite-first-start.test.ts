/**
 * PGlite unpacks its first cluster with world-writable files (0666) and makes them
 * private only once it is open: lethe creates the cluster's folder 0700 before PGlite
 * writes anything into it, so for that moment no other user can reach them (issue 29,
 * a low finding: about 970 world-writable files for ~0.3 s on a first start).
 */
import { lstatSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { tempDir } from '../support/vault.js';

/** The mode of the cluster's folder each time a PGlite was constructed over one. */
const seen = vi.hoisted(() => [] as Array<{ dir: string; mode: number | undefined }>);

vi.mock('@electric-sql/pglite', async (importOriginal) => {
  const real = await importOriginal<typeof import('@electric-sql/pglite')>();
  const { lstatSync: stat } = await import('node:fs');
  class WatchedPGlite extends real.PGlite {
    constructor(...args: ConstructorParameters<typeof real.PGlite>) {
      const dir = args[0];
      if (typeof dir === 'string') seen.push({ dir, mode: stat(dir, { throwIfNoEntry: false })?.mode });
      super(...args);
    }
  }
  return { ...real, PGlite: WatchedPGlite };
});

const { openDb } = await import('../../src/db/client.js');

describe("the embedded database's first start", () => {
  const parent = tempDir('lethe-pglite-first-');
  const saved = process.umask(0o000);
  afterAll(() => {
    process.umask(saved);
    rmSync(parent, { recursive: true, force: true });
  });

  it('creates the cluster folder 0700 before PGlite unpacks into it, and leaves every file in it private', { timeout: 120_000 }, async () => {
    const dataDir = path.join(parent, 'pglite');
    const db = await openDb({ dataDir });
    try {
      expect(seen.map((s) => s.dir)).toEqual([dataDir]);
      expect(seen[0]!.mode, 'the folder did not exist when PGlite began').toBeDefined();
      expect((seen[0]!.mode! & 0o777).toString(8)).toBe('700');
      expect((lstatSync(dataDir).mode & 0o777).toString(8)).toBe('700');
    } finally {
      await db.close();
    }
  });
});

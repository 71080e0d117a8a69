/**
 * Restores that cannot finish, on PostgreSQL and a real MinIO. A restore either
 * completes or leaves the target exactly as it found it: when regenerating a stale
 * artifact throws after the database was loaded, or a backup object fails its sha256
 * half-way through the copy, every lethe table holds again the fresh database's own
 * rows (row for row) and the live bucket lists what it listed before. A backup whose
 * keys are wrapped under an epoch the key provider destroyed (a rotation retired it)
 * is refused up front, naming the epoch and when it was destroyed, and writes nothing.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { getTableName, is, sql } from 'drizzle-orm';
import { PgTable } from 'drizzle-orm/pg-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExtractiveRegenerator, type Regenerator } from '../../src/artifacts/regenerator.js';
import { manifestKey } from '../../src/backups/manifest.js';
import { queryRows } from '../../src/db/client.js';
import * as schema from '../../src/db/schema.js';
import type { App } from '../../src/app/open.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { minioEnv, openTestVault, tempDir, type TestVault } from '../support/vault.js';
import { allVersions, keysUnder, minioClient, readJson } from './support.js';
import type { Manifest } from '../../src/backups/manifest.js';

/** Every lethe table, as schema.ts defines them. */
const TABLES = (Object.values(schema) as unknown[])
  .filter((t): t is PgTable => is(t, PgTable))
  .map((t) => getTableName(t))
  .sort();

/** Every row of every lethe table, as PostgreSQL prints it, sorted: equal only when the tables hold exactly the same rows. */
async function tableRows(app: App): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const name of TABLES) {
    const rows = await queryRows<{ r: string }>(app.db.db, sql.raw(`select t::text as r from ${name} t order by 1`));
    out[name] = rows.map((x) => x.r);
  }
  return out;
}

/** What the live bucket lists (every object, with its size). */
async function bucketListing(app: App): Promise<string[]> {
  const out: string[] = [];
  for await (const o of app.objects.list('')) out.push(`${o.key} ${o.size}`);
  return out;
}

const bucket = (p: string) => `${p}-${randomBytes(4).toString('hex')}`;

/** A regenerator whose first call regenerates and every later one throws: a restore that breaks half-way. */
function regeneratorBreakingOnSecondCall(): Regenerator & { readonly calls: number } {
  let calls = 0;
  return {
    name: 'breaks-on-second',
    get calls() {
      return calls;
    },
    async regenerate(input) {
      calls++;
      if (calls >= 2) throw new Error('the regenerator broke down');
      return new ExtractiveRegenerator().regenerate(input);
    },
  };
}

describe('a restore that fails half-way leaves the target as it found it', () => {
  let source: TestVault;
  const targets: TestDatabase[] = [];
  let backupId = '';
  let manifest: Manifest;
  const entries: Array<{ entryId: string; text: string }> = [];
  const artifactIds: string[] = [];

  /** A fresh database and live bucket with the source's keyring, root key and backup bucket. */
  async function target(regenerator?: Regenerator): Promise<{ app: App; env: Record<string, string> }> {
    const db = await createTestDatabase();
    targets.push(db);
    const env = { DATABASE_URL: db.url, S3_BUCKET: bucket('lethe-alive') };
    // not listening: no background catch-up writes the target while the test compares it
    return { app: await source.reopen({ listen: false, ...(regenerator ? { regenerator } : {}) }, env), env };
  }

  beforeAll(async () => {
    source = await openTestVault({ extraEnv: minioEnv('lethe-asrc') });
    for (const [subject, text] of [
      ['user:atom-a', 'Ada moved to Porto in May. She walks to work.'],
      ['user:atom-b', 'Bo plays the cello on Sundays. He practises scales.'],
      ['user:atom-b', 'Bo repairs old radios. He keeps the valves in a drawer.'],
    ] as const) {
      entries.push({ ...(await source.app.log.append(subject, { text }, 'writer')), text });
    }
    // two summaries, each of one version whose key the source destroys after the backup
    for (const sources of [[entries[0]!.entryId, entries[1]!.entryId], [entries[2]!.entryId]]) {
      const written = await source.app.artifacts.write({ kind: 'summary', text: `Summary of ${sources.length} notes.`, sources }, 'writer');
      artifactIds.push(written.artifactId);
    }
    backupId = (await source.app.backups.run()).backupId;
    const regenerated = await source.app.artifacts.regenerate(artifactIds, { actor: 'writer', reason: 'rewritten after the backup' });
    expect(regenerated.regenerated).toHaveLength(2);
    await source.app.backups.propagate();
    manifest = await readJson<Manifest>(source.app.backups.store, manifestKey(backupId));
    // destroyed after the backup: in the ledger chain, folded into the manifest
    const folded = await source.app.backups.manifest(backupId);
    expect(folded.keys.filter((k) => k.kind === 'artifact-version' && k.state === 'destroyed')).toHaveLength(2);
  }, 120_000);
  afterAll(async () => {
    await source?.close();
    for (const db of targets) await db.drop().catch(() => {});
  });

  it('regeneration throwing after the database was loaded: every table and the live bucket are put back, and a second restore succeeds', async () => {
    // the first stale artifact regenerates (a new version, its object, a key destroyed), the second throws
    const breaksOnSecond = regeneratorBreakingOnSecondCall();
    const { app, env } = await target(breaksOnSecond);
    const rowsBefore = await tableRows(app);
    const listingBefore = await bucketListing(app);
    // a fresh database holds its own first epoch and audit rows, and no key, entry or artifact
    expect(rowsBefore.epochs).toHaveLength(1);
    expect(rowsBefore.audit_log!.length).toBeGreaterThan(0);
    for (const t of ['subject_keys', 'artifact_keys', 'destruction_ledger', 'log_entries', 'artifacts', 'provenance', 'embeddings'])
      expect(rowsBefore[t]).toEqual([]);
    expect(listingBefore).toEqual([]);

    const err = await app.backups.restore(backupId, { actor: 'test' }).catch((e: unknown) => e);
    expect(breaksOnSecond.calls).toBe(2);
    expect(err).toBeInstanceOf(Error);
    // row for row, every lethe table is what it was; the bucket lists what it listed
    expect(await tableRows(app)).toEqual(rowsBefore);
    expect(await bucketListing(app)).toEqual(listingBefore);
    expect(await app.audit.verify(app.db.db)).toMatchObject({ ok: true });
    // and the error says what failed, and that the target was left as found
    expect(err).toMatchObject({ name: 'LetheError', code: 'unavailable' });
    const message = String((err as Error).message);
    expect(message).toContain(backupId);
    expect(message).toContain('the regenerator broke down');
    expect(message).toMatch(/left as it was found/);
    // the objects had been copied (and a regenerated version written) before they were removed
    const versions = await allVersions(minioClient(), env.S3_BUCKET!, '');
    const names = new Set(versions.map((v) => v.name));
    for (const o of manifest.objects) expect(names.has(o.key)).toBe(true);
    expect([...names].filter((n) => !manifest.objects.some((o) => o.key === n)).length).toBeGreaterThan(0);

    // the same target, with a regenerator that works, restores the backup
    const again = await source.reopen({}, env);
    const result = await again.backups.restore(backupId, { actor: 'test' });
    expect(result).toMatchObject({ staleArtifacts: 2, regeneratedArtifacts: 2, removedArtifacts: 0, entries: 3 });
    for (const e of entries) expect((await again.log.get(e.entryId)).text).toBe(e.text);
    for (const id of artifactIds) expect((await again.artifacts.get(id)).text).toContain('.');
  });

  it('a backup object whose bytes fail their sha256, found half-way through the copy: the copied objects are removed and the database is untouched', async () => {
    const { app, env } = await target();
    const rowsBefore = await tableRows(app);
    const listingBefore = await bucketListing(app);
    // the last object the restore copies is damaged in the backup bucket
    const last = manifest.objects.at(-1)!;
    expect(manifest.objects.length).toBeGreaterThan(2);
    const store = source.app.backups.store;
    const bytes = await store.get(last.stored);
    const damaged = new Uint8Array(bytes);
    damaged[damaged.length - 1]! ^= 0x01;
    await store.put(last.stored, damaged);
    try {
      const err = await app.backups.restore(backupId, { actor: 'test' }).catch((e: unknown) => e);
      expect(await tableRows(app)).toEqual(rowsBefore);
      expect(await bucketListing(app)).toEqual(listingBefore);
      expect(err).toMatchObject({ name: 'LetheError', code: 'validation_failed' });
      const message = String((err as Error).message);
      expect(message).toContain(`${last.stored} (${last.key}) does not match its sha256`);
      expect(message).toMatch(/left as it was found/);
      // the objects before it had been copied, then removed
      const names = new Set((await allVersions(minioClient(), env.S3_BUCKET!, '')).map((v) => v.name));
      for (const o of manifest.objects.slice(0, -1)) expect(names.has(o.key)).toBe(true);
      expect(await keysUnder(app.objects, '')).toEqual([]);
    } finally {
      await store.put(last.stored, bytes);
    }
  });
});

describe('on the embedded default (PGlite and local folders), a restore that fails half-way leaves the target as it found it', () => {
  let source: TestVault;
  const dirs: string[] = [];

  beforeAll(async () => {
    source = await openTestVault({ embedded: true });
  }, 120_000);
  afterAll(async () => {
    await source?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('regeneration throwing after the load: the PGlite tables and the live folder are put back', async () => {
    const a = await source.app.log.append('user:emb-a', { text: 'Cleo bakes rye bread. She uses a sourdough starter.' }, 'writer');
    const b = await source.app.log.append('user:emb-b', { text: 'Dev collects maps. He frames the old ones.' }, 'writer');
    const summaries = [
      (await source.app.artifacts.write({ kind: 'summary', text: 'Bread and maps.', sources: [a.entryId, b.entryId] }, 'writer')).artifactId,
      (await source.app.artifacts.write({ kind: 'summary', text: 'Maps.', sources: [b.entryId] }, 'writer')).artifactId,
    ];
    const { backupId } = await source.app.backups.run();
    await source.app.artifacts.regenerate(summaries, { actor: 'writer', reason: 'rewritten after the backup' });
    await source.app.backups.propagate();

    // a second embedded vault: its own data folder (database, live objects), the source's keyring and backup folder
    const dataDir = tempDir();
    dirs.push(dataDir);
    mkdirSync(path.join(dataDir, 'objects'), { recursive: true });
    symlinkSync(path.join(source.dataDir, 'objects', source.config.backupBucket), path.join(dataDir, 'objects', source.config.backupBucket));
    const breaksOnSecond = regeneratorBreakingOnSecondCall();
    const app = await source.reopen({ listen: false, regenerator: breaksOnSecond }, { LETHE_DATA_DIR: dataDir, LETHE_KEYRING_DIR: source.config.keyringDir });
    expect([app.db.kind, app.objects.kind]).toEqual(['pglite', 'fs']);
    const rowsBefore = await tableRows(app);
    const listingBefore = await bucketListing(app);

    const err = await app.backups.restore(backupId, { actor: 'test' }).catch((e: unknown) => e);
    expect(breaksOnSecond.calls).toBe(2);
    expect(await tableRows(app)).toEqual(rowsBefore);
    expect(await bucketListing(app)).toEqual(listingBefore);
    expect(err).toMatchObject({ name: 'LetheError', code: 'unavailable' });
    expect(String((err as Error).message)).toMatch(/left as it was found/);
  });
});

describe('a backup whose keys are wrapped under an epoch the key provider destroyed', () => {
  let source: TestVault;
  const targets: TestDatabase[] = [];
  let before = '';
  let mixed = '';
  let after = '';
  const texts = new Map<string, string>();

  async function target(): Promise<App> {
    const db = await createTestDatabase();
    targets.push(db);
    return source.reopen({ listen: false }, { DATABASE_URL: db.url, S3_BUCKET: bucket('lethe-elive') });
  }

  beforeAll(async () => {
    source = await openTestVault({ extraEnv: { ...minioEnv('lethe-esrc'), LETHE_REWRAP_BATCH_SIZE: '1' } });
    for (let i = 0; i < 4; i++) {
      const text = `Note ${i}: the keys under the mat ${randomBytes(4).toString('hex')}.`;
      const appended = await source.app.log.append(`user:epoch-${i}`, { text }, 'writer');
      texts.set(appended.entryId, text);
    }
    const [first] = [...texts.keys()];
    await source.app.artifacts.write({ kind: 'summary', text: 'A summary of note 0.', sources: [first!] }, 'writer');
    // a backup under epoch 1 only
    before = (await source.app.backups.run()).backupId;
    // a rotation interrupted after its first re-wrap: epoch 2 active, epoch 1 still wraps keys
    let batches = 0;
    const crashing = await source.reopen({
      listen: false,
      onRewrapBatch: () => {
        batches += 1;
        if (batches === 1) throw new Error('simulated crash');
      },
    });
    await expect(crashing.epochs.rotate('admin')).rejects.toThrow('simulated crash');
    expect((await source.app.epochs.list()).map((e) => [e.epoch, e.state])).toEqual([
      [1, 'retiring'],
      [2, 'active'],
    ]);
    mixed = (await source.app.backups.run()).backupId;
    // the rotation finishes: epoch 1 is destroyed in the provider and retired
    const resumed = await source.app.epochs.rotate('admin');
    expect(resumed).toMatchObject({ epoch: 2, retired: [1] });
    after = (await source.app.backups.run()).backupId;
  }, 120_000);
  afterAll(async () => {
    await source?.close();
    for (const db of targets) await db.drop().catch(() => {});
  });

  it('is refused up front naming the epoch, when it was destroyed and why its keys are inert; the target is untouched and restores a later backup', async () => {
    const app = await target();
    const rowsBefore = await tableRows(app);
    const listingBefore = await bucketListing(app);

    const refused = await app.backups.restore(before, { actor: 'test' }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ name: 'LetheError', code: 'conflict' });
    // the keyring recorded when it destroyed epoch 1's KEK
    const epochOneDestroyedAt = await source.app.provider.destroyedAt(1);
    expect(epochOneDestroyedAt).toBeInstanceOf(Date);
    const message = String((refused as Error).message);
    expect(message).toContain(before);
    expect(message).toContain('5 key(s) are wrapped under KEK epoch 1'); // 4 subject keys and the summary's version key
    expect(message).toContain(`destroyed ${epochOneDestroyedAt!.toISOString()}`);
    expect(message).toMatch(/only inert keys, by design/);
    expect(message).toMatch(/rotat/);
    expect(message).not.toMatch(/epoch 2/);
    expect(await tableRows(app)).toEqual(rowsBefore);
    expect(await bucketListing(app)).toEqual(listingBefore);

    // a backup taken mid-rotation: its active epoch (2) is held, but some of its keys are still under epoch 1
    const mid = await app.backups.restore(mixed, { actor: 'test' }).catch((e: unknown) => e);
    expect(mid).toMatchObject({ name: 'LetheError', code: 'conflict' });
    const midMessage = String((mid as Error).message);
    expect(midMessage).toMatch(/\d key\(s\) are wrapped under KEK epoch 1,/);
    expect(midMessage).toMatch(/Those keys are inert, by design/);
    expect(midMessage).not.toMatch(/epoch 2/);
    expect(await tableRows(app)).toEqual(rowsBefore);
    expect(await bucketListing(app)).toEqual(listingBefore);

    // the backup taken after the rotation restores into the same target
    const result = await app.backups.restore(after, { actor: 'test' });
    expect(result).toMatchObject({ keys: 5, entries: 4 });
    for (const [entryId, text] of texts) expect((await app.log.get(entryId)).text).toBe(text);
  });
});

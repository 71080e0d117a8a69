/**
 * The ledger chain and the manifests against someone who can write the backup bucket
 * (the S3 credential the service uses) but holds no root key, on PostgreSQL and a
 * real MinIO: every tampering below is refused by restore with a message naming it,
 * and with Object Lock (on by default) the permanent deletions themselves are
 * refused by MinIO.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app/open.js';
import { chainRecordKey, LEDGER_HEAD_KEY } from '../../src/backups/ledger-chain.js';
import { type Manifest, manifestKey } from '../../src/backups/manifest.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { openTestVault, type TestVault } from '../support/vault.js';
import { allVersions, getVersion, ledgerRecordOf, minioClient, minioEnv, readJson, until } from './support.js';

const tag = () => randomBytes(4).toString('hex');

describe('tampering with the backup bucket', () => {
  let tv: TestVault;
  const targets: TestDatabase[] = [];
  const { env, backupBucket } = minioEnv();
  const client = minioClient();
  let backupId = '';
  const subjects: Array<{ entryId: string; keyId: string }> = [];

  /** A fresh database and live bucket with the source's keyring, root key and backup bucket. */
  async function target(): Promise<App> {
    const db = await createTestDatabase();
    targets.push(db);
    return tv.reopen({ listen: false }, { DATABASE_URL: db.url, S3_BUCKET: `lethe-tamper-r-${tag()}` });
  }

  async function refusal(): Promise<string> {
    const restored = await target();
    const e = await restored.backups.restore(backupId, { actor: 'test' }).then(
      () => undefined,
      (err: unknown) => err as Error & { code?: string },
    );
    expect(e, 'the restore was not refused').toBeDefined();
    expect(e!.code).toBe('conflict');
    return e!.message;
  }

  /** Puts `bytes` back as the current version of `key` (an attacker's overwrite). */
  const overwrite = (key: string, bytes: Uint8Array) => tv.vault.backups.store.put(key, bytes);
  /** The chain's records as lethe wrote them, to put back after each test. */
  const saved = new Map<number, Uint8Array>();
  /** Removes every version of `key` for good: what someone who may bypass governance retention (or a bucket without Object Lock) allows. */
  async function purge(key: string): Promise<void> {
    for (const v of await allVersions(client, backupBucket, key)) await client.removeObject(backupBucket, key, { versionId: v.versionId, governanceBypass: true });
    // delete markers too
    await client.removeObject(backupBucket, key).catch(() => {});
  }
  /** Puts record `seq` back as lethe wrote it, as the current version. */
  const restoreRecord = (seq: number) => overwrite(chainRecordKey(seq), saved.get(seq)!);

  beforeAll(async () => {
    tv = await openTestVault({ extraEnv: { ...env, LETHE_BACKUP_PROPAGATE_SECONDS: '86400' } });
    for (let i = 0; i < 4; i++) subjects.push(await tv.vault.log.append(`user:tamper-${i}`, { text: `subject ${i} says ${tag()}` }, 'writer'));
    backupId = (await tv.vault.backups.run()).backupId;
    // each destruction after the backup is its own chain record
    for (const s of subjects.slice(0, 3)) {
      await tv.vault.keys.destroyKey(s.keyId, { reason: 'erasure', actor: 'eraser' });
      expect((await tv.vault.backups.awaitDurable([s.keyId], 30_000)).pending).toEqual([]);
    }
    await tv.vault.backups.propagate();
    const head = await readJson<{ seq: number }>(tv.vault.backups.store, LEDGER_HEAD_KEY);
    for (let seq = 0; seq <= head.seq; seq++) saved.set(seq, await tv.vault.backups.store.get(chainRecordKey(seq)));
  }, 120_000);
  afterAll(async () => {
    await tv?.close();
    for (const db of targets) await db.drop().catch(() => {});
  });

  it('restores untampered, with every destruction replayed (the baseline); verify finds the manifest and the chain intact', async () => {
    expect(await tv.vault.backups.verify(backupId)).toMatchObject({ ok: true, manifestMac: 'valid', ledger: { ok: true, destructions: 3 } });
    const restored = await target();
    expect(await restored.backups.restore(backupId, { actor: 'test' })).toMatchObject({ ledger: 'replayed', warnings: [] });
    for (const s of subjects.slice(0, 3)) await expect(restored.log.get(s.entryId)).rejects.toMatchObject({ code: 'key_destroyed' });
    expect((await restored.log.get(subjects[3]!.entryId)).text).toMatch(/^subject 3 says/);
  });

  it("refuses the issue's story (the destruction's record deleted, the manifest rewritten with the key active); a plain delete alone is worked around from the versions", async () => {
    const victim = subjects[0]!;
    const record = await ledgerRecordOf(tv.vault.backups.store, victim.keyId);
    expect(record).toBeDefined();
    const seq = Number(record!.match(/(\d{16})/)![1]);
    const manifestBytes = await tv.vault.backups.store.get(manifestKey(backupId));
    const manifest = JSON.parse(Buffer.from(manifestBytes).toString('utf8')) as Manifest;
    const forged = { ...manifest, keys: manifest.keys.map((k) => (k.keyId === victim.keyId ? { keyId: k.keyId, kind: k.kind, state: 'active' } : k)) };
    await tv.vault.backups.store.delete(record!);
    await overwrite(manifestKey(backupId), Buffer.from(JSON.stringify(forged)));
    try {
      expect(await refusal()).toMatch(/manifest of backup .* fails its MAC/);
      // and verify says so too
      expect(await tv.vault.backups.verify(backupId)).toMatchObject({ ok: false, manifestMac: 'invalid' });
      // the manifest put back: the record's delete marker hides nothing from a versioned bucket
      await overwrite(manifestKey(backupId), manifestBytes);
      const restored = await target();
      const result = await restored.backups.restore(backupId, { actor: 'test' });
      expect(result.ledger).toBe('replayed');
      expect(result.warnings.join(' ')).toContain(`ledger chain record ${seq}: its current version was removed or altered`);
      await expect(restored.log.get(victim.entryId)).rejects.toMatchObject({ code: 'key_destroyed' });
    } finally {
      await overwrite(manifestKey(backupId), manifestBytes);
      await restoreRecord(seq);
    }
  });

  it('refuses a record removed for good (every version, with the governance bypass), naming it', async () => {
    const victim = subjects[1]!;
    const record = (await ledgerRecordOf(tv.vault.backups.store, victim.keyId))!;
    const seq = Number(record.match(/(\d{16})/)![1]);
    await purge(record);
    try {
      const message = await refusal();
      expect(message).toContain(`ledger chain record ${seq} (${record}) is missing`);
      expect((await tv.vault.backups.verify(backupId)).ledger).toMatchObject({ ok: false, problem: expect.stringMatching(/is missing/) });
    } finally {
      await restoreRecord(seq);
    }
  });

  it('refuses a chain cut back: the last record removed for good and an older head put back', async () => {
    const head = await readJson<{ seq: number }>(tv.vault.backups.store, LEDGER_HEAD_KEY);
    const versions = await allVersions(client, backupBucket, LEDGER_HEAD_KEY);
    // an older head, validly MAC'd when it was written
    let older: Uint8Array | undefined;
    for (const v of versions) {
      const bytes = await getVersion(client, backupBucket, v.name, v.versionId);
      if ((JSON.parse(Buffer.from(bytes).toString('utf8')) as { seq: number }).seq < head.seq) older = bytes;
    }
    expect(older, 'an older version of the head').toBeDefined();
    const currentHead = await tv.vault.backups.store.get(LEDGER_HEAD_KEY);
    await purge(chainRecordKey(head.seq));
    await overwrite(LEDGER_HEAD_KEY, older!);
    try {
      expect(await refusal()).toMatch(new RegExp(`ledger chain record ${head.seq} .* is missing: the head names record ${head.seq}`));
    } finally {
      await restoreRecord(head.seq);
      await overwrite(LEDGER_HEAD_KEY, currentHead);
    }
  });

  it('works around an overwritten record from its versions, refuses one edited for good, and finds the newest head past a forged one', async () => {
    const middle = chainRecordKey(1);
    const bytes = saved.get(1)!;
    // an edited record: its time changed, the old MAC kept
    const edited = JSON.parse(Buffer.from(bytes).toString('utf8')) as object;
    const editedBytes = Buffer.from(JSON.stringify({ ...edited, at: '2000-01-01T00:00:00.000Z' }));
    await overwrite(middle, editedBytes);
    try {
      const restored = await target();
      expect((await restored.backups.restore(backupId, { actor: 'test' })).warnings.join(' ')).toContain('ledger chain record 1: its current version was removed or altered');
      // the version lethe wrote removed for good: only the edited one is left
      await purge(middle);
      await overwrite(middle, editedBytes);
      expect(await refusal()).toMatch(/ledger chain record 1 fails its MAC/);
    } finally {
      await restoreRecord(1);
    }

    // a head forged without the key
    const currentHead = await tv.vault.backups.store.get(LEDGER_HEAD_KEY);
    const forged = { ...(JSON.parse(Buffer.from(currentHead).toString('utf8')) as object), seq: 1, mac: 'ab'.repeat(32) };
    await overwrite(LEDGER_HEAD_KEY, Buffer.from(JSON.stringify(forged)));
    try {
      // the newest valid head among the versions is still found: the chain is read to its end
      const restored = await target();
      expect(await restored.backups.restore(backupId, { actor: 'test' })).toMatchObject({ ledger: 'replayed', warnings: [] });
      for (const s of subjects.slice(0, 3)) await expect(restored.log.get(s.entryId)).rejects.toMatchObject({ code: 'key_destroyed' });
    } finally {
      await overwrite(LEDGER_HEAD_KEY, currentHead);
    }
  });

  it('refuses an older manifest version put back after the chain recorded a newer one', async () => {
    const versions = await allVersions(client, backupBucket, manifestKey(backupId));
    const all = await Promise.all(versions.map(async (v) => getVersion(client, backupBucket, v.name, v.versionId)));
    const parsed = all.map((b) => JSON.parse(Buffer.from(b).toString('utf8')) as Manifest);
    const newest = Math.max(...parsed.map((m) => m.version));
    expect(newest).toBeGreaterThan(1);
    // the catch-up records the newest manifest version in the chain
    await tv.vault.backups.propagate();
    const first = all[parsed.findIndex((m) => m.version === 1)]!;
    const current = await tv.vault.backups.store.get(manifestKey(backupId));
    await overwrite(manifestKey(backupId), first);
    try {
      expect(await refusal()).toMatch(new RegExp(`manifest of backup ${backupId} is version 1, but the ledger chain records version ${newest}`));
    } finally {
      await overwrite(manifestKey(backupId), current);
    }
  });

  it('keeps the ledger under Object Lock (governance, by default): removing a version of a record or of the head is refused by MinIO', async () => {
    expect(await client.getObjectLockConfig(backupBucket)).toMatchObject({ objectLockEnabled: 'Enabled' });
    // a record written once by lethe, never touched by the tests above
    const head = await readJson<{ seq: number }>(tv.vault.backups.store, LEDGER_HEAD_KEY);
    let untouched: number | undefined;
    for (let seq = 0; seq <= head.seq && untouched === undefined; seq++) {
      if ((await allVersions(client, backupBucket, chainRecordKey(seq))).length === 1) untouched = seq;
    }
    expect(untouched).toBeDefined();
    const record = (await allVersions(client, backupBucket, chainRecordKey(untouched!)))[0]!;
    expect(await client.getObjectRetention(backupBucket, record.name, { versionId: record.versionId })).toMatchObject({ mode: 'GOVERNANCE' });
    await expect(client.removeObject(backupBucket, record.name, { versionId: record.versionId })).rejects.toBeDefined();
    // a version of the head lethe wrote (the tests' own overwrites above carry no retention)
    let lethesHead: { name: string; versionId: string } | undefined;
    for (const v of await allVersions(client, backupBucket, LEDGER_HEAD_KEY)) {
      const retention = await client.getObjectRetention(backupBucket, v.name, { versionId: v.versionId }).catch(() => undefined);
      if (retention?.mode === 'GOVERNANCE') lethesHead = v;
    }
    expect(lethesHead).toBeDefined();
    await expect(client.removeObject(backupBucket, lethesHead!.name, { versionId: lethesHead!.versionId })).rejects.toBeDefined();
    // still there
    expect(await allVersions(client, backupBucket, chainRecordKey(untouched!))).toContainEqual(record);
    await until('the chain to verify', () => tv.vault.backups.ledgerChain(), (c) => c.present && c.entries.size >= 3);
  });
});

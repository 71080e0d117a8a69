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
import { sql } from 'drizzle-orm';
import { type Manifest, manifestKey, sealManifest } from '../../src/backups/manifest.js';
import { deriveSubkey, KeyedHasher } from '../../src/crypto/index.js';
import { queryRows } from '../../src/db/client.js';
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
  /** The manifest's stored versions once the three destructions after the backup were propagated (before any test overwrites it). */
  let manifestVersionsAtSetup = 0;
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
  const overwrite = (key: string, bytes: Uint8Array) => tv.app.backups.store.put(key, bytes);
  /** The chain's records as lethe wrote them, to put back after each test. */
  const saved = new Map<number, Uint8Array>();
  /** Removes every version of `key` for good: what someone who may bypass governance retention (or a bucket without Object Lock) allows. */
  async function purge(key: string): Promise<void> {
    for (const v of await allVersions(client, backupBucket, key))
      await client.removeObject(backupBucket, key, { versionId: v.versionId, governanceBypass: true });
    // delete markers too
    await client.removeObject(backupBucket, key).catch(() => {});
  }
  /** Puts record `seq` back as lethe wrote it, as the current version. */
  const restoreRecord = (seq: number) => overwrite(chainRecordKey(seq), saved.get(seq)!);

  beforeAll(async () => {
    // governance, as an operator may configure it: the tests below remove versions with the bypass (the default, compliance, lets no one)
    tv = await openTestVault({ extraEnv: { ...env, LETHE_BACKUP_PROPAGATE_SECONDS: '86400', LETHE_LEDGER_LOCK: 'governance' } });
    for (let i = 0; i < 4; i++) subjects.push(await tv.app.log.append(`user:tamper-${i}`, { text: `subject ${i} says ${tag()}` }, 'writer'));
    backupId = (await tv.app.backups.run()).backupId;
    // each destruction after the backup is its own chain record
    for (const s of subjects.slice(0, 3)) {
      await tv.app.keys.destroyKey(s.keyId, { reason: 'erasure', actor: 'eraser' });
      expect((await tv.app.backups.awaitDurable([s.keyId], 30_000)).pending).toEqual([]);
    }
    await tv.app.backups.propagate();
    manifestVersionsAtSetup = (await allVersions(client, backupBucket, manifestKey(backupId))).length;
    const head = await readJson<{ seq: number }>(tv.app.backups.store, LEDGER_HEAD_KEY);
    for (let seq = 0; seq <= head.seq; seq++) saved.set(seq, await tv.app.backups.store.get(chainRecordKey(seq)));
  }, 120_000);
  afterAll(async () => {
    await tv?.close();
    for (const db of targets) await db.drop().catch(() => {});
  });

  it('restores untampered, with every destruction replayed (the baseline); verify finds the manifest and the chain intact', async () => {
    expect(await tv.app.backups.verify(backupId)).toMatchObject({ ok: true, manifestMac: 'valid', ledger: { ok: true, destructions: 3 } });
    const restored = await target();
    expect(await restored.backups.restore(backupId, { actor: 'test' })).toMatchObject({ ledger: 'replayed', warnings: [] });
    for (const s of subjects.slice(0, 3)) await expect(restored.log.get(s.entryId)).rejects.toMatchObject({ code: 'key_destroyed' });
    expect((await restored.log.get(subjects[3]!.entryId)).text).toMatch(/^subject 3 says/);
  });

  it("refuses the issue's story (the destruction's record deleted, the manifest rewritten without the key); a plain delete alone is worked around from the versions", async () => {
    const victim = subjects[0]!;
    const record = await ledgerRecordOf(tv.app.backups.store, victim.keyId);
    expect(record).toBeDefined();
    const seq = Number(record!.match(/(\d{16})/)![1]);
    const manifestBytes = await tv.app.backups.store.get(manifestKey(backupId));
    const manifest = JSON.parse(Buffer.from(manifestBytes).toString('utf8')) as Manifest;
    // the base was written before the destruction (the key active): an attacker hides the key from it altogether
    expect(manifest.keys.find((k) => k.keyId === victim.keyId)?.state).toBe('active');
    const forged = { ...manifest, keys: manifest.keys.filter((k) => k.keyId !== victim.keyId) };
    await tv.app.backups.store.delete(record!);
    await overwrite(manifestKey(backupId), Buffer.from(JSON.stringify(forged)));
    try {
      expect(await refusal()).toMatch(/manifest of backup .* fails its MAC/);
      // and verify says so too
      expect(await tv.app.backups.verify(backupId)).toMatchObject({ ok: false, manifestMac: 'invalid' });
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

  it('refuses, even forced, a manifest edited and stripped of its MAC (the low: forcing used to restore it)', async () => {
    const victim = subjects[0]!;
    const manifestBytes = await tv.app.backups.store.get(manifestKey(backupId));
    const { mac: _mac, ...manifest } = JSON.parse(Buffer.from(manifestBytes).toString('utf8')) as Manifest;
    await overwrite(manifestKey(backupId), Buffer.from(JSON.stringify({ ...manifest, keys: manifest.keys.filter((k) => k.keyId !== victim.keyId) })));
    try {
      for (const force of [false, true]) {
        const restored = await target();
        const e = await restored.backups.restore(backupId, { actor: 'test', force }).then(
          () => undefined,
          (err: unknown) => err as Error & { code?: string },
        );
        expect(e?.code).toBe('conflict');
        expect(e?.message).toMatch(/was written with a MAC, which was removed: it was edited .* forced or not/);
        expect(e?.message).not.toContain('--force-without-ledger');
      }
    } finally {
      await overwrite(manifestKey(backupId), manifestBytes);
    }
  });

  it('refuses a record removed for good (every version, with the governance bypass), naming it', async () => {
    const victim = subjects[1]!;
    const record = (await ledgerRecordOf(tv.app.backups.store, victim.keyId))!;
    const seq = Number(record.match(/(\d{16})/)![1]);
    await purge(record);
    try {
      const message = await refusal();
      expect(message).toContain(`ledger chain record ${seq} (${record}) is missing`);
      expect((await tv.app.backups.verify(backupId)).ledger).toMatchObject({ ok: false, problem: expect.stringMatching(/is missing/) });
    } finally {
      await restoreRecord(seq);
    }
  });

  it('refuses a chain cut back: the last record removed for good and an older head put back', async () => {
    const head = await readJson<{ seq: number }>(tv.app.backups.store, LEDGER_HEAD_KEY);
    const versions = await allVersions(client, backupBucket, LEDGER_HEAD_KEY);
    // an older head, validly MAC'd when it was written
    let older: Uint8Array | undefined;
    for (const v of versions) {
      const bytes = await getVersion(client, backupBucket, v.name, v.versionId);
      if ((JSON.parse(Buffer.from(bytes).toString('utf8')) as { seq: number }).seq < head.seq) older = bytes;
    }
    expect(older, 'an older version of the head').toBeDefined();
    const currentHead = await tv.app.backups.store.get(LEDGER_HEAD_KEY);
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
      expect((await restored.backups.restore(backupId, { actor: 'test' })).warnings.join(' ')).toContain(
        'ledger chain record 1: its current version was removed or altered',
      );
      // the version lethe wrote removed for good: only the edited one is left
      await purge(middle);
      await overwrite(middle, editedBytes);
      expect(await refusal()).toMatch(/ledger chain record 1 fails its MAC/);
    } finally {
      await restoreRecord(1);
    }

    // a head forged without the key
    const currentHead = await tv.app.backups.store.get(LEDGER_HEAD_KEY);
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

  it('keeps one manifest version per backup: a destruction after it is in the chain only', async () => {
    expect(manifestVersionsAtSetup).toBe(1);
    const base = await readJson<Manifest>(tv.app.backups.store, manifestKey(backupId));
    expect(base.version).toBe(1);
    expect(base.keys.filter((k) => k.state === 'destroyed')).toEqual([]);
    const folded = await tv.app.backups.manifest(backupId);
    expect(folded.overlay.destroyed).toBe(3);
    expect(subjects.slice(0, 3).map((s) => folded.keys.find((k) => k.keyId === s.keyId)?.state)).toEqual(['destroyed', 'destroyed', 'destroyed']);
  });

  it('refuses an older version of a manifest of the earlier format (rewritten by each propagation) put back after the chain recorded a newer one', async () => {
    // what propagation wrote before the chain was the overlay: version 2 of the manifest, MAC'd, recorded in the chain
    const mac = new KeyedHasher(deriveSubkey(Buffer.from(tv.env.LETHE_ROOT_KEY!, 'base64'), 'ledger-chain'));
    const first = await tv.app.backups.store.get(manifestKey(backupId));
    const v1 = JSON.parse(Buffer.from(first).toString('utf8')) as Manifest;
    const v2 = sealManifest(mac, { ...v1, version: 2, keys: v1.keys.map((k) => (k.keyId === subjects[0]!.keyId ? { ...k, state: 'destroyed' as const } : k)) });
    await overwrite(manifestKey(backupId), Buffer.from(JSON.stringify(v2)));
    await queryRows(tv.app.db.db, sql`update backups set manifest_version = 2 where backup_id = ${backupId}`);
    try {
      // the catch-up records the newest manifest version in the chain
      await tv.app.backups.propagate();
      await overwrite(manifestKey(backupId), first);
      expect(await refusal()).toMatch(new RegExp(`manifest of backup ${backupId} is version 1, but the ledger chain records version 2`));
      expect(await tv.app.backups.verify(backupId)).toMatchObject({
        ok: false,
        ledger: { ok: false, problem: expect.stringMatching(/older than the version 2/) },
      });
      // the newer version put back: restored, and the folded view still marks every destruction
      await overwrite(manifestKey(backupId), Buffer.from(JSON.stringify(v2)));
      expect((await tv.app.backups.manifest(backupId)).overlay.destroyed).toBe(2);
    } finally {
      mac.destroy();
      await overwrite(manifestKey(backupId), first);
      await queryRows(tv.app.db.db, sql`update backups set manifest_version = 1 where backup_id = ${backupId}`);
    }
  });

  it('keeps the ledger under Object Lock (governance, as configured here): removing a version of a record or of the head is refused by MinIO', async () => {
    /** MinIO's answer to removing a version under retention. */
    const WORM_REFUSAL = { code: 'InvalidRequest', message: expect.stringMatching(/WORM protected/) };
    expect(await client.getObjectLockConfig(backupBucket)).toMatchObject({ objectLockEnabled: 'Enabled' });
    // a record written once by lethe, never touched by the tests above
    const head = await readJson<{ seq: number }>(tv.app.backups.store, LEDGER_HEAD_KEY);
    let untouched: number | undefined;
    for (let seq = 0; seq <= head.seq && untouched === undefined; seq++) {
      if ((await allVersions(client, backupBucket, chainRecordKey(seq))).length === 1) untouched = seq;
    }
    expect(untouched).toBeDefined();
    const record = (await allVersions(client, backupBucket, chainRecordKey(untouched!)))[0]!;
    expect(await client.getObjectRetention(backupBucket, record.name, { versionId: record.versionId })).toMatchObject({ mode: 'GOVERNANCE' });
    // refused for the lock, not for another reason (a credential or a permission MinIO refuses)
    await expect(client.removeObject(backupBucket, record.name, { versionId: record.versionId })).rejects.toMatchObject(WORM_REFUSAL);
    // a version of the head lethe wrote (the tests' own overwrites above carry no retention)
    let lethesHead: { name: string; versionId: string } | undefined;
    for (const v of await allVersions(client, backupBucket, LEDGER_HEAD_KEY)) {
      const retention = await client.getObjectRetention(backupBucket, v.name, { versionId: v.versionId }).catch(() => undefined);
      if (retention?.mode === 'GOVERNANCE') lethesHead = v;
    }
    expect(lethesHead).toBeDefined();
    await expect(client.removeObject(backupBucket, lethesHead!.name, { versionId: lethesHead!.versionId })).rejects.toMatchObject(WORM_REFUSAL);
    // still there
    expect(await allVersions(client, backupBucket, chainRecordKey(untouched!))).toContainEqual(record);
    await until(
      'the chain to verify',
      () => tv.app.backups.ledgerChain(),
      (c) => c.present && c.entries.size >= 3,
    );
  });
});

/**
 * The manifest's overlay is the backup bucket's ledger chain: a destruction is written
 * once (one chain record and the head), whatever the number of backups holding the
 * key, and every one of those backups honours it — in its folded manifest, in
 * `verify` and in a restore. The overlay is tamper-evident as the chain is, and
 * destructions racing backups are never lost. PostgreSQL and a real, versioned MinIO.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app/open.js';
import { chainRecordKey, LEDGER_HEAD_KEY } from '../../src/backups/ledger-chain.js';
import type { BackupSummary } from '../../src/backups/service.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { openTestVault, type TestVault } from '../support/vault.js';
import { allVersions, keyState, ledgerRecordOf, minioClient, minioEnv, versionCounts } from './support.js';

const tag = () => randomBytes(4).toString('hex');
const HOLDERS = 8;

describe("the manifests' overlay: the ledger chain", () => {
  let tv: TestVault;
  const targets: TestDatabase[] = [];
  const { env, backupBucket } = minioEnv();
  const client = minioClient();

  /** A fresh database and live bucket with the source's keyring, root key and backup bucket. */
  async function target(): Promise<App> {
    const db = await createTestDatabase();
    targets.push(db);
    return tv.reopen({ listen: false }, { DATABASE_URL: db.url, S3_BUCKET: `lethe-overlay-r-${tag()}` });
  }

  beforeAll(async () => {
    tv = await openTestVault({ extraEnv: { ...env, LETHE_BACKUP_PROPAGATE_SECONDS: '86400', LETHE_LEDGER_LOCK: 'governance' } });
  });
  afterAll(async () => {
    await tv?.close();
    for (const db of targets) await db.drop().catch(() => {});
  });

  it(`writes a destruction held by ${HOLDERS} backups once, and restore and verify of each honour it`, async () => {
    const a = await tv.app.log.append(`user:overlay-a-${tag()}`, { text: 'A keeps a ledger of tide tables.' }, 'writer');
    const b = await tv.app.log.append(`user:overlay-b-${tag()}`, { text: 'B repairs bicycle hubs.' }, 'writer');
    const taken: BackupSummary[] = [];
    for (let i = 0; i < HOLDERS; i++) taken.push(await tv.app.backups.run());
    expect(await tv.app.backups.holding(a.keyId)).toBe(HOLDERS);

    await tv.app.backups.idle();
    const before = await versionCounts(client, backupBucket, '');
    await tv.app.keys.destroyKey(a.keyId, { reason: 'erasure', actor: 'eraser' });
    expect((await tv.app.backups.awaitDurable([a.keyId], 30_000)).pending).toEqual([]);
    await tv.app.backups.idle();
    expect(await tv.app.backups.marked(a.keyId)).toBe(HOLDERS);

    // written: one chain record and one version of the head, nothing per backup
    const record = await ledgerRecordOf(tv.app.backups.store, a.keyId);
    const after = await versionCounts(client, backupBucket, '');
    const grew = [...after].filter(([name, n]) => (before.get(name) ?? 0) !== n).map(([name, n]) => [name, n - (before.get(name) ?? 0)]);
    expect(grew.sort()).toEqual(
      [
        [LEDGER_HEAD_KEY, 1],
        [record, 1],
      ].sort(),
    );

    for (const t of taken) {
      const folded = await tv.app.backups.manifest(t.backupId);
      expect(keyState(folded, a.keyId)?.state, t.backupId).toBe('destroyed');
      expect(keyState(folded, b.keyId)?.state, t.backupId).toBe('active');
      const verified = await tv.app.backups.verify(t.backupId);
      expect(verified.ok, t.backupId).toBe(true);
      expect(verified.ledger).toMatchObject({ ok: true, folded: 1 });
      expect(verified.keys.find((k) => k.keyId === a.keyId)).toMatchObject({ state: 'destroyed', destroyedBy: 'chain', data: 'unreadable' });
      expect(verified.keys.find((k) => k.keyId === b.keyId)).toMatchObject({ state: 'active', data: 'decrypts' });

      const restored = await target();
      try {
        const result = await restored.backups.restore(t.backupId, { actor: 'test' });
        expect(result.ledger, t.backupId).toBe('replayed');
        await expect(restored.log.get(a.entryId)).rejects.toMatchObject({ code: 'key_destroyed' });
        expect((await restored.log.get(b.entryId)).text).toBe('B repairs bicycle hubs.');
      } finally {
        await restored.close();
      }
    }
  }, 180_000);

  it('is tamper-evident as the chain is: the record holding a destruction edited to drop it fails its MAC, and verify and restore say so', async () => {
    const c = await tv.app.log.append(`user:overlay-c-${tag()}`, { text: 'C sails a dinghy.' }, 'writer');
    const { backupId } = await tv.app.backups.run();
    await tv.app.keys.destroyKey(c.keyId, { reason: 'erasure', actor: 'eraser' });
    expect((await tv.app.backups.awaitDurable([c.keyId], 30_000)).pending).toEqual([]);
    const record = (await ledgerRecordOf(tv.app.backups.store, c.keyId))!;
    const seq = Number(/(\d{16})\.json$/.exec(record)![1]);
    const original = await tv.app.backups.store.get(record);
    const body = JSON.parse(Buffer.from(original).toString('utf8')) as { destructions: Array<{ keyId: string }> };
    const edited = { ...body, destructions: body.destructions.filter((d) => d.keyId !== c.keyId) };
    // the edited record over every version lethe wrote: what someone who may bypass retention does
    for (const v of (await allVersions(client, backupBucket, record)).filter((x) => x.name === record)) {
      await client.removeObject(backupBucket, v.name, { versionId: v.versionId, governanceBypass: true });
    }
    await tv.app.backups.store.put(chainRecordKey(seq), Buffer.from(JSON.stringify(edited)));
    try {
      const verified = await tv.app.backups.verify(backupId);
      expect(verified.ok).toBe(false);
      expect(verified.ledger).toMatchObject({ ok: false, problem: expect.stringContaining(`ledger chain record ${seq} fails its MAC`) });
      const restored = await target();
      try {
        await expect(restored.backups.restore(backupId, { actor: 'test' })).rejects.toMatchObject({
          code: 'conflict',
          message: expect.stringContaining(`ledger chain record ${seq} fails its MAC`),
        });
      } finally {
        await restored.close();
      }
    } finally {
      await tv.app.backups.store.put(chainRecordKey(seq), original);
    }
    expect((await tv.app.backups.verify(backupId)).ok).toBe(true);
  }, 120_000);

  it('never loses a destruction to backups taken at the same time: every backup holding a destroyed key honours it', async () => {
    const subjects = [];
    for (let i = 0; i < 6; i++)
      subjects.push(await tv.app.log.append(`user:overlay-race-${i}-${tag()}`, { text: `Race subject ${i} notes ${tag()}.` }, 'writer'));
    // four backups and six destructions, interleaved
    const runs: Array<Promise<BackupSummary>> = [];
    const destructions: Array<Promise<unknown>> = [];
    for (let i = 0; i < 6; i++) {
      if (i % 2 === 0) runs.push(tv.app.backups.run());
      destructions.push(tv.app.keys.destroyKey(subjects[i]!.keyId, { reason: 'erasure', actor: 'eraser' }));
    }
    runs.push(tv.app.backups.run());
    const taken = await Promise.all(runs);
    await Promise.all(destructions);
    expect(
      (
        await tv.app.backups.awaitDurable(
          subjects.map((s) => s.keyId),
          30_000,
        )
      ).pending,
    ).toEqual([]);
    await tv.app.backups.idle();

    let checked = 0;
    for (const t of taken) {
      const folded = await tv.app.backups.manifest(t.backupId);
      const verified = await tv.app.backups.verify(t.backupId);
      expect(verified.ok, t.backupId).toBe(true);
      for (const s of subjects) {
        const listed = keyState(folded, s.keyId);
        // a backup that began after the key's data was written lists it: destroyed, whichever won the race
        expect(listed?.state, `${s.keyId} in ${t.backupId}`).toBe('destroyed');
        expect(verified.keys.find((k) => k.keyId === s.keyId)).toMatchObject({ state: 'destroyed', data: 'unreadable' });
        checked++;
      }
    }
    expect(checked).toBe(taken.length * subjects.length);
  }, 120_000);
});

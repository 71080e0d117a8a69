/**
 * A backup taken before a class B erasure, judged after it: its manifest's latest
 * version marks the subject's key (and the superseded artifact-version keys)
 * destroyed, `verify` reports their data unreadable, and a restore of it into a fresh
 * database and bucket yields nothing of the subject while the others' data reads back.
 * The erasure's residual ledger names the backup's wrapped copy of the key and bounds
 * it by the epoch that wrapped it; retiring that epoch makes the copy inert.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { minioEnv, storedManifest } from '../backups/support.js';
import { ok } from '../support/http.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { openTestVault, type TestVault } from '../support/vault.js';
import { type Call, callVault, type ClassB, classB, type ErasureReply, expectLogErasedOthersKept, searchTexts, tag } from './fixtures.js';

describe('a backup taken before a class B erasure', () => {
  let source: TestVault;
  let call: Call;
  let s: ClassB;
  let backupId = '';
  let erasureId = '';
  let wrappedEpoch = 0;
  const targets: TestDatabase[] = [];

  beforeAll(async () => {
    source = await openTestVault({ extraEnv: minioEnv().env, app: { erasureWorker: false } });
    call = callVault(source.app);
    s = await classB(source.app, 'bak');
    backupId = (await ok<{ backupId: string }>(call('POST', '/v1/backups', { role: 'backup' }), 201)).backupId;
    const manifest = await ok<{ keys: Array<{ keyId: string; state: string }> }>(call('GET', `/v1/backups/${backupId}/manifest`, { role: 'backup' }), 200);
    expect(manifest.keys.find((k) => k.keyId === s.aKeyId)?.state).toBe('active');
    erasureId = (await ok<{ erasureId: string }>(call('POST', '/v1/erasures', { role: 'eraser', body: { subject: s.A, legalBasis: 'gdpr-art17' } }), 202))
      .erasureId;
    const view = await source.app.erasures.settle(erasureId);
    expect(view.status, JSON.stringify(view.steps)).toBe('completed');
    expect(view.class).toBe('B');
    const [row] = await queryRows<{ wrapped_epoch: number }>(source.app.db.db, sql`select wrapped_epoch from destruction_ledger where key_id = ${s.aKeyId}`);
    wrappedEpoch = Number(row!.wrapped_epoch);
  });
  afterAll(async () => {
    await source?.close();
    for (const db of targets) await db.drop().catch(() => {});
  });

  it("the backup's folded manifest marks A's key and the superseded artifact versions destroyed, and verify reports their data unreadable", async () => {
    const manifest = await ok<{ version: number; keys: Array<{ keyId: string; state: string; destroyedAt?: string }>; overlay: { destroyed: number } }>(
      call('GET', `/v1/backups/${backupId}/manifest`, { role: 'backup' }),
      200,
    );
    expect(manifest.overlay.destroyed).toBe(1 + s.versionKeys.length);
    for (const keyId of [s.aKeyId, ...s.versionKeys]) {
      expect(
        manifest.keys.find((k) => k.keyId === keyId),
        keyId,
      ).toMatchObject({ state: 'destroyed', destroyedAt: expect.any(String) });
    }
    const bKey = (await source.app.log.get(s.b1)).keyId;
    expect(manifest.keys.find((k) => k.keyId === bKey)?.state).toBe('active');
    // the backup bucket holds the base, written once; the service folds the ledger chain into it
    expect((await storedManifest(source.app.backups.store, backupId)).version).toBe(manifest.version);
    expect(manifest.version).toBe(1);

    const verified = await source.app.backups.verify(backupId);
    expect(verified.ok).toBe(true);
    expect(verified.manifestVersion).toBe(manifest.version);
    expect(verified.corrupted).toEqual([]);
    expect(verified.keys.find((k) => k.keyId === s.aKeyId)).toEqual({
      keyId: s.aKeyId,
      state: 'destroyed',
      destroyedBy: 'chain',
      data: 'unreadable',
      wrappedCopy: 'unwraps',
      wrappedEpoch,
    });
    for (const keyId of s.versionKeys) expect(verified.keys.find((k) => k.keyId === keyId)).toMatchObject({ state: 'destroyed', data: 'unreadable' });
    expect(verified.keys.find((k) => k.keyId === bKey)).toMatchObject({ state: 'active', data: 'decrypts' });
  });

  it('restored into a fresh database and bucket, the backup yields nothing of A; B and C read back', async () => {
    const db = await createTestDatabase();
    targets.push(db);
    const fresh = { DATABASE_URL: db.url, S3_BUCKET: `lethe-rst-${tag(4)}` };
    // the restore as the CLI runs it (no listener, no worker), then a vault serving the result
    const restorer = await source.reopen({ listen: false }, fresh);
    const result = await restorer.backups.restore(backupId, { actor: 'test' });
    await restorer.close();
    expect(result).toMatchObject({ ledger: 'replayed', warnings: [], entries: 4, artifacts: 2 });
    expect(result.destroyedKeys).toBeGreaterThanOrEqual(3);
    // both artifacts point at version keys the erasure destroyed: the restore regenerates them from B's and C's restored entries
    expect(result).toMatchObject({ staleArtifacts: 2, regeneratedArtifacts: 2, removedArtifacts: 0 });
    const restored = await source.reopen({}, fresh);
    const rcall = callVault(restored);

    await expectLogErasedOthersKept(rcall, s);
    expect(await restored.keys.validity([s.aKeyId, ...s.versionKeys])).toEqual(Object.fromEntries([s.aKeyId, ...s.versionKeys].map((k) => [k, 'destroyed'])));

    // The backup holds the artifacts' first versions, sealed under version keys the cascade
    // destroyed since: none of that text may come back. The restored system must answer
    // for them for good: regenerated from the surviving restored sources (B's and C's
    // entries), or gone (410) — not a 503 "try again" that no retry can satisfy.
    for (const id of [s.summary, s.digest]) {
      const res = await rcall('GET', `/v1/artifacts/${id}`);
      const text = await res.text();
      for (const canary of s.aCanaries) expect(text, `GET /v1/artifacts/${id} answered ${res.status}`).not.toContain(canary);
      if (res.status === 200) expect(text).toContain(s.bCanary);
      else expect(res.status, `GET /v1/artifacts/${id} after the restore: ${text}`).toBe(200);
    }
    const found = await searchTexts(rcall, [...s.aCanaries, 'birdwatching marshes', 'Interests birdwatching locker synthesizers', 'Topic digest']);
    for (const canary of s.aCanaries) expect(found).not.toContain(canary);
  });

  it("the erasure's residual ledger names the backup's wrapped copy of the key until its epoch retires; a KEK rotation retires it", async () => {
    const view = await ok<ErasureReply>(call('GET', `/v1/erasures/${erasureId}`, { role: 'eraser' }), 200);
    const residual = view.residuals.find((r) => r.tier === 'backups' && r.kind === 'wrapped-dek');
    expect(residual, JSON.stringify(view.residuals)).toBeDefined();
    expect(residual!.detail).toContain('1 lethe backup(s)');
    expect(residual!.detail).toContain(`epoch ${wrappedEpoch}`);
    expect(String(residual!.bound)).toContain(`until epoch ${wrappedEpoch} is retired`);
    expect(residual!.until).toBeUndefined();
    expect(view.certificateState).toBe('provisional');
    expect((view.certificate!.payload as { wrappedEpochs: number[] }).wrappedEpochs).toContain(wrappedEpoch);

    const rotated = await ok<{ epoch: number }>(call('POST', '/v1/admin/kek/rotate', { role: 'admin' }), 200);
    expect(rotated.epoch).toBeGreaterThan(wrappedEpoch);
    const kek = await ok<{ epochs: Array<{ epoch: number; state: string }> }>(call('GET', '/v1/admin/kek', { role: 'admin' }), 200);
    expect(kek.epochs.find((e) => e.epoch === wrappedEpoch)?.state).toBe('retired');
    const verified = await source.app.backups.verify(backupId);
    expect(verified.keys.find((k) => k.keyId === s.aKeyId)).toMatchObject({ state: 'destroyed', data: 'unreadable', wrappedCopy: 'inert', wrappedEpoch });
    expect(verified.ok).toBe(true);
    // the certificate becomes final, the residual dated by the retirement
    await source.app.erasures.finalizeCertificates();
    const after = await ok<ErasureReply>(call('GET', `/v1/erasures/${erasureId}`, { role: 'eraser' }), 200);
    expect(after.certificateState).toBe('final');
    expect(after.residuals.find((r) => r.tier === 'backups' && r.kind === 'wrapped-dek')).toMatchObject({ bound: 0, until: expect.any(String) });
  });
});

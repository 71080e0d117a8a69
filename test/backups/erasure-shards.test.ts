/**
 * The backups' part of an erasure of a subject whose keys are in shards, on PostgreSQL
 * and MinIO (shards of 2): one backup taken while the first key was the head, another
 * after it rolled into a shard. Both hold a key of the subject, so the tier counts both
 * — at classification, as removed, and in the residual — not only the backups holding
 * the head; and a backup holding a shard key whose destruction the chain does not hold
 * yet is still readable.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backupsErasable } from '../../src/backups/erasable.js';
import { type ErasureReply, tag } from '../erasure/fixtures.js';
import { ok } from '../support/http.js';
import { openTestVault, type TestVault } from '../support/vault.js';
import { minioEnv, vaultCalls } from './support.js';

const SHARD = 2;

describe('an erasure of a subject whose keys are in shards, with backups holding them', () => {
  let source: TestVault;

  beforeAll(async () => {
    source = await openTestVault({
      extraEnv: { ...minioEnv().env, LETHE_ERASURE_POLL_MS: '100', LETHE_KEY_SHARD_ENTRIES: String(SHARD) },
      app: { erasureWorker: false },
    });
  });
  afterAll(async () => {
    await source?.close();
  });

  const { call, append } = vaultCalls(() => source);
  const backup = async () => (await ok<{ backupId: string }>(call()('POST', '/v1/backups', { role: 'backup' }), 201)).backupId;

  it('counts every backup holding a key of the subject, head or shard', { timeout: 300_000 }, async () => {
    const A = `user:erase-shards-${tag()}`;
    const hash = source.app.keys.subjectHash(A);
    await append(A, `Alice note 0 ${tag(8)}`);
    const [first] = await source.app.keys.keysOf(hash);
    // the first backup holds the first key alone, while it is the head
    await backup();
    for (let i = 1; (await source.app.keys.keysOf(hash)).length < 2; i++) {
      expect(i, 'the head never rolled into a shard').toBeLessThan(20);
      await append(A, `Alice note ${i} ${tag(8)}`);
    }
    const keys = await source.app.keys.keysOf(hash);
    expect(keys[0]!.keyId).not.toBe(first!.keyId);
    expect(keys.map((k) => k.keyId)).toContain(first!.keyId);
    await backup();

    // before the erasure: no destruction is marked in either backup, both are readable through some key of the subject
    const tier = backupsErasable({ backups: source.app.backups, destructions: source.app.destructions, keys: source.app.keys });
    const target = { kind: 'subject' as const, erasureId: 'era_test', subjectHash: hash, keyId: keys[0]!.keyId };
    expect(await tier.contributions(target)).toBe(2);
    expect(await tier.readable({ ...target, contributed: 2 })).toBe(2);

    const { erasureId } = await ok<{ erasureId: string }>(
      call()('POST', '/v1/erasures', { role: 'eraser', body: { subject: A, legalBasis: 'gdpr-art17' } }),
      202,
    );
    const view = await source.app.erasures.settle(erasureId);
    expect(view.status, JSON.stringify(view.steps)).toBe('completed');
    expect(await source.app.keys.keysOf(hash)).toEqual([]);

    const reply = await ok<ErasureReply>(call()('GET', `/v1/erasures/${erasureId}`, { role: 'eraser' }), 200);
    expect((reply.certificate!.payload as { tiers: Record<string, unknown> }).tiers.backups).toEqual({ contributed: 2, removed: 2 });
    const residual = reply.residuals.find((r) => r.tier === 'backups' && r.kind === 'wrapped-dek');
    expect(residual?.detail, JSON.stringify(reply.residuals)).toContain('2 lethe backup(s)');
    expect(reply.steps.find((s) => s.name === 'classify')?.detail).toContain('2 backup(s) hold');
    expect(reply.steps.find((s) => s.name === 'propagate')?.detail).toContain('2 backup(s) hold the destroyed keys');
    // once every key is destroyed and in the chain, nothing of the subject is left readable in either backup
    const all = [keys[0]!.keyId, ...keys.slice(1).map((k) => k.keyId)];
    expect(await tier.readable({ ...target, contributed: 2, otherKeys: all.slice(1) })).toBe(0);
  });
});

/**
 * The ledger chain in a backup bucket holds every destruction the backups in it record,
 * also when the backups move to a new bucket (S3_BACKUP_BUCKET changed) after some
 * destructions were already copied into the old one. PostgreSQL and a real MinIO.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chainRecordKey, LEDGER_HEAD_KEY } from '../../src/backups/ledger-chain.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { openTestVault, type TestVault } from '../support/vault.js';
import { hex, ledgerHolds, minioEnv, until } from './support.js';

describe('the ledger chain after the backups move to a new bucket', () => {
  let tv: TestVault;
  const target: { db?: TestDatabase } = {};
  const { env } = minioEnv();
  const newBackupBucket = `lethe-bak-moved-${hex()}`;

  beforeAll(async () => {
    tv = await openTestVault({ extraEnv: env });
  });
  afterAll(async () => {
    await tv?.close();
    await target.db?.drop();
  });

  it('copies every earlier destruction into the new bucket, so a backup there restores without force', async () => {
    const a = await tv.app.log.append(`user:la-${hex()}`, { text: 'Erased before the move.' }, 'writer');
    const b = await tv.app.log.append(`user:lb-${hex()}`, { text: 'Kept.' }, 'writer');
    await tv.app.backups.run();
    await tv.app.keys.destroyKey(a.keyId, { reason: 'erasure', actor: 'eraser' });
    // the destruction reaches the old bucket's ledger chain
    await until(
      'the ledger chain in the old bucket',
      () => ledgerHolds(tv.app.backups.store, a.keyId),
      (h) => h,
    );

    // the backups move to a new bucket
    const moved = await tv.reopen({}, { S3_BACKUP_BUCKET: newBackupBucket });
    const { backupId } = await moved.backups.run();
    const manifest = await moved.backups.manifest(backupId);
    expect(manifest.ledgerEntries).toBe(1);
    expect(await moved.backups.store.head(chainRecordKey(0))).toBeDefined();
    expect(await moved.backups.store.head(LEDGER_HEAD_KEY)).toBeDefined();
    expect(await ledgerHolds(moved.backups.store, a.keyId)).toBe(true);
    expect((await moved.backups.ledgerChain()).entries.get(a.keyId)).toMatchObject({ keyId: a.keyId, keyKind: 'subject' });

    // and so the backup restores from the new bucket into an empty database without --force
    target.db = await createTestDatabase();
    const restored = await tv.reopen({}, { DATABASE_URL: target.db.url, S3_BUCKET: `lethe-live-restored-${hex()}`, S3_BACKUP_BUCKET: newBackupBucket });
    const result = await restored.backups.restore(backupId, { actor: 'test' });
    expect(result).toMatchObject({ ledger: 'replayed', warnings: [] });
    expect(await restored.keys.validity([a.keyId, b.keyId])).toEqual({ [a.keyId]: 'destroyed', [b.keyId]: 'active' });
  });
});

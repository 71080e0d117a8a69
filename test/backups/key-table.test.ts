/**
 * The key-table export in a backup is wrapped keys under a KEK epoch: a key destroyed
 * after the backup is marked destroyed in the manifest at once, but its wrapped copy
 * only becomes inert when a KEK rotation retires the epoch it was wrapped under.
 * PostgreSQL and a real, versioned MinIO.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestVault, type TestVault } from '../support/vault.js';
import { hex, keyState, minioEnv, readJson, storedManifest, until } from './support.js';

interface KeyTable {
  keys: Array<{ keyId: string; kind: string; epoch: number; wrappedKey: string }>;
}

describe("a backup's key table and KEK rotation", () => {
  let tv: TestVault;
  beforeAll(async () => {
    tv = await openTestVault({ extraEnv: minioEnv().env });
  });
  afterAll(async () => {
    await tv?.close();
  });

  it("leaves a destroyed key's wrapped copy openable under its epoch until a rotation retires that epoch, and not after", async () => {
    const v = tv.app;
    const a = await v.log.append(`user:ka-${hex()}`, { text: 'Kept in a backup.' }, 'writer');
    const b = await v.log.append(`user:kb-${hex()}`, { text: 'Also kept in a backup.' }, 'writer');
    const dekA = Buffer.from((await v.keys.dekFor(a.keyId)).dek);
    const dekB = Buffer.from((await v.keys.dekFor(b.keyId)).dek);
    const before = await v.backups.run();
    const table = await readJson<KeyTable>(v.backups.store, (await storedManifest(v.backups.store, before.backupId)).keyTable.key);
    const wrappedA = table.keys.find((k) => k.keyId === a.keyId)!;
    expect(wrappedA.kind).toBe('subject');

    await v.keys.destroyKey(a.keyId, { reason: 'erasure', actor: 'eraser' });
    await until(
      'the destruction in the manifest',
      () => v.backups.manifest(before.backupId),
      (m) => keyState(m, a.keyId)?.state === 'destroyed',
    );
    // marked destroyed, yet the copy in the backup still opens under the live KEK epoch
    const opened = Buffer.from(await v.provider.unwrap(wrappedA.epoch, Buffer.from(wrappedA.wrappedKey, 'base64url'), a.keyId, 'subject'));
    expect(opened.equals(dekA)).toBe(true);

    const rotation = await v.epochs.rotate('admin');
    expect(rotation.retired).toContain(wrappedA.epoch);
    await expect(v.provider.unwrap(wrappedA.epoch, Buffer.from(wrappedA.wrappedKey, 'base64url'), a.keyId, 'subject')).rejects.toThrow();

    // a backup taken after the rotation holds B wrapped under the new epoch, and it opens to B's DEK
    const after = await v.backups.run();
    const fresh = await readJson<KeyTable>(v.backups.store, (await storedManifest(v.backups.store, after.backupId)).keyTable.key);
    const wrappedB = fresh.keys.find((k) => k.keyId === b.keyId)!;
    expect(wrappedB.epoch).toBe(rotation.epoch);
    expect(Buffer.from(await v.provider.unwrap(wrappedB.epoch, Buffer.from(wrappedB.wrappedKey, 'base64url'), b.keyId, 'subject')).equals(dekB)).toBe(true);
    expect(fresh.keys.map((k) => k.keyId)).not.toContain(a.keyId);
    dekA.fill(0);
    dekB.fill(0);
    opened.fill(0);
  });
});

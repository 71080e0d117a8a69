/**
 * Backups in a bucket under S3 Object Lock, on the real MinIO: the vault creates the
 * backup bucket with Object Lock (compliance or governance, LETHE_BACKUP_RETENTION_DAYS
 * days), every object version a backup writes is under retention and cannot be
 * removed — not even by the root credentials — and a destruction still reaches the
 * locked backup as a new manifest version. The destroyed subject's frames stay in
 * the undeletable objects, and open under no key lethe holds: for immutable backups,
 * crypto-shredding is the only erasure there is.
 *
 * Locked buckets cannot be removed (that is the point): every bucket here has a fresh
 * random name and a 1-day retention.
 */
import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { Client } from 'minio';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { chainRecordKey, LEDGER_HEAD_KEY } from '../../src/backups/ledger-chain.js';
import { type Manifest, manifestKey } from '../../src/backups/manifest.js';
import { envelopeKeyId, isCommittedTo } from '../../src/crypto/index.js';
import { unwrapRecordKey } from '../../src/log/frame.js';
import { queryRows } from '../../src/db/client.js';
import { decodeSegment } from '../../src/log/segment.js';
import { openTestVault, type TestVault } from '../support/vault.js';
import { ledgerRecordOf, readJson, until } from './support.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const sha256Hex = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
/** A fresh bucket name: lowercase, well under 63 characters. */
const freshBucket = (prefix: string) => `${prefix}-${randomBytes(5).toString('hex')}`;

function minioEnv(backupBucket: string, lock: 'off' | 'governance' | 'compliance'): Record<string, string> {
  const minio = inject('minio');
  return {
    S3_ENDPOINT: minio.endpoint,
    S3_ACCESS_KEY: minio.accessKey,
    S3_SECRET_KEY: minio.secretKey,
    S3_BUCKET: freshBucket('lethe-lklive'),
    S3_BACKUP_BUCKET: backupBucket,
    LETHE_BACKUP_OBJECT_LOCK: lock,
    LETHE_BACKUP_RETENTION_DAYS: '1',
  };
}

/** The root credentials of the test MinIO: whatever they cannot remove, nobody can. */
function rootClient(): Client {
  const minio = inject('minio');
  const url = new URL(minio.endpoint);
  return new Client({ endPoint: url.hostname, port: Number(url.port), useSSL: false, accessKey: minio.accessKey, secretKey: minio.secretKey });
}

interface Version {
  readonly name: string;
  readonly versionId: string;
}

/** Every stored version (delete markers left out) of every object in `bucket`. */
function allVersions(client: Client, bucket: string): Promise<Version[]> {
  return new Promise((resolve, reject) => {
    const out: Version[] = [];
    const stream = client.listObjects(bucket, '', true, { IncludeVersion: true });
    stream.on('data', (item) => {
      const v = item as { name?: string; versionId?: string; isDeleteMarker?: boolean };
      if (v.name && v.versionId && !v.isDeleteMarker) out.push({ name: v.name, versionId: v.versionId });
    });
    stream.on('error', reject);
    stream.on('end', () => resolve(out));
  });
}

async function versionBytes(client: Client, bucket: string, v: Version): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const c of await client.getObject(bucket, v.name, { versionId: v.versionId })) chunks.push(c as Buffer);
  return new Uint8Array(Buffer.concat(chunks));
}

/**
 * Tries to remove this very version with the root credentials; expects the refusal,
 * then that the version is still there with the same bytes.
 */
async function expectUndeletable(client: Client, bucket: string, v: Version): Promise<void> {
  const before = await versionBytes(client, bucket, v);
  const refused = await client.removeObject(bucket, v.name, { versionId: v.versionId }).then(
    () => undefined,
    (e: unknown) => e as { code?: string; message?: string },
  );
  expect(refused, `removing ${v.name} version ${v.versionId} was not refused`).toBeDefined();
  expect(`${refused?.code} ${refused?.message}`).toMatch(/AccessDenied|WORM protected/);
  const after = await allVersions(client, bucket);
  expect(after).toContainEqual({ name: v.name, versionId: v.versionId });
  expect(sha256Hex(await versionBytes(client, bucket, v))).toBe(sha256Hex(before));
}

describe('backups in a bucket under Object Lock in compliance mode', () => {
  const client = rootClient();
  const backupBucket = freshBucket('lethe-lkbak');
  let tv: TestVault;
  let backupId = '';
  const a: Array<{ entryId: string; keyId: string }> = [];
  const b: Array<{ entryId: string; keyId: string }> = [];

  beforeAll(async () => {
    tv = await openTestVault({ extraEnv: minioEnv(backupBucket, 'compliance') });
    for (let i = 0; i < 3; i++) {
      a.push(await tv.app.log.append('user:lock-a', { text: `A confides ${i} ${randomBytes(6).toString('hex')}` }, 'writer'));
      b.push(await tv.app.log.append('user:lock-b', { text: `B keeps ${i} ${randomBytes(6).toString('hex')}` }, 'writer'));
    }
    backupId = (await tv.app.backups.run()).backupId;
  });
  afterAll(async () => {
    await tv?.close();
  });

  it('creates the backup bucket with Object Lock in compliance mode and a default retention of 1 day', async () => {
    expect(await client.getObjectLockConfig(backupBucket)).toMatchObject({ objectLockEnabled: 'Enabled', mode: 'COMPLIANCE', unit: 'Days', validity: 1 });
  });

  it('puts every object version of the backup under compliance retention of about a day', async () => {
    const versions = await allVersions(client, backupBucket);
    const names = new Set(versions.map((v) => v.name));
    expect(names).toContain(manifestKey(backupId));
    expect(names).toContain(chainRecordKey(0));
    expect(names).toContain(LEDGER_HEAD_KEY);
    expect([...names].filter((n) => n.startsWith('objects/')).length).toBeGreaterThan(0);
    for (const v of versions) {
      const retention = await client.getObjectRetention(backupBucket, v.name, { versionId: v.versionId });
      expect(retention, v.name).toMatchObject({ mode: 'COMPLIANCE' });
      const until = Date.parse(retention!.retainUntilDate);
      if (v.name.startsWith('ledger/') || v.name.endsWith('/manifest.json')) {
        // the ledger chain and each manifest (a witness of the chain's reach) are retained for LETHE_LEDGER_RETENTION_DAYS (3650 by default), in the stronger mode
        expect(until, v.name).toBeGreaterThan(Date.now() + 3649 * DAY_MS);
        continue;
      }
      // the default retention of the bucket: 1 day from when the version was written
      expect(until, v.name).toBeGreaterThan(Date.now() + DAY_MS / 2);
      expect(until, v.name).toBeLessThanOrEqual(Date.now() + DAY_MS);
    }
  });

  it('refuses to remove a version of a stored object, of the manifest and of a ledger object, even with the root credentials', async () => {
    const manifest = await readJson<Manifest>(tv.app.backups.store, manifestKey(backupId));
    const stored = manifest.objects.find((o) => o.key.startsWith('log/'))!.stored;
    const versions = await allVersions(client, backupBucket);
    const pick = (name: string) => {
      const v = versions.find((x) => x.name === name);
      expect(v, `no version of ${name} in the backup bucket`).toBeDefined();
      return v!;
    };
    await expectUndeletable(client, backupBucket, pick(stored));
    await expectUndeletable(client, backupBucket, pick(manifestKey(backupId)));
    await expectUndeletable(client, backupBucket, pick(chainRecordKey(0)));
    await expectUndeletable(client, backupBucket, pick(LEDGER_HEAD_KEY));
  });

  it("marks A destroyed through the ledger chain, the locked manifest untouched; verify finds A's data unreadable and B's decrypting; A's undeletable frames open under no key lethe holds", async () => {
    const aKey = a[0]!.keyId;
    const bKey = b[0]!.keyId;
    expect(a.every((e) => e.keyId === aKey)).toBe(true);
    expect(aKey).not.toBe(bKey);
    await tv.app.keys.destroyKey(aKey, { reason: 'erasure', actor: 'eraser' });

    // the vault's own destruction hook writes the chain record: nobody calls propagate here
    const folded = await until(
      "the folded manifest marking A's key destroyed",
      () => tv.app.backups.manifest(backupId),
      (m) => m.keys.find((k) => k.keyId === aKey)?.state === 'destroyed',
    );
    expect(folded.overlay.destroyed).toBe(1);
    expect(folded.keys.find((k) => k.keyId === bKey)?.state).toBe('active');
    const manifest = await readJson<Manifest>(tv.app.backups.store, manifestKey(backupId));
    expect(manifest.version).toBe(1);
    expect(manifest.keys.find((k) => k.keyId === aKey)?.state).toBe('active');
    // and the destruction's record in the ledger chain
    const record = await until(
      "the ledger chain record of A's destruction",
      () => ledgerRecordOf(tv.app.backups.store, aKey),
      (r) => r !== undefined,
    );

    // the manifest's one version is kept and locked (written once, never rewritten); so is the ledger copy of the destruction
    const versions = await allVersions(client, backupBucket);
    const manifestVersions = versions.filter((v) => v.name === manifestKey(backupId));
    expect(manifestVersions).toHaveLength(1);
    await expectUndeletable(client, backupBucket, manifestVersions[0]!);
    const ledgerCopy = versions.find((v) => v.name === record);
    expect(ledgerCopy).toBeDefined();
    expect(await client.getObjectRetention(backupBucket, ledgerCopy!.name, { versionId: ledgerCopy!.versionId })).toMatchObject({ mode: 'COMPLIANCE' });
    await expectUndeletable(client, backupBucket, ledgerCopy!);

    const verification = await tv.app.backups.verify(backupId);
    expect(verification).toMatchObject({ backupId, manifestVersion: 1, corrupted: [], ok: true, ledger: { ok: true, folded: 1 } });
    expect(verification.keys.find((k) => k.keyId === aKey)).toMatchObject({ state: 'destroyed', destroyedBy: 'chain', data: 'unreadable' });
    expect(verification.keys.find((k) => k.keyId === bKey)).toMatchObject({ state: 'active', data: 'decrypts' });

    // A's frames are still in the backup, in stored objects nobody can remove, and every
    // key lethe holds fails their key-commitment check
    const live = await queryRows<{ key_id: string }>(tv.app.db.db, sql`select key_id from subject_keys`);
    const deks = await tv.app.keys.deksFor(live.map((r) => r.key_id));
    try {
      expect([...deks.keys()]).toEqual([bKey]);
      const holdingA = manifest.objects.filter((o) => o.keyIds.includes(aKey));
      expect(holdingA.length).toBeGreaterThan(0);
      let aFrames = 0;
      let tried = 0;
      // each frame is sealed under a record key of its own (its envelope names the entry), wrapped under the subject key in the index
      const wraps = new Map(
        (await queryRows<{ entry_id: string; wrapped_key: Uint8Array }>(tv.app.db.db, sql`select entry_id, wrapped_key from log_entries`)).map((r) => [
          r.entry_id,
          r.wrapped_key,
        ]),
      );
      const aIds = new Set(a.map((e) => e.entryId));
      for (const o of holdingA) {
        const stored = versions.filter((v) => v.name === o.stored);
        expect(stored).toHaveLength(1);
        await expectUndeletable(client, backupBucket, stored[0]!);
        const bytes = await versionBytes(client, backupBucket, stored[0]!);
        expect(sha256Hex(bytes)).toBe(o.sha256);
        for (const f of decodeSegment(bytes)) {
          const entryId = envelopeKeyId(f.envelope);
          if (!aIds.has(entryId)) continue;
          aFrames++;
          for (const [keyId, dek] of deks) {
            expect(isCommittedTo(dek, f.envelope)).toBe(false);
            // nor does any key lethe holds unwrap A's record key (wrapped under A's destroyed key alone)
            for (const under of [keyId, aKey]) expect(() => unwrapRecordKey(dek, under, entryId, wraps.get(entryId)!)).toThrow();
            tried++;
          }
        }
      }
      expect(aFrames).toBe(a.length);
      expect(tried).toBe(aFrames * deks.size);
      // the check can tell: B's live key is committed to B's frames in the same backup
      const bObject = manifest.objects.find((o) => o.keyIds.includes(bKey))!;
      const bIds = new Set(b.map((e) => e.entryId));
      const bFrame = decodeSegment(await tv.app.backups.store.get(bObject.stored)).find((f) => bIds.has(envelopeKeyId(f.envelope)))!;
      const bRecordKey = unwrapRecordKey(deks.get(bKey)!, bKey, envelopeKeyId(bFrame.envelope), wraps.get(envelopeKeyId(bFrame.envelope))!);
      expect(isCommittedTo(bRecordKey, bFrame.envelope)).toBe(true);
      bRecordKey.fill(0);
    } finally {
      for (const dek of deks.values()) dek.fill(0);
    }
  });

  it('opens again with the same lock settings on the existing locked bucket', async () => {
    const again = await tv.reopen();
    expect((await again.backups.list()).map((s) => s.backupId)).toContain(backupId);
    expect((await again.backups.manifest(backupId)).version).toBeGreaterThanOrEqual(1);
    expect(await client.getObjectLockConfig(backupBucket)).toMatchObject({ objectLockEnabled: 'Enabled', mode: 'COMPLIANCE', unit: 'Days', validity: 1 });
  });

  it('refuses to turn Object Lock on for an existing bucket created without it, naming the bucket', async () => {
    const plainBucket = freshBucket('lethe-lkplain');
    const plain = await tv.reopen({}, { S3_BACKUP_BUCKET: plainBucket, LETHE_BACKUP_OBJECT_LOCK: 'off', LETHE_LEDGER_LOCK: 'off' });
    await plain.close();
    expect(await client.bucketExists(plainBucket)).toBe(true);
    await expect(client.getObjectLockConfig(plainBucket)).rejects.toBeDefined();

    const refused = await tv.reopen({}, { S3_BACKUP_BUCKET: plainBucket, LETHE_BACKUP_OBJECT_LOCK: 'compliance' }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(refused, 'a vault opened with Object Lock on a bucket without it').toBeDefined();
    expect(refused!.message).toContain(plainBucket);
    expect(refused!.message).toMatch(/Object Lock/);
    expect(refused!.message).toMatch(/only be turned on when a bucket is created|only be enabled (at|when a bucket is) creat/i);
    // and the bucket was left as it was
    await expect(client.getObjectLockConfig(plainBucket)).rejects.toBeDefined();
    // then remove it: it holds no locked data
    for (const v of await allVersions(client, plainBucket)) await client.removeObject(plainBucket, v.name, { versionId: v.versionId });
    await client.removeBucket(plainBucket);
  });
});

describe('backups in a bucket under Object Lock in governance mode', () => {
  const client = rootClient();
  const backupBucket = freshBucket('lethe-lkgov');
  let tv: TestVault;

  beforeAll(async () => {
    tv = await openTestVault({ extraEnv: minioEnv(backupBucket, 'governance') });
  });
  afterAll(async () => {
    await tv?.close();
  });

  it('creates the backup bucket with Object Lock in governance mode and a default retention of 1 day', async () => {
    expect(await client.getObjectLockConfig(backupBucket)).toMatchObject({ objectLockEnabled: 'Enabled', mode: 'GOVERNANCE', unit: 'Days', validity: 1 });
  });

  it("puts a backup's objects under governance retention, so removing a version without the bypass is refused", async () => {
    await tv.app.log.append('user:gov', { text: `governed ${randomBytes(6).toString('hex')}` }, 'writer');
    const { backupId } = await tv.app.backups.run();
    const versions = await allVersions(client, backupBucket);
    const manifest = versions.find((v) => v.name === manifestKey(backupId));
    expect(manifest).toBeDefined();
    // the manifest is retained like the ledger (compliance by default), the rest of the backup by the bucket's governance default
    expect(await client.getObjectRetention(backupBucket, manifest!.name, { versionId: manifest!.versionId })).toMatchObject({ mode: 'COMPLIANCE' });
    const database = versions.find((v) => v.name.endsWith('/database.json'));
    expect(await client.getObjectRetention(backupBucket, database!.name, { versionId: database!.versionId })).toMatchObject({ mode: 'GOVERNANCE' });
    await expectUndeletable(client, backupBucket, database!);
    await expectUndeletable(client, backupBucket, manifest!);
  });
});

/**
 * Restore on PostgreSQL and a real MinIO: a backup taken before an erasure, restored
 * into a fresh database and bucket, yields nothing of the erased subject; the ledger
 * chain in the backup bucket is replayed even when the source database lost its
 * ledger; a plain delete of the chain is worked around from the bucket's versions;
 * with the chain gone for good, the restore refuses unless forced.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { Client } from 'minio';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { envelopeKeyId, isCommittedTo } from '../../src/crypto/index.js';
import { queryRows } from '../../src/db/client.js';
import { unwrapRecordKey } from '../../src/log/frame.js';
import { decodeSegment } from '../../src/log/segment.js';
import type { App } from '../../src/app/open.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { openTestVault, type TestVault } from '../support/vault.js';

const bucket = (p: string) => `${p}-${randomBytes(4).toString('hex')}`;

describe('restoring a backup taken before an erasure', () => {
  let source: TestVault;
  const targets: TestDatabase[] = [];
  const backupBucket = bucket('lethe-rbak');
  const a: Array<{ entryId: string; keyId: string; text: string }> = [];
  const b: Array<{ entryId: string; keyId: string; text: string }> = [];
  let backupId = '';

  /** A fresh database and live bucket with the source's keyring, root key and backup bucket. */
  async function target(): Promise<App> {
    const db = await createTestDatabase();
    targets.push(db);
    return source.reopen({}, { DATABASE_URL: db.url, S3_BUCKET: bucket('lethe-rlive') });
  }

  beforeAll(async () => {
    const minio = inject('minio');
    source = await openTestVault({
      extraEnv: {
        S3_ENDPOINT: minio.endpoint,
        S3_ACCESS_KEY: minio.accessKey,
        S3_SECRET_KEY: minio.secretKey,
        S3_BUCKET: bucket('lethe-rsrc'),
        S3_BACKUP_BUCKET: backupBucket,
        // governance: the test removes the chain for good with the bypass (compliance, the default, lets no one)
        LETHE_LEDGER_LOCK: 'governance',
      },
    });
    for (let i = 0; i < 3; i++) {
      const ta = `A private ${i} ${randomBytes(6).toString('hex')}`;
      const tb = `B keeps ${i} ${randomBytes(6).toString('hex')}`;
      a.push({ ...(await source.app.log.append('user:ra', { text: ta }, 'writer')), text: ta });
      b.push({ ...(await source.app.log.append('user:rb', { text: tb }, 'writer')), text: tb });
    }
    backupId = (await source.app.backups.run()).backupId;
    // the erasure of A happens after the backup
    await source.app.keys.destroyKey(a[0]!.keyId, { reason: 'erasure', actor: 'eraser' });
    await source.app.backups.propagate();
  });
  afterAll(async () => {
    await source?.close();
    for (const db of targets) await db.drop().catch(() => {});
  });

  it("A's entries answer key_destroyed and its frames open under nothing the restored system holds; B's read back byte for byte", async () => {
    const restored = await target();
    const result = await restored.backups.restore(backupId, { actor: 'test' });
    expect(result).toMatchObject({ entries: 6, keys: 1, destroyedKeys: 1, ledger: 'replayed', warnings: [] });
    for (const e of b) expect((await restored.log.get(e.entryId)).text).toBe(e.text);
    expect((await restored.log.list('user:rb')).map((e) => e.text)).toEqual(b.map((e) => e.text));
    for (const e of a) await expect(restored.log.get(e.entryId)).rejects.toMatchObject({ code: 'key_destroyed' });
    await expect(restored.log.list('user:ra')).rejects.toMatchObject({ code: 'subject_erased' });
    expect(await restored.keys.validity([a[0]!.keyId, b[0]!.keyId])).toEqual({ [a[0]!.keyId]: 'destroyed', [b[0]!.keyId]: 'active' });

    // every key the restored system holds, against every frame of A in the restored bucket
    const live = await queryRows<{ key_id: string }>(restored.db.db, sql`select key_id from subject_keys`);
    const deks = await restored.keys.deksFor(live.map((r) => r.key_id));
    const segments = await queryRows<{ segment: string }>(restored.db.db, sql`select distinct segment from log_entries where key_id = ${a[0]!.keyId}`);
    let tried = 0;
    let aFrames = 0;
    // each frame is sealed under a record key of its own (its envelope names the entry), wrapped under A's key in the index
    const wraps = new Map(
      (
        await queryRows<{ entry_id: string; wrapped_key: Uint8Array }>(
          restored.db.db,
          sql`select entry_id, wrapped_key from log_entries where key_id = ${a[0]!.keyId}`,
        )
      ).map((r) => [r.entry_id, r.wrapped_key]),
    );
    for (const { segment } of segments) {
      for (const f of decodeSegment(await restored.objects.get(segment))) {
        const entryId = envelopeKeyId(f.envelope);
        if (!wraps.has(entryId)) continue;
        aFrames++;
        for (const [keyId, dek] of deks) {
          expect(isCommittedTo(dek, f.envelope)).toBe(false);
          for (const under of [keyId, a[0]!.keyId]) expect(() => unwrapRecordKey(dek, under, entryId, wraps.get(entryId)!)).toThrow();
          tried++;
        }
      }
    }
    expect(aFrames).toBe(3);
    expect(deks.size).toBe(1);
    expect(tried).toBe(aFrames * deks.size);
    for (const dek of deks.values()) dek.fill(0);
    // the restored audit chain verifies, with the restore recorded at its end
    expect(await restored.audit.verify(restored.db.db)).toMatchObject({ ok: true });
    // and a restore into a database that is no longer empty is refused
    await expect(restored.backups.restore(backupId, { actor: 'test' })).rejects.toMatchObject({ code: 'conflict' });
  });

  it("replays the backup bucket's ledger copy when the source database lost its ledger; refuses without it unless forced", async () => {
    // the source database loses its ledger table's rows
    await source.app.db.db.execute(sql`delete from destruction_ledger`);
    const first = await target();
    expect(await first.backups.restore(backupId, { actor: 'test' })).toMatchObject({ destroyedKeys: 1, ledger: 'replayed' });
    await expect(first.log.get(a[0]!.entryId)).rejects.toMatchObject({ code: 'key_destroyed' });

    // a plain delete of every ledger object hides nothing from a versioned bucket
    const store = source.app.backups.store;
    for await (const o of store.list('ledger/')) await store.delete(o.key);
    const hidden = await target();
    const workedAround = await hidden.backups.restore(backupId, { actor: 'test' });
    expect(workedAround.ledger).toBe('replayed');
    expect(workedAround.warnings.join(' ')).toMatch(/current version was removed or altered/);
    await expect(hidden.log.get(a[0]!.entryId)).rejects.toMatchObject({ code: 'key_destroyed' });

    // and the ledger chain removed for good (every version: a bucket without Object Lock, or the governance bypass)
    const client = new Client({
      endPoint: new URL(inject('minio').endpoint).hostname,
      port: Number(new URL(inject('minio').endpoint).port),
      useSSL: false,
      accessKey: inject('minio').accessKey,
      secretKey: inject('minio').secretKey,
    });
    const versions = await new Promise<Array<{ name: string; versionId: string }>>((resolve, reject) => {
      const out: Array<{ name: string; versionId: string }> = [];
      const stream = client.listObjects(backupBucket, 'ledger/', true, { IncludeVersion: true });
      stream.on('data', (v) => {
        const o = v as { name?: string; versionId?: string };
        if (o.name && o.versionId) out.push({ name: o.name, versionId: o.versionId });
      });
      stream.on('error', reject);
      stream.on('end', () => resolve(out));
    });
    for (const v of versions) await client.removeObject(backupBucket, v.name, { versionId: v.versionId, governanceBypass: true });
    const second = await target();
    const refused = await second.backups.restore(backupId, { actor: 'test' }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'conflict' });
    expect(String((refused as Error).message)).toContain('--force-without-ledger');
    expect(await queryRows<{ n: string }>(second.db.db, sql`select count(*) as n from subject_keys`)).toEqual([{ n: '0' }]);

    const forced = await second.backups.restore(backupId, { actor: 'test', force: true });
    expect(forced.ledger).toBe('forced');
    expect(forced.warnings.join(' ')).toMatch(/RESTORED AS LIVE/);
    // what forcing costs, as the warning says: A was destroyed after the backup, and only the chain (the
    // manifest's overlay) recorded it — with every version of the chain removed, A comes back live
    expect(forced.warnings.join(' '), forced.warnings.join(' | ')).toMatch(/keys destroyed after this backup (may be|ARE) RESTORED AS LIVE/);
    expect((await second.log.get(a[0]!.entryId)).text).toBe(a[0]!.text);
    expect((await second.log.get(b[0]!.entryId)).text).toBe(b[0]!.text);
  });
});

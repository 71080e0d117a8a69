/**
 * Regeneration on PostgreSQL and a real, versioned MinIO: a summary of A's and B's
 * entries and a digest of that summary and C's entries, regenerated without A.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { Client } from 'minio';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { objectName } from '../../src/artifacts/texts.js';
import { encodeContext, envelopeKeyId, open } from '../../src/crypto/index.js';
import { queryRows } from '../../src/db/client.js';
import { openTestVault, type TestVault } from '../support/vault.js';

const canary = (who: string) => `${who}-CANARY-${randomBytes(6).toString('hex')}`;

async function allVersions(client: Client, bucket: string, prefix: string): Promise<Array<{ name: string; versionId: string }>> {
  return new Promise((resolve, reject) => {
    const out: Array<{ name: string; versionId: string }> = [];
    const stream = client.listObjects(bucket, prefix, true, { IncludeVersion: true });
    stream.on('data', (v) => {
      const o = v as { name?: string; versionId?: string; isDeleteMarker?: boolean };
      if (o.name && o.versionId && !o.isDeleteMarker) out.push({ name: o.name, versionId: o.versionId });
    });
    stream.on('error', reject);
    stream.on('end', () => resolve(out));
  });
}

async function getVersion(client: Client, bucket: string, name: string, versionId: string): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const c of await client.getObject(bucket, name, { versionId })) chunks.push(c as Buffer);
  return new Uint8Array(Buffer.concat(chunks));
}

/** Every key lethe holds right now: live artifact-version keys and live subject DEKs. */
async function everyLiveKey(tv: TestVault): Promise<Uint8Array[]> {
  const art = await queryRows<{ key_id: string }>(tv.app.db.db, sql`select key_id from artifact_keys`);
  const sub = await queryRows<{ key_id: string }>(tv.app.db.db, sql`select key_id from subject_keys`);
  return [
    ...(await Promise.all(art.map((r) => tv.app.versionKeys.unwrap(r.key_id, 'artifact-version')))),
    ...(await Promise.all(sub.map(async (r) => (await tv.app.keys.dekFor(r.key_id)).dek))),
  ];
}

describe('regenerating a summary and the digest above it without subject A (MinIO)', () => {
  let tv: TestVault;
  let client: Client;
  const bucket = `lethe-regen-${randomBytes(4).toString('hex')}`;
  const A = [canary('A1'), canary('A2')];
  const B = [canary('B1'), canary('B2')];
  const C = [canary('C1')];
  const ids: Record<'a' | 'b' | 'c', string[]> = { a: [], b: [], c: [] };

  beforeAll(async () => {
    const minio = inject('minio');
    tv = await openTestVault({
      extraEnv: { S3_ENDPOINT: minio.endpoint, S3_ACCESS_KEY: minio.accessKey, S3_SECRET_KEY: minio.secretKey, S3_BUCKET: bucket },
    });
    const url = new URL(minio.endpoint);
    client = new Client({ endPoint: url.hostname, port: Number(url.port), useSSL: false, accessKey: minio.accessKey, secretKey: minio.secretKey });
    for (const c of A) ids.a.push((await tv.app.log.append('user:a', { text: `A's home address is ${c}.` }, 'writer')).entryId);
    for (const c of B) ids.b.push((await tv.app.log.append('user:b', { text: `B booked a trip, reference ${c}.` }, 'writer')).entryId);
    for (const c of C) ids.c.push((await tv.app.log.append('user:c', { text: `C adopted a cat named ${c}.` }, 'writer')).entryId);
  });
  afterAll(async () => {
    await tv?.close();
  });

  it('rewrites both as version 2 without A, keeps B and C, and leaves version 1 unreadable even from a raw copy of the bucket', async () => {
    const v = tv.app;
    const summary = await v.artifacts.write(
      { kind: 'summary', text: `Weekly summary: A lives at ${A[0]}; B trip ${B[0]}; A also ${A[1]}; B ${B[1]}.`, sources: [...ids.a, ...ids.b] },
      'writer',
    );
    expect(summary.subjects).toBe(2);
    const digest = await v.artifacts.write(
      { kind: 'digest', text: `Topic digest: ${A[0]} ${B[0]} ${C[0]}`, sources: [summary.artifactId, ...ids.c] },
      'writer',
    );
    expect(digest.subjects).toBe(3);
    const v1 = { summary: await v.artifacts.get(summary.artifactId), digest: await v.artifacts.get(digest.artifactId) };
    const v1Keys = await queryRows<{ artifact_id: string; key_id: string }>(v.db.db, sql`select artifact_id, key_id from artifacts`);

    // a raw copy of the whole bucket, taken before
    const rawCopy = new Map<string, Uint8Array>();
    for await (const o of v.objects.list('')) rawCopy.set(o.key, await v.objects.get(o.key));
    expect(rawCopy.has(objectName(summary.artifactId, 1))).toBe(true);
    expect(rawCopy.has(objectName(digest.artifactId, 1))).toBe(true);

    const result = await v.artifacts.regenerate([summary.artifactId], { excluding: ids.a, actor: 'eraser' });
    expect(result).toEqual({
      regenerated: [
        { artifactId: summary.artifactId, version: 2 },
        { artifactId: digest.artifactId, version: 2 },
      ],
      removed: [],
    });

    const s2 = await v.artifacts.get(summary.artifactId);
    const d2 = await v.artifacts.get(digest.artifactId);
    expect([s2.version, d2.version]).toEqual([2, 2]);
    for (const c of A) {
      expect(s2.text).not.toContain(c);
      expect(d2.text).not.toContain(c);
    }
    for (const c of B) {
      expect(s2.text).toContain(c);
      expect(d2.text).toContain(c);
    }
    expect(d2.text).toContain(C[0]);
    expect(s2.sources.sort()).toEqual([...ids.b].sort());
    expect(d2.sources.sort()).toEqual([summary.artifactId, ...ids.c].sort());
    expect((await v.artifacts.provenance(summary.artifactId)).subjects).toHaveLength(1);
    expect(v1.summary.text).toContain(A[0]); // what version 1 held

    // version 1's keys are destroyed: in the ledger, gone from artifact_keys
    expect(
      (
        await v.backups.awaitDurable(
          v1Keys.map((k) => k.key_id),
          30_000,
        )
      ).pending,
    ).toEqual([]);
    const validity = await v.keys.validity(v1Keys.map((k) => k.key_id));
    expect(Object.values(validity)).toEqual(['destroyed', 'destroyed']);
    // and the version 2 keys answer active to a backup job's validity check
    const v2Keys = await queryRows<{ key_id: string }>(v.db.db, sql`select key_id from artifacts`);
    expect(Object.values(await v.keys.validity(v2Keys.map((k) => k.key_id)))).toEqual(['active', 'active']);

    // the raw copy and every noncurrent version MinIO still keeps: version 1 opens under no key lethe holds
    const keys = await everyLiveKey(tv);
    expect(keys.length).toBeGreaterThanOrEqual(5);
    const oldObjects: Array<[string, Uint8Array]> = [];
    for (const id of [summary.artifactId, digest.artifactId]) {
      oldObjects.push([`copy:${id}`, rawCopy.get(objectName(id, 1))!]);
      for (const ver of await allVersions(client, bucket, objectName(id, 1))) {
        oldObjects.push([`minio:${ver.name}@${ver.versionId}`, await getVersion(client, bucket, ver.name, ver.versionId)]);
      }
    }
    expect(oldObjects.length).toBeGreaterThanOrEqual(4);
    let attempts = 0;
    for (const [, bytes] of oldObjects) {
      expect(Buffer.from(bytes).includes(Buffer.from(A[0]!))).toBe(false);
      const keyId = envelopeKeyId(bytes);
      const artifactId = v1Keys.find((k) => k.key_id === keyId)!.artifact_id;
      for (const key of keys) {
        expect(() =>
          open({ key, envelope: bytes, expectedKeyId: keyId, associatedData: encodeContext('artifact', { artifactId, version: 1, keyId }) }),
        ).toThrow();
        attempts++;
      }
    }
    expect(attempts).toBe(oldObjects.length * keys.length);
    for (const k of keys) k.fill(0);
    // and the current object of version 1 is gone from the bucket listing
    expect(await v.objects.head(objectName(summary.artifactId, 1))).toBeUndefined();
  });
});

describe('regeneration cascades in dependency order, each artifact exactly once', () => {
  let tv: TestVault;
  beforeAll(async () => {
    tv = await openTestVault();
  });
  afterAll(async () => {
    await tv?.close();
  });

  it('a digest above two regenerated summaries (a diamond) gets exactly one new version', async () => {
    const v = tv.app;
    const a = (await v.log.append('user:d-a', { text: 'A private fact.' }, 'writer')).entryId;
    const b = (await v.log.append('user:d-b', { text: 'B public fact.' }, 'writer')).entryId;
    const s1 = (await v.artifacts.write({ kind: 'summary', text: 'one', sources: [a, b] }, 'writer')).artifactId;
    const s2 = (await v.artifacts.write({ kind: 'summary', text: 'two', sources: [a, b] }, 'writer')).artifactId;
    const d = (await v.artifacts.write({ kind: 'digest', text: 'both', sources: [s1, s2] }, 'writer')).artifactId;
    const top = (await v.artifacts.write({ kind: 'digest', text: 'top', sources: [d, s1] }, 'writer')).artifactId;

    const result = await v.artifacts.regenerate([s1, s2], { excluding: [a], actor: 'eraser' });
    expect(result.removed).toEqual([]);
    const order = result.regenerated.map((r) => r.artifactId);
    expect(new Set(order).size).toBe(order.length);
    expect(order.slice(0, 2).sort()).toEqual([s1, s2].sort());
    expect(order.slice(2)).toEqual([d, top]);
    expect(result.regenerated.every((r) => r.version === 2)).toBe(true);
    const audit = await queryRows<{ n: string }>(v.db.db, sql`select count(*) as n from audit_log where action = 'artifact.regenerate'`);
    expect(Number(audit[0]!.n)).toBe(4);
    expect((await v.artifacts.get(top)).text).toBe('B public fact.');
  });

  it('an artifact left with no surviving source is erased (410), its key destroyed, and the digest above keeps the rest', async () => {
    const v = tv.app;
    const a = (await v.log.append('user:e-a', { text: 'Only A is here.' }, 'writer')).entryId;
    const c = (await v.log.append('user:e-c', { text: 'C stays.' }, 'writer')).entryId;
    const s = await v.artifacts.write({ kind: 'summary', text: 'Only A is here.', sources: [a] }, 'writer');
    const d = await v.artifacts.write({ kind: 'digest', text: 'Only A is here. C stays.', sources: [s.artifactId, c] }, 'writer');
    const [row] = await queryRows<{ key_id: string }>(v.db.db, sql`select key_id from artifacts where artifact_id = ${s.artifactId}`);
    expect(v.vectors.index.has(s.artifactId)).toBe(true);

    const result = await v.artifacts.regenerate([s.artifactId], { excluding: [a], actor: 'eraser' });
    expect(result).toEqual({ regenerated: [{ artifactId: d.artifactId, version: 2 }], removed: [s.artifactId] });
    await expect(v.artifacts.get(s.artifactId)).rejects.toMatchObject({ code: 'artifact_erased' });
    expect((await v.backups.awaitDurable([row!.key_id], 30_000)).pending).toEqual([]);
    expect(await v.keys.validity([row!.key_id])).toEqual({ [row!.key_id]: 'destroyed' });
    expect(v.vectors.index.has(s.artifactId)).toBe(false);
    expect(await v.objects.head(objectName(s.artifactId, 1))).toBeUndefined();
    const d2 = await v.artifacts.get(d.artifactId);
    expect(d2.text).toBe('C stays.');
    expect(d2.sources).toEqual([c]);
  });

  it('after a subject key is destroyed, regenerating what touches the subject drops its now unreadable entries without being told', async () => {
    const v = tv.app;
    const x = await v.log.append('user:f-x', { text: 'X secret meeting at noon.' }, 'writer');
    const y = await v.log.append('user:f-y', { text: 'Y likes jazz.' }, 'writer');
    const s = await v.artifacts.write({ kind: 'summary', text: 'X secret meeting at noon. Y likes jazz.', sources: [x.entryId, y.entryId] }, 'writer');
    const before = (await v.search.search('secret meeting at noon', 3, { subjects: ['user:f-x', 'user:f-y'] })).hits;
    expect(before.some((h) => h.id === s.artifactId && h.text.includes('secret meeting'))).toBe(true);

    await v.keys.destroyKey(x.keyId, { reason: 'erasure', actor: 'eraser' });
    const touching = await v.artifacts.touching('user:f-x');
    expect(touching).toEqual([{ artifactId: s.artifactId, depth: 1 }]);
    const result = await v.artifacts.regenerate(
      touching.map((t) => t.artifactId),
      { actor: 'eraser' },
    );
    expect(result.regenerated).toEqual([{ artifactId: s.artifactId, version: 2 }]);
    expect((await v.artifacts.get(s.artifactId)).text).toBe('Y likes jazz.');
    // the index holds the regenerated vector: the old text is not served
    const after = (await v.search.search('secret meeting at noon', 5, { allSubjects: true })).hits;
    expect(after.some((h) => h.text.includes('secret meeting'))).toBe(false);
  });

  it('refuses unknown artifact ids and ids that are not artifact ids', async () => {
    await expect(tv.app.artifacts.regenerate(['art_AAAAAAAAAAAAAAAAAAAAAA'], { actor: 'eraser' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(tv.app.artifacts.regenerate(['entry_AAAAAAAAAAAAAAAAAAAAAA'], { actor: 'eraser' })).rejects.toMatchObject({ code: 'validation_failed' });
  });
});

/** The episodic log through the service, on PostgreSQL and a real (versioned) MinIO. */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { Client } from 'minio';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { isLetheError } from '../../src/errors.js';
import { openEntry } from '../../src/log/frame.js';
import { decodeSegment } from '../../src/log/segment.js';
import { openTestApp, type TestApp } from '../support/vault.js';

const SUBJECTS = ['user:alice', 'user:bob', 'user:carol', 'user:dave'];

describe('the episodic log on MinIO', () => {
  let t: TestApp;
  const bucket = `lethe-log-${randomBytes(4).toString('hex')}`;
  const written = new Map<string, Array<{ entryId: string; text: string; seq: number; keyId: string }>>();

  beforeAll(async () => {
    const minio = inject('minio');
    t = await openTestApp({
      extraEnv: { S3_ENDPOINT: minio.endpoint, S3_ACCESS_KEY: minio.accessKey, S3_SECRET_KEY: minio.secretKey, S3_BUCKET: bucket },
    });
    for (let round = 0; round < 5; round++) {
      for (const s of SUBJECTS) {
        const text = `${s} private note ${round}: ${randomBytes(8).toString('hex')}`;
        const res = await t.call('POST', `/v1/subjects/${s}/entries`, { body: { text, kind: 'note', metadata: { round } } });
        expect(res.status).toBe(201);
        const body = (await res.json()) as { entryId: string; keyId: string; seq: number };
        written.set(s, [...(written.get(s) ?? []), { ...body, text }]);
      }
    }
  });
  afterAll(async () => {
    await t?.close();
  });

  it('appends are numbered per subject and read back in append order, byte for byte', async () => {
    for (const s of SUBJECTS) {
      const res = await t.call('GET', `/v1/subjects/${s}/entries`);
      expect(res.status).toBe(200);
      const { entries } = (await res.json()) as { entries: Array<{ entryId: string; seq: number; text: string; kind: string; metadata: unknown }> };
      expect(entries.map((e) => e.text)).toEqual(written.get(s)!.map((w) => w.text));
      expect(entries.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
      expect(entries[2]).toMatchObject({ kind: 'note', metadata: { round: 2 } });
      const one = await t.call('GET', `/v1/entries/${written.get(s)![3]!.entryId}`);
      expect(((await one.json()) as { text: string }).text).toBe(written.get(s)![3]!.text);
    }
  });

  it('neither the database nor the bucket holds any entry text', async () => {
    const [dump] = await queryRows<{ t: string }>(
      t.app.db.db,
      sql`select string_agg(x::text, '|') as t from (
            select row_to_json(e)::text as x from log_entries e
            union all select row_to_json(a)::text from audit_log a) y`,
    );
    const objects: Buffer[] = [];
    for await (const o of t.app.objects.list('log/')) objects.push(Buffer.from(await t.app.objects.get(o.key)));
    expect(objects.length).toBe(SUBJECTS.length * 5);
    for (const w of [...written.values()].flat()) {
      const marker = w.text.slice(-16);
      expect(dump?.t ?? '').not.toContain(marker);
      expect(objects.some((o) => o.includes(Buffer.from(marker)))).toBe(false);
    }
  });

  it('destroying one key makes its frames unreadable everywhere — current objects, noncurrent versions, a raw copy taken before — and leaves the others intact', async () => {
    // a raw copy of the whole bucket before the destruction
    const rawCopy = new Map<string, Uint8Array>();
    for await (const o of t.app.objects.list('log/')) rawCopy.set(o.key, await t.app.objects.get(o.key));
    const [aliceRow] = await queryRows<{ segment: string }>(
      t.app.db.db,
      sql`select segment from log_entries where key_id = ${written.get('user:alice')![0]!.keyId} limit 1`,
    );
    // make one of alice's segments a noncurrent version
    await t.app.objects.delete(aliceRow!.segment);

    const aliceKey = written.get('user:alice')![0]!.keyId;
    await t.app.keys.destroyKey(aliceKey, { reason: 'log test', actor: 'admin' });

    expect((await t.call('GET', '/v1/subjects/user:alice/entries')).status).toBe(410);
    const entry = await t.call('GET', `/v1/entries/${written.get('user:alice')![1]!.entryId}`);
    expect(entry.status).toBe(410);
    expect(((await entry.json()) as { code: string }).code).toBe('key_destroyed');

    // every DEK lethe still holds
    const live = await queryRows<{ key_id: string }>(t.app.db.db, sql`select key_id from subject_keys`);
    const deks = await Promise.all(live.map(async (r) => ({ keyId: r.key_id, dek: (await t.app.keys.dekFor(r.key_id)).dek })));
    expect(await t.app.keys.dekFor(aliceKey).catch((e: unknown) => isLetheError(e, 'key_destroyed'))).toBe(true);

    const minio = inject('minio');
    const url = new URL(minio.endpoint);
    const client = new Client({ endPoint: url.hostname, port: Number(url.port), useSSL: false, accessKey: minio.accessKey, secretKey: minio.secretKey });
    const versions = await new Promise<Array<{ name: string; versionId: string; isLatest: boolean }>>((resolve, reject) => {
      const out: Array<{ name: string; versionId: string; isLatest: boolean }> = [];
      const stream = client.listObjects(bucket, aliceRow!.segment, true, { IncludeVersion: true });
      stream.on('data', (v) => out.push(v as never));
      stream.on('error', reject);
      stream.on('end', () => resolve(out));
    });
    const noncurrent = versions.find((v) => !v.isLatest && v.versionId);
    expect(noncurrent).toBeDefined();
    const chunks: Buffer[] = [];
    for await (const c of await client.getObject(bucket, aliceRow!.segment, { versionId: noncurrent!.versionId })) chunks.push(c as Buffer);
    const sources: Array<[string, Uint8Array]> = [...rawCopy, [`${aliceRow!.segment}@noncurrent`, new Uint8Array(Buffer.concat(chunks))]];

    const rows = await queryRows<{ entry_id: string; key_id: string; seq: number; segment: string; wrapped_key: Uint8Array | null }>(
      t.app.db.db,
      sql`select entry_id, key_id, seq, segment, wrapped_key from log_entries`,
    );
    let aliceFrames = 0;
    for (const [name, bytes] of sources) {
      const segmentKey = name.replace('@noncurrent', '');
      for (const row of rows.filter((r) => r.segment === segmentKey)) {
        const [frame] = decodeSegment(bytes);
        const ids = { keyId: row.key_id, entryId: row.entry_id, seq: Number(row.seq) };
        if (row.key_id === aliceKey) {
          aliceFrames += 1;
          for (const { dek } of deks) expect(() => openEntry(dek, ids, row.wrapped_key, frame!.envelope)).toThrow();
        } else {
          const own = deks.find((d) => d.keyId === row.key_id)!;
          const text = openEntry(own.dek, ids, row.wrapped_key, frame!.envelope).text;
          expect([...written.values()].flat().find((w) => w.entryId === row.entry_id)?.text).toBe(text);
        }
      }
    }
    expect(aliceFrames).toBe(6); // five in the raw copy, one noncurrent version
    for (const s of SUBJECTS.filter((x) => x !== 'user:alice')) {
      const res = await t.call('GET', `/v1/subjects/${s}/entries`);
      expect(((await res.json()) as { entries: Array<{ text: string }> }).entries.map((e) => e.text)).toEqual(written.get(s)!.map((w) => w.text));
    }
    // after the erasure alice writes under a new key, from seq 1
    const again = (await (await t.call('POST', '/v1/subjects/user:alice/entries', { body: { text: 'a fresh start' } })).json()) as {
      keyId: string;
      seq: number;
    };
    expect(again.keyId).not.toBe(aliceKey);
    expect(again.seq).toBe(1);
  });

  it('bad input: text over 64 KiB is 413, a bad subject 400, unknown subject or entry 404, and nothing is recorded', async () => {
    const before = await queryRows<{ n: string }>(t.app.db.db, sql`select count(*) as n from log_entries`);
    const big = await t.call('POST', '/v1/subjects/user:bob/entries', { body: { text: 'x'.repeat(64 * 1024 + 1) } });
    expect(big.status).toBe(413);
    expect(((await big.json()) as { code: string }).code).toBe('payload_too_large');
    expect((await t.call('POST', '/v1/subjects/bad%20id/entries', { body: { text: 'x' } })).status).toBe(400);
    expect((await t.call('POST', '/v1/subjects/user:bob/entries', { body: { kind: 'no text' } })).status).toBe(400);
    expect((await t.call('GET', '/v1/subjects/user:nobody/entries')).status).toBe(404);
    expect((await t.call('GET', '/v1/entries/entry_nope')).status).toBe(400);
    expect((await t.call('GET', `/v1/entries/entry_${'Z'.repeat(22)}`)).status).toBe(404);
    const after = await queryRows<{ n: string }>(t.app.db.db, sql`select count(*) as n from log_entries`);
    expect(after[0]!.n).toBe(before[0]!.n);
  });
});

describe('re-keying a subject', () => {
  let t: TestApp;
  beforeAll(async () => {
    const minio = inject('minio');
    t = await openTestApp({
      extraEnv: {
        S3_ENDPOINT: minio.endpoint,
        S3_ACCESS_KEY: minio.accessKey,
        S3_SECRET_KEY: minio.secretKey,
        S3_BUCKET: `lethe-rekey-${randomBytes(4).toString('hex')}`,
      },
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('rewrites the surviving entries under a new key, erases the excluded ones for real, and destroys the old key', async () => {
    const ids: string[] = [];
    for (let i = 1; i <= 5; i++) ids.push((await t.app.log.append('user:rekey', { text: `entry ${i}` }, 'writer')).entryId);
    const before = await t.app.log.list('user:rekey');
    const oldKeyId = (await t.app.keys.findKey('user:rekey'))!.keyId;
    const { dek: oldDek } = await t.app.keys.dekFor(oldKeyId);
    const rawCopy = new Map<string, Uint8Array>();
    for await (const o of t.app.objects.list('log/')) rawCopy.set(o.key, await t.app.objects.get(o.key));

    const result = await t.app.log.rekeySubject('user:rekey', { exclude: [ids[1]!, ids[3]!], actor: 'eraser' });
    expect(result).toMatchObject({ oldKeyId, rewritten: 3, removed: 2 });
    expect(result.newKeyId).not.toBe(oldKeyId);

    const after = await t.app.log.list('user:rekey');
    expect(after.map((e) => [e.entryId, e.seq, e.text])).toEqual(
      before.filter((e) => e.entryId !== ids[1] && e.entryId !== ids[3]).map((e) => [e.entryId, e.seq, e.text]),
    );
    expect((await t.app.backups.awaitDurable([oldKeyId], 30_000)).pending).toEqual([]);
    expect(await t.app.keys.validity([oldKeyId, result.newKeyId])).toEqual({ [oldKeyId]: 'destroyed', [result.newKeyId]: 'active' });
    // the excluded entries stay indexed under the destroyed key: they answer key_destroyed
    await expect(t.app.log.get(ids[1]!)).rejects.toMatchObject({ code: 'key_destroyed' });
    // the excluded entries' frames, in the copy taken before, open under no key lethe holds: their
    // record keys were wrapped under the old key alone, and the new key unwraps none of them
    const { dek: newDek } = await t.app.keys.dekFor(result.newKeyId);
    const wraps = await queryRows<{ entry_id: string; wrapped_key: Uint8Array }>(
      t.app.db.db,
      sql`select entry_id, wrapped_key from log_entries where entry_id in (${ids[1]!}, ${ids[3]!})`,
    );
    expect(wraps).toHaveLength(2);
    let tried = 0;
    for (const bytes of rawCopy.values()) {
      for (const f of decodeSegment(bytes)) {
        for (const [i, id] of [
          [2, ids[1]!],
          [4, ids[3]!],
        ] as const) {
          const wrapped = wraps.find((w) => w.entry_id === id)!.wrapped_key;
          expect(() => openEntry(newDek, { keyId: oldKeyId, entryId: id, seq: i }, wrapped, f.envelope)).toThrow();
          expect(() => openEntry(newDek, { keyId: result.newKeyId, entryId: id, seq: i }, wrapped, f.envelope)).toThrow();
          tried += 1;
        }
      }
    }
    expect(tried).toBeGreaterThan(0);
    oldDek.fill(0);
    // appends continue under the new key after the highest sequence number
    expect(await t.app.log.append('user:rekey', { text: 'after' }, 'writer')).toMatchObject({ keyId: result.newKeyId, seq: 6 });
  });

  it("refuses ids that are not the subject's entries, and leaves the key active", async () => {
    await t.app.log.append('user:rekey2', { text: 'keep me' }, 'writer');
    const keyId = (await t.app.keys.findKey('user:rekey2'))!.keyId;
    await expect(t.app.log.rekeySubject('user:rekey2', { exclude: ['entry_not_mine'], actor: 'eraser' })).rejects.toMatchObject({
      code: 'validation_failed',
    });
    expect(await t.app.keys.findKey('user:rekey2')).toEqual({ keyId, state: 'active' });
    expect((await t.app.log.list('user:rekey2')).map((e) => e.text)).toEqual(['keep me']);
  });
});

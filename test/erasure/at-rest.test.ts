/**
 * After a class B erasure and a redaction of another subject's note that paraphrased
 * the subject, nothing of the subject is in a plain byte at rest — not in MinIO's data
 * directory (every version of every object, live and backup buckets), not in a
 * pg_dump (raw or hex), not in the erasure's own rows — and no API read hands any of
 * it back. And a consolidation job that read before the erasure cannot write after it.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { allVersions, encodings, getVersion, minioClient, minioEnv } from '../backups/support.js';
import { filesContaining } from '../support/files.js';
import { expectProblem, ok } from '../support/http.js';
import { openTestApp, type TestApp, tempDir } from '../support/vault.js';
import { awaitErasure, type ErasureReply, searchTexts, tag } from './fixtures.js';

function pgDump(url: string): Buffer {
  const dir = tempDir('lethe-dump-');
  try {
    const file = path.join(dir, 'dump.sql');
    execFileSync('pg_dump', ['--format=plain', `--file=${file}`, url]);
    return readFileSync(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('an erased subject at rest and through the API', () => {
  let t: TestApp;
  let minio: ReturnType<typeof minioEnv>;

  beforeAll(async () => {
    minio = minioEnv();
    t = await openTestApp({ extraEnv: { ...minio.env, LETHE_ERASURE_POLL_MS: '100', LETHE_LEASE_TTL_SECONDS: '1' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  const append = async (subject: string, text: string) =>
    (await ok<{ entryId: string }>(t.call('POST', `/v1/subjects/${subject}/entries`, { body: { text, kind: 'note' } }), 201)).entryId;
  const write = async (kind: string, text: string, sources: string[]) =>
    (await ok<{ artifactId: string }>(t.call('POST', '/v1/artifacts', { body: { kind, text, sources } }), 201)).artifactId;

  /** The erasure's row and its transitions, every column as bytes (bytea as is, anything else as JSON). */
  const erasureRows = async (erasureId: string) => {
    const rows = await queryRows<Record<string, unknown>>(t.app.db.db, sql`select * from erasures where erasure_id = ${erasureId}`);
    const transitions = await queryRows<Record<string, unknown>>(t.app.db.db, sql`select * from erasure_transitions where erasure_id = ${erasureId}`);
    expect(rows).toHaveLength(1);
    expect(transitions.length).toBeGreaterThan(9);
    const bytes = Buffer.concat(
      [...rows, ...transitions].flatMap((r) => Object.values(r).map((v) => (v instanceof Uint8Array ? Buffer.from(v) : Buffer.from(JSON.stringify(v) ?? '')))),
    );
    return { rows, bytes };
  };
  const expectNoSecrets = (haystack: Buffer, where: string, secrets: Array<[string, string]>) => {
    for (const [name, secret] of secrets) {
      for (const [form, bytes] of encodings(Buffer.from(secret))) expect(haystack.includes(bytes), `${name} (${form}) in ${where}`).toBe(false);
    }
  };

  it('after a class B erasure and a paraphrase redaction, no canary, subject id, attribute or reason is in any plain byte or API answer', {
    timeout: 120_000,
  }, async () => {
    const n = tag();
    const A = `user:rest-a-${n}`;
    const B = `user:rest-b-${n}`;
    const birdCanary = `ACANARY${tag(6)}`;
    const doorCanary = `DOORCODE${tag(6)}`;
    const bCanary = `BCANARY${tag(6)}`;
    const attribute = `Alice Quennell${tag(4)}`;
    const reasonCanary = `REASON${tag(6)}`;
    const secrets: Array<[string, string]> = [
      ['bird canary', birdCanary],
      ['door canary', doorCanary],
      ['subject id', A],
      ['public attribute', attribute],
      ['reason', reasonCanary],
    ];
    const street = `${100 + Math.floor(Math.random() * 800)} Rue des Lilas`;

    await append(A, `My home address is ${street}, Lyon; I moved there in March. The door code is ${doorCanary}.`);
    const a2 = await append(A, `Alice loves birdwatching in the marshes ${birdCanary}.`);
    const note = await append(
      B,
      `Dropped the parcel at Alice's place, ${street.toLowerCase()} in Lyon, she moved there in March. The door code is ${doorCanary}.`,
    );
    const keep = await append(B, `Bob ordered new running shoes ${bCanary}.`);
    const summary = await write('summary', `Interests: birdwatching ${birdCanary}; running shoes ${bCanary}.`, [a2, keep]);
    const digest = await write('digest', `Digest: birdwatching ${birdCanary}; running shoes ${bCanary}; parcel left, door code ${doorCanary}.`, [
      summary,
      note,
    ]);
    // a backup before the erasure: its objects and database export are at rest too
    await ok(t.call('POST', '/v1/backups', { role: 'backup' }), 201);

    const { erasureId } = await ok<{ erasureId: string }>(
      t.call('POST', '/v1/erasures', {
        role: 'eraser',
        body: { subject: A, legalBasis: 'gdpr-art17', reason: `asked by letter ${reasonCanary}`, publicAttributes: [attribute] },
      }),
      202,
    );
    const first = await awaitErasure(t.call, erasureId);
    expect(first.class).toBe('B');
    expect(first.status, JSON.stringify(first.probe)).toBe('incomplete');
    expect(first.probe.matches.map((m) => m.id)).toContain(note);
    // while a match remains, the request and the probe fingerprints stay sealed in the row
    const sealed = await erasureRows(erasureId);
    expect(sealed.rows[0]!.sealed_request).toBeInstanceOf(Uint8Array);
    expect(sealed.rows[0]!.sealed_fingerprints).toBeInstanceOf(Uint8Array);
    expectNoSecrets(sealed.bytes, 'the erasure rows while incomplete', secrets);
    await ok(t.call('POST', `/v1/erasures/${erasureId}/redactions`, { role: 'eraser', body: { ids: [note] } }), 202);
    const done = await awaitErasure(t.call, erasureId);
    expect(done.status, JSON.stringify(done.probe)).toBe('completed');
    expect(done.probe.matches).toEqual([]);

    const canaries = [birdCanary, doorCanary];

    // ---- every API read
    const answers: Array<[string, string]> = [];
    const read = async (what: string, res: Promise<Response>, status: number) => {
      const r = await res;
      const text = await r.text();
      expect(r.status, `${what}: ${text.slice(0, 300)}`).toBe(status);
      answers.push([what, text]);
      return text;
    };
    const bEntries = JSON.parse(await read('GET B entries', t.call('GET', `/v1/subjects/${B}/entries`), 200)) as {
      entries: Array<{ entryId: string; text: string }>;
    };
    expect(bEntries.entries.map((e) => e.entryId)).toEqual([keep]);
    expect(bEntries.entries[0]!.text).toContain(bCanary);
    await expectProblem(t.call('GET', `/v1/entries/${note}`), 410, 'key_destroyed');
    await expectProblem(t.call('GET', `/v1/subjects/${A}/entries`), 410, 'subject_erased');
    const s2 = JSON.parse(await read('GET summary', t.call('GET', `/v1/artifacts/${summary}`), 200)) as { text: string; version: number };
    const d2 = JSON.parse(await read('GET digest', t.call('GET', `/v1/artifacts/${digest}`), 200)) as { text: string; version: number };
    expect(s2.text).toContain(bCanary);
    expect(d2.text).toContain(bCanary);
    answers.push(['search', await searchTexts(t.call, [...canaries, attribute, street, 'birdwatching marshes', 'door code', 'parcel Lyon moved March'])]);
    await read('GET erasure', t.call('GET', `/v1/erasures/${erasureId}`, { role: 'eraser' }), 200);
    await read('GET report', t.call('GET', `/v1/erasures/${erasureId}/report`, { role: 'eraser' }), 200);
    await read('GET events', t.call('GET', `/v1/erasures/${erasureId}/events`, { role: 'eraser' }), 200);
    expect(answers.find(([w]) => w === 'search')![1]).toContain(keep);
    for (const [what, text] of answers) {
      for (const [name, secret] of secrets) expect(text.includes(secret), `${name} in ${what}`).toBe(false);
    }

    // ---- the erasure's own rows: state, certificate, transitions (the sealed columns are gone with their key)
    const after = await erasureRows(erasureId);
    expect(after.rows[0]).toMatchObject({ status: 'completed', sealed_request: null, sealed_fingerprints: null, seal_key_id: null });
    expectNoSecrets(after.bytes, 'the erasure rows', secrets);

    // ---- a pg_dump of the whole database, raw and hex
    const dump = pgDump(t.db!.url);
    expect(dump.includes(Buffer.from(erasureId)), 'the dump holds the erasure rows').toBe(true);
    expectNoSecrets(dump, 'pg_dump', secrets);

    // ---- every version of every object in the live and backup buckets, through S3
    const client = minioClient();
    let objects = 0;
    for (const bucket of [minio.bucket, minio.backupBucket]) {
      for (const v of await allVersions(client, bucket, '')) {
        const bytes = Buffer.from(await getVersion(client, bucket, v.name, v.versionId));
        objects++;
        for (const [name, secret] of secrets) expect(bytes.includes(Buffer.from(secret)), `${name} in ${bucket}/${v.name}@${v.versionId}`).toBe(false);
      }
    }
    expect(objects).toBeGreaterThan(10);

    // ---- and on disk: MinIO's data directory (all buckets, all versions) and the vault's data dir
    const minioDir = inject('minio').dataDir;
    for (const dir of [minioDir, t.dataDir]) {
      for (const [name, secret] of secrets) {
        const found = filesContaining(dir, secret);
        expect(found.filesRead).toBeGreaterThan(0);
        expect(found.hits, `${name} under ${dir}`).toEqual([]);
      }
    }
    // control: the scan does see plain bytes that MinIO stores (it neither compresses nor encrypts them)
    const marker = `PLAIN-CONTROL-${tag(6)}`;
    await client.putObject(minio.bucket, 'control/plain.txt', Buffer.from(`control ${marker} control`));
    expect(filesContaining(minioDir, marker).hits.length).toBeGreaterThan(0);
  });

  it("a consolidation job that read A and B before A's erasure cannot write a summary after it, even citing only B", async () => {
    const n = tag();
    const A = `user:job-a-${n}`;
    const B = `user:job-b-${n}`;
    const aCanary = `JOBA${tag(6)}`;
    await append(A, `Ana's allergy is to ${aCanary} pollen.`);
    const b1 = await append(B, `Ben switched teams in May ${tag(4)}.`);
    // the job reads both logs, and a search that returns both
    const readA = await ok<{ readFence: string }>(t.call('GET', `/v1/subjects/${A}/entries`), 200);
    const readB = await ok<{ readFence: string }>(t.call('GET', `/v1/subjects/${B}/entries`), 200);
    const searched = await ok<{ hits: Array<{ id: string }>; readFence: string }>(
      t.call('POST', '/v1/search', { body: { query: `${aCanary} allergy Ben switched teams`, k: 10, subjects: [A, B] } }),
      200,
    );
    expect(searched.hits.length).toBeGreaterThanOrEqual(2);

    const { erasureId } = await ok<{ erasureId: string }>(t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject: A } }), 202);
    const view: ErasureReply = await awaitErasure(t.call, erasureId);
    expect(view.status).toBe('completed');

    const summary = { kind: 'summary', text: 'Ben changed teams this spring.', sources: [b1] };
    await expectProblem(t.call('POST', '/v1/artifacts', { body: { ...summary, readFences: [readA.readFence, readB.readFence] } }), 409, 'source_erased');
    await expectProblem(t.call('POST', '/v1/artifacts', { body: { ...summary, readFence: readA.readFence } }), 409, 'source_erased');
    await expectProblem(t.call('POST', '/v1/artifacts', { body: { ...summary, readFence: searched.readFence } }), 409, 'source_erased');
    // what the job read of B alone still holds; a fresh read of B is fine too
    await ok(t.call('POST', '/v1/artifacts', { body: { ...summary, readFence: readB.readFence } }), 201);
    const fresh = await ok<{ readFence: string }>(t.call('GET', `/v1/subjects/${B}/entries`), 200);
    await ok(t.call('POST', '/v1/artifacts', { body: { ...summary, readFence: fresh.readFence } }), 201);
  });
});

/**
 * Forgetting one memory (records-scope erasures), on PostgreSQL and MinIO through the
 * HTTP app: DELETE /v1/entries/{id} and POST /v1/erasures with entryIds. The entry is
 * unreadable from the answer on (GET, lists, search); the subject is re-keyed without it
 * — the survivors' record keys re-wrapped, no frame rewritten — and keeps writing; the
 * artifacts citing it are regenerated without it; its vectors leave search; the old key
 * is destroyed and durable; the certificate names the entries and verifies; the forgotten
 * text is in no plain byte at rest; and what is refused is refused with a clear problem.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { verifyCertificate } from '../../src/crypto/certificate.js';
import { queryRows } from '../../src/db/client.js';
import { openEntry } from '../../src/log/frame.js';
import { frameAt } from '../../src/log/segment.js';
import { minioEnv } from '../backups/support.js';
import { filesContaining } from '../support/files.js';
import { expectProblem, ok } from '../support/http.js';
import { openTestApp, type TestApp } from '../support/vault.js';
import { awaitErasure, tag } from './fixtures.js';

interface Hit {
  id: string;
  text: string;
  subject: string | null;
}

describe('forgetting one memory', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await openTestApp({ extraEnv: { ...minioEnv().env, LETHE_ERASURE_POLL_MS: '100' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  const append = async (subject: string, text: string, metadata?: Record<string, unknown>) =>
    (
      await ok<{ entryId: string; keyId: string }>(
        t.call('POST', `/v1/subjects/${subject}/entries`, { body: { text, kind: 'memory', ...(metadata ? { metadata } : {}) } }),
        201,
      )
    ).entryId;
  const entries = async (subject: string) =>
    (await ok<{ entries: Array<{ entryId: string; text: string }> }>(t.call('GET', `/v1/subjects/${subject}/entries?limit=1000`), 200)).entries;
  const search = async (subject: string, query: string) =>
    (await ok<{ hits: Hit[] }>(t.call('POST', '/v1/search', { body: { query, k: 20, subject } }), 200)).hits;
  const places = async (ids: string[]) =>
    queryRows<{ entry_id: string; key_id: string; segment: string; frame_offset: number; frame_length: number }>(
      t.app.db.db,
      sql`select entry_id, key_id, segment, frame_offset, frame_length from log_entries where entry_id in (select json_array_elements_text(${JSON.stringify(ids)}::json)) order by seq`,
    );

  it('DELETE /v1/entries/{id}: unreadable at once, re-keyed without it (no frame rewritten), cascaded, certified; the subject goes on', {
    timeout: 120_000,
  }, async () => {
    const n = tag();
    const A = `user:forget-a-${n}`;
    const B = `user:forget-b-${n}`;
    const canary = `PINCODE${tag(6)}`;
    const kept = [
      await append(A, `Alice prefers window seats on long flights ${tag(3)}.`),
      await append(A, `Alice is training for the Lyon half marathon ${tag(3)}.`),
    ];
    const secret = await append(A, `Alice's bank card PIN is ${canary}, she keeps forgetting it.`);
    kept.push(await append(A, `Alice drinks her coffee black ${tag(3)}.`));
    const bob = await append(B, `Bob collects vintage radios ${tag(3)}.`);
    const summary = (
      await ok<{ artifactId: string }>(
        t.call('POST', '/v1/artifacts', {
          body: { kind: 'summary', text: `Alice: window seats; PIN ${canary}; black coffee.`, sources: [kept[0]!, secret, kept[2]!] },
        }),
        201,
      )
    ).artifactId;
    const shared = (
      await ok<{ artifactId: string }>(
        t.call('POST', '/v1/artifacts', { body: { kind: 'digest', text: `Team notes: PIN ${canary}; vintage radios.`, sources: [secret, bob] } }),
        201,
      )
    ).artifactId;
    expect((await search(A, `bank card PIN ${canary}`)).map((h) => h.id)).toContain(secret);
    const before = await places(kept);
    const oldKey = before[0]!.key_id;

    const res = await t.call('DELETE', `/v1/entries/${secret}`, { role: 'eraser' });
    expect(res.status).toBe(202);
    const { erasureId } = (await res.json()) as { erasureId: string };
    expect(res.headers.get('location')).toBe(`/v1/erasures/${erasureId}`);
    // unreadable from the answer on: GET, the list and search
    await expectProblem(t.call('GET', `/v1/entries/${secret}`), 410, 'entry_forgotten');
    expect((await entries(A)).map((e) => e.entryId)).toEqual(kept);
    expect((await search(A, `bank card PIN ${canary}`)).map((h) => h.id)).not.toContain(secret);
    // asking again answers the same erasure
    const again = await t.call('DELETE', `/v1/entries/${secret}`, { role: 'eraser' });
    expect(again.status).toBe(200);
    expect(((await again.json()) as { erasureId: string }).erasureId).toBe(erasureId);

    const done = await awaitErasure(t.call, erasureId);
    expect(done.status, JSON.stringify({ probe: done.probe, steps: done.steps })).toBe('completed');
    expect(done).toMatchObject({ scope: 'records', entryIds: [secret], class: 'B' });
    // the certificate names what was forgotten, and verifies against the served key
    const cert = done.certificate!;
    expect(cert.payload).toMatchObject({ scope: 'records', entryIds: [secret], status: 'completed' });
    const { keys } = await ok<{ keys: Array<{ keyId: string; publicKey: string; state: string }> }>(
      t.call('GET', '/v1/certificates/keys', { role: 'none' }),
      200,
    );
    expect(
      verifyCertificate(
        cert,
        keys.map((k) => k.publicKey),
      ).valid,
    ).toBe(true);
    // the residual says the subject lives on and how long old copies stay decryptable
    const wrapped = done.residuals.find((r) => r.tier === 'key-table' && r.kind === 'wrapped-dek')!;
    expect(wrapped.detail).toMatch(/lives on under a new key/);
    expect(wrapped.bound).toMatch(/until epoch \d+ is retired/);

    // re-keyed: the survivors moved to a new key without a byte of their frames rewritten
    const after = await places(kept);
    expect(after.map((p) => p.key_id)).toEqual(kept.map(() => after[0]!.key_id));
    expect(after[0]!.key_id).not.toBe(oldKey);
    expect(after.map(({ segment, frame_offset, frame_length }) => [segment, frame_offset, frame_length])).toEqual(
      before.map(({ segment, frame_offset, frame_length }) => [segment, frame_offset, frame_length]),
    );
    expect(await t.app.keys.validity([oldKey])).toEqual({ [oldKey]: 'destroyed' });
    // the forgotten frame, still in the store, opens under no live key through the record key its row kept
    const [row] = await queryRows<{ segment: string; frame_offset: number; frame_length: number; seq: number; wrapped_key: Uint8Array; key_id: string }>(
      t.app.db.db,
      sql`select segment, frame_offset, frame_length, seq, wrapped_key, key_id from log_entries where entry_id = ${secret}`,
    );
    expect(row!.key_id).toBe(oldKey);
    const frame = frameAt(await t.app.objects.get(row!.segment), { offset: row!.frame_offset, length: row!.frame_length });
    const live = await queryRows<{ key_id: string }>(t.app.db.db, sql`select key_id from subject_keys`);
    for (const { key_id } of live) {
      const { dek } = await t.app.keys.dekFor(key_id);
      for (const keyId of [key_id, oldKey]) expect(() => openEntry(dek, { keyId, entryId: secret, seq: Number(row!.seq) }, row!.wrapped_key, frame)).toThrow();
    }

    // the survivors read back whole; the subject keeps writing under its new key
    expect((await entries(A)).map((e) => e.entryId)).toEqual(kept);
    const later = await append(A, `Alice booked a trip to Porto ${tag(3)}.`);
    expect((await entries(A)).map((e) => e.entryId)).toEqual([...kept, later]);
    // cascade: both artifacts that cited it were regenerated without it; Bob's part of the shared one survives
    const s = await ok<{ text: string; version: number }>(t.call('GET', `/v1/artifacts/${summary}`), 200);
    const d = await ok<{ text: string; version: number }>(t.call('GET', `/v1/artifacts/${shared}`), 200);
    expect(s.version).toBeGreaterThan(1);
    expect(d.version).toBeGreaterThan(1);
    expect(s.text).not.toContain(canary);
    expect(d.text).not.toContain(canary);
    expect(d.text).toMatch(/vintage radios/);
    // nothing of it in search, by any subject, with admin authority
    const everywhere = await ok<{ hits: Hit[] }>(
      t.call('POST', '/v1/search', { role: 'admin', body: { query: `bank card PIN ${canary}`, k: 50, allSubjects: true } }),
      200,
    );
    for (const h of everywhere.hits) expect(h.text).not.toContain(canary);
    expect(everywhere.hits.map((h) => h.id)).not.toContain(secret);
    // and in no plain byte at rest (MinIO's data directory, the vault's data directory)
    for (const dir of [inject('minio').dataDir, t.dataDir]) expect(filesContaining(dir, canary).hits, dir).toEqual([]);
  });

  it('POST /v1/erasures with entryIds forgets several at once; overlapping forgets of one subject both complete', { timeout: 120_000 }, async () => {
    const A = `user:forget-many-${tag()}`;
    const ids: string[] = [];
    const memories = [
      'Prefers tea over coffee in the mornings',
      'Has a cat named Pixel who hates the vacuum cleaner',
      'Works night shifts at the regional hospital pharmacy',
      'Learning Portuguese before a sabbatical in Lisbon',
      'Allergic to penicillin since childhood',
      'Plays bass guitar in a weekend jazz trio',
    ];
    for (const m of memories) ids.push(await append(A, `${m} ${tag(4)}.`));
    const first = await ok<{ erasureId: string }>(
      t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject: A, entryIds: [ids[1], ids[2]], reason: 'the user deleted them' } }),
      202,
    );
    const second = await ok<{ erasureId: string }>(t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject: A, entryIds: [ids[4]] } }), 202);
    expect(second.erasureId).not.toBe(first.erasureId);
    for (const id of [first.erasureId, second.erasureId]) expect((await awaitErasure(t.call, id)).status).toBe('completed');
    expect((await entries(A)).map((e) => e.entryId)).toEqual([ids[0], ids[3], ids[5]]);
    for (const id of [ids[1], ids[2], ids[4]]) await expectProblem(t.call('GET', `/v1/entries/${id}`), 410, 'entry_forgotten');
    // one key live for the subject, two destroyed on the way
    expect(new Set((await places([ids[0]!, ids[3]!, ids[5]!])).map((p) => p.key_id)).size).toBe(1);
  });

  it('refuses with a clear problem, and marks nothing: unknown, foreign, malformed, mixed with publicAttributes, wrong role, already erased', async () => {
    const A = `user:forget-bad-${tag()}`;
    const B = `user:forget-bad-b-${tag()}`;
    const a = await append(A, `something about ${tag(4)}`);
    const b = await append(B, `something else about ${tag(4)}`);
    await expectProblem(t.call('DELETE', `/v1/entries/entry_${'Q'.repeat(22)}`, { role: 'eraser' }), 404, 'not_found');
    await expectProblem(t.call('DELETE', '/v1/entries/entry_nope', { role: 'eraser' }), 400, 'validation_failed');
    // a writer forgets only what its own token wrote (supersede.test.ts): the second writer did not write it
    await expectProblem(t.call('DELETE', `/v1/entries/${a}`, { role: 'writer', second: true }), 403, 'forbidden');
    await expectProblem(t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject: A, entryIds: [b] } }), 404, 'not_found');
    await expectProblem(t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject: A, entryIds: [] } }), 400, 'validation_failed');
    await expectProblem(t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject: A, entryIds: ['entry_x'] } }), 400, 'validation_failed');
    await expectProblem(
      t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject: A, entryIds: [a], publicAttributes: ['Alice'] } }),
      400,
      'validation_failed',
    );
    const marked = await queryRows<{ n: string }>(
      t.app.db.db,
      sql`select count(*) as n from log_entries where forgotten_by is not null and entry_id in (${a}, ${b})`,
    );
    expect(Number(marked[0]!.n)).toBe(0);
    // once the whole subject is erased, its entries cannot be forgotten again
    const { erasureId } = await ok<{ erasureId: string }>(t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject: B } }), 202);
    await expectProblem(t.call('DELETE', `/v1/entries/${b}`, { role: 'eraser' }), 409, 'erasure_in_progress');
    expect((await awaitErasure(t.call, erasureId)).status).toBe('completed');
    await expectProblem(t.call('DELETE', `/v1/entries/${b}`, { role: 'eraser' }), 410, 'key_destroyed');
  });
});

/**
 * Exactly-once service appends (`Idempotency-Key`), on PostgreSQL and a real MinIO:
 * a retry answers the first result and stores nothing, a reused key with another body
 * is refused, concurrent duplicates store one entry, the digest is keyed (never the
 * body), and keys expire after the window.
 */
import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { purgeExpired } from '../../src/log/idempotency.js';
import { expectProblem, ok } from '../support/http.js';
import { minioEnv, openTestApp, type TestApp } from '../support/vault.js';

type Appended = { entryId: string; keyId: string; seq: number };

describe('idempotent service appends', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await openTestApp({ extraEnv: minioEnv('lethe-idem') });
  });
  afterAll(async () => {
    await t?.close();
  });

  const tag = () => randomBytes(5).toString('hex');
  const append = (subject: string, rawBody: string, key?: string) =>
    t.call('POST', `/v1/subjects/${subject}/entries`, { rawBody, ...(key ? { headers: { 'idempotency-key': key } } : {}) });
  const entriesOf = async (subject: string) =>
    (await ok<{ entries: Array<{ entryId: string; text: string }> }>(t.call('GET', `/v1/subjects/${subject}/entries`), 200)).entries;
  const segmentsStored = async () => {
    let n = 0;
    for await (const _ of t.app.objects.list('log/')) n++;
    return n;
  };

  it('a retry with the same key and body answers the first result (200, Idempotent-Replayed) and stores nothing', async () => {
    const subject = `user:idem-${tag()}`;
    const body = JSON.stringify({ text: `remember the ${tag()} umbrella`, kind: 'note', metadata: { n: 1 } });
    const first = await append(subject, body, 'retry-1');
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const stored = await ok<Appended>(first, 201);
    const segments = await segmentsStored();
    for (let i = 0; i < 3; i++) {
      const again = await append(subject, body, 'retry-1');
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await ok<Appended>(again, 200)).toEqual(stored);
    }
    const entries = await entriesOf(subject);
    expect(entries.map((e) => e.entryId)).toEqual([stored.entryId]);
    expect(await segmentsStored()).toBe(segments);
    // the same key under another subject is another append
    const other = await ok<Appended>(append(`user:idem-other-${tag()}`, body, 'retry-1'), 201);
    expect(other.entryId).not.toBe(stored.entryId);
  });

  it('the same key with another body is 409 idempotency_key_reused, and nothing is stored', async () => {
    const subject = `user:idem-${tag()}`;
    const stored = await ok<Appended>(append(subject, JSON.stringify({ text: 'first body' }), 'k:reused'), 201);
    const { detail } = await expectProblem(append(subject, JSON.stringify({ text: 'second body' }), 'k:reused'), 409, 'idempotency_key_reused');
    expect(detail).not.toContain('second body');
    // a different serialisation of the same JSON is another body as received
    await expectProblem(append(subject, JSON.stringify({ text: 'first body' }, null, 1), 'k:reused'), 409, 'idempotency_key_reused');
    expect((await entriesOf(subject)).map((e) => e.entryId)).toEqual([stored.entryId]);
  });

  it('ten concurrent requests with one key store one entry and all answer it', async () => {
    const subject = `user:idem-${tag()}`;
    const body = JSON.stringify({ text: `concurrent ${tag()}` });
    const segments = await segmentsStored();
    const replies = await Promise.all(Array.from({ length: 10 }, () => append(subject, body, 'k.parallel')));
    const statuses = replies.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
    const answers = await Promise.all(replies.map((r) => r.json() as Promise<Appended>));
    expect(new Set(answers.map((a) => a.entryId)).size).toBe(1);
    const entries = await entriesOf(subject);
    expect(entries.map((e) => e.entryId)).toEqual([answers[0]!.entryId]);
    // the losers' frames were removed again, or left unreadable beside the winner's in its segment: one new segment
    expect(await segmentsStored()).toBe(segments + 1);
    const [row] = await queryRows<{ n: string }>(t.app.db.db, sql`select count(*) as n from append_requests where idempotency_key = 'k.parallel'`);
    expect(Number(row!.n)).toBe(1);
  });

  it('records a keyed digest, never the body or its plain hash', async () => {
    const subject = `user:idem-${tag()}`;
    const text = `canary ${tag()}`;
    const body = JSON.stringify({ text });
    const stored = await ok<Appended>(append(subject, body, 'k-digest'), 201);
    const rows = await queryRows<{ request_digest: Uint8Array; entry_id: string; key_id: string; seq: number }>(
      t.app.db.db,
      sql`select request_digest, entry_id, key_id, seq from append_requests where idempotency_key = 'k-digest'`,
    );
    expect(rows).toHaveLength(1);
    expect({ entryId: rows[0]!.entry_id, keyId: rows[0]!.key_id, seq: Number(rows[0]!.seq) }).toEqual(stored);
    const digest = Buffer.from(rows[0]!.request_digest);
    expect(digest).toHaveLength(32);
    expect(digest.equals(createHash('sha256').update(body).digest())).toBe(false);
    const dump = await queryRows<{ t: string }>(t.app.db.db, sql`select row_to_json(a)::text as t from append_requests a`);
    expect(dump.map((d) => d.t).join('\n')).not.toContain(text);
  });

  it('refuses a malformed key, and appends without a key as before', async () => {
    const subject = `user:idem-${tag()}`;
    const body = JSON.stringify({ text: 'no key' });
    await expectProblem(append(subject, body, 'has space'), 400, 'validation_failed');
    await expectProblem(append(subject, body, 'x'.repeat(129)), 400, 'validation_failed');
    const a = await ok<Appended>(append(subject, body), 201);
    const b = await ok<Appended>(append(subject, body), 201);
    expect(a.entryId).not.toBe(b.entryId);
  });

  it('a key is remembered for a day: an older row is purged, and an older key is a new append', async () => {
    const subject = `user:idem-${tag()}`;
    const stored = await ok<Appended>(append(subject, JSON.stringify({ text: 'old' }), 'k-old'), 201);
    await t.app.db.db.execute(sql`update append_requests set created_at = now() - interval '25 hours' where idempotency_key = 'k-old'`);
    // past the window, the key no longer binds: another body is a new append (the row is replaced)
    const fresh = await ok<Appended>(append(subject, JSON.stringify({ text: 'new' }), 'k-old'), 201);
    expect(fresh.entryId).not.toBe(stored.entryId);
    expect(await ok<Appended>(append(subject, JSON.stringify({ text: 'new' }), 'k-old'), 200)).toEqual(fresh);
    await t.app.db.db.execute(sql`update append_requests set created_at = now() - interval '25 hours' where idempotency_key = 'k-old'`);
    expect(await purgeExpired(t.app.db.db)).toBe(1);
    const [row] = await queryRows<{ n: string }>(t.app.db.db, sql`select count(*) as n from append_requests where idempotency_key = 'k-old'`);
    expect(Number(row!.n)).toBe(0);
    expect((await entriesOf(subject)).length).toBe(2);
  });

  it('after a forget of another entry, a retry of a kept append answers its original result (the entry moved under the new key)', {
    timeout: 60_000,
  }, async () => {
    const subject = `user:idem-${tag()}`;
    const body = JSON.stringify({ text: `Waters the balcony ferns every Sunday morning ${tag()}`, metadata: { n: 2 } });
    const kept = await ok<Appended>(append(subject, body, 'k-kept'), 201);
    const other = await ok<Appended>(append(subject, JSON.stringify({ text: `Hid a spare door key beneath the doormat ${tag()}` }), 'k-forgotten'), 201);
    const { erasureId } = await ok<{ erasureId: string }>(t.call('DELETE', `/v1/entries/${other.entryId}`, { role: 'eraser' }), 202);
    const done = await t.app.erasures.settle(erasureId);
    expect(done.status, JSON.stringify(done.steps)).toBe('completed');
    const live = (await t.app.keys.findKey(subject))!;
    expect(live.keyId).not.toBe(kept.keyId);
    const again = await append(subject, body, 'k-kept');
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await ok<Appended>(again, 200)).toEqual(kept);
    // still the same key: another body is refused, and nothing was stored
    await expectProblem(append(subject, JSON.stringify({ text: 'another body' }), 'k-kept'), 409, 'idempotency_key_reused');
    expect((await entriesOf(subject)).map((e) => e.entryId)).toEqual([kept.entryId]);
    // the forgotten one's key is gone with it
    await expectProblem(append(subject, JSON.stringify({ text: 'x' }), 'k-forgotten'), 410, 'key_destroyed');
  });

  it("a retry after the subject's key was destroyed is 410 key_destroyed, not a new entry", async () => {
    const subject = `user:idem-${tag()}`;
    const body = JSON.stringify({ text: 'to be erased' });
    const stored = await ok<Appended>(append(subject, body, 'k-gone'), 201);
    await t.app.keys.destroyKey(stored.keyId, { reason: 'test', actor: 'admin' });
    await expectProblem(append(subject, body, 'k-gone'), 410, 'key_destroyed');
  });
});

/**
 * Store items (src/log/items.ts), on PostgreSQL and MinIO through the HTTP app: an entry
 * appended or superseded with `item: { namespace, key }` is found by one lookup (the
 * frames read do not grow with the subject's entries: 12 vs 1,000), a superseded or
 * forgotten version is not; the namespaces in use are listed from their entries, of
 * one subject or of all, and an erased subject's are gone; the index holds keyed hashes,
 * never the labels; bad items are 400. An append with `If-None-Match: *` stores an item's first
 * version only (412 `item_exists` with its live entries otherwise); both on the embedded default too.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { minioEnv } from '../backups/support.js';
import { awaitErasure, tag } from '../erasure/fixtures.js';
import { expectProblem, ok } from '../support/http.js';
import { openTestApp, type TestApp } from '../support/vault.js';
import { SealedCache } from '../../src/storage/sealed-cache.js';

interface Listed {
  entryId: string;
  text: string;
  metadata: { ns?: string[] } | null;
}

describe('store items', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await openTestApp({ extraEnv: { ...minioEnv().env, LETHE_ERASURE_POLL_MS: '100' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  const put = async (subject: string, namespace: string[], key: string, text: string) =>
    (
      await ok<{ entryId: string }>(
        t.call('POST', `/v1/subjects/${subject}/entries`, { body: { text, metadata: { ns: namespace }, item: { namespace, key } } }),
        201,
      )
    ).entryId;
  const lookup = async (subject: string, namespace: string[], key: string) =>
    (await ok<{ entries: Listed[] }>(t.call('POST', `/v1/subjects/${subject}/items/lookup`, { body: { namespace, key } }), 200)).entries;
  const namespaces = async (subject?: string) =>
    (
      await ok<{ entries: Listed[] }>(t.call('GET', `/v1/items/namespaces?limit=1000${subject ? `&subject=${encodeURIComponent(subject)}` : ''}`), 200)
    ).entries.map((e) => JSON.stringify(e.metadata?.ns));

  it('a lookup finds the live version alone: not a superseded one, not a forgotten one; an unknown item or subject is empty', {
    timeout: 120_000,
  }, async () => {
    const A = `user:items-a-${tag()}`;
    const ns = ['memories', A];
    const first = await put(A, ns, 'profile', `likes ${tag()} tea`);
    await put(A, ns, 'other', `other ${tag()}`);
    expect((await lookup(A, ns, 'profile')).map((e) => e.entryId)).toEqual([first]);
    const next = await ok<{ entry: { entryId: string } }>(
      t.call('POST', `/v1/subjects/${A}/entries/${first}/supersede`, { body: { text: `likes ${tag()} coffee`, item: { namespace: ns, key: 'profile' } } }),
      201,
    );
    expect((await lookup(A, ns, 'profile')).map((e) => e.entryId)).toEqual([next.entry.entryId]);
    const forgotten = await ok<{ erasureId: string }>(t.call('DELETE', `/v1/entries/${next.entry.entryId}`), 202);
    expect(await lookup(A, ns, 'profile')).toEqual([]);
    expect((await awaitErasure(t.call, forgotten.erasureId)).status).toBe('completed');
    expect(await lookup(A, ns, 'nothing')).toEqual([]);
    expect(await lookup(`user:never-${tag()}`, ns, 'profile')).toEqual([]);
    // the index holds keyed hashes only: no label, no key in any column
    const [row] = await queryRows<{ item_hash: Uint8Array; namespace_hash: Uint8Array }>(
      t.app.db.db,
      sql`select item_hash, namespace_hash from log_entries where entry_id = ${first}`,
    );
    expect(row!.item_hash).toHaveLength(32);
    expect(Buffer.from(row!.item_hash).toString('latin1')).not.toContain('profile');
    expect(Buffer.from(row!.namespace_hash).toString('latin1')).not.toContain('memories');
  });

  it('If-None-Match: * appends an item only as its first version: with live entries it is 412 item_exists with them, and stores nothing', {
    timeout: 120_000,
  }, async () => {
    const A = `user:items-create-${tag()}`;
    const ns = ['memories', A];
    const create = (text: string, key = 'profile', headers: Record<string, string> = {}) =>
      t.call('POST', `/v1/subjects/${A}/entries`, { body: { text, item: { namespace: ns, key } }, headers: { 'if-none-match': '*', ...headers } });
    const first = await ok<{ entryId: string }>(create(`likes ${tag()} tea`), 201);
    const refused = await expectProblem(create(`likes ${tag()} coffee`), 412, 'item_exists');
    expect((refused.problem as unknown as { entries: Listed[] }).entries.map((e) => e.entryId)).toEqual([first.entryId]);
    expect((refused.problem as unknown as { readFence: string }).readFence).toEqual(expect.any(String));
    expect((await lookup(A, ns, 'profile')).map((e) => e.entryId)).toEqual([first.entryId]);
    const listed = await ok<{ entries: Listed[] }>(t.call('GET', `/v1/subjects/${A}/entries`), 200);
    expect(listed.entries.map((e) => e.entryId)).toEqual([first.entryId]);
    // a retry of the append that stored answers it, not the refusal
    const once = { 'idempotency-key': `create-${tag()}` };
    const stored = await ok<{ entryId: string }>(create('the other key', 'other', once), 201);
    const again = await create('the other key', 'other', once);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(((await again.json()) as { entryId: string }).entryId).toBe(stored.entryId);
    // once the item's version is forgotten, it may be created again
    await ok(t.call('DELETE', `/v1/entries/${first.entryId}`), 202);
    await ok(create(`likes ${tag()} water`), 201);
    await expectProblem(
      t.call('POST', `/v1/subjects/${A}/entries`, { body: { text: 'no item' }, headers: { 'if-none-match': '*' } }),
      400,
      'validation_failed',
    );
    await expectProblem(create('a tag', 'profile', { 'if-none-match': '"v1"' }), 400, 'validation_failed');
  });

  it('a lookup reads as many frames at 1,000 entries as at 12', { timeout: 300_000 }, async () => {
    const small = `user:items-small-${tag()}`;
    const large = `user:items-large-${tag()}`;
    for (const [subject, n] of [
      [small, 12],
      [large, 1000],
    ] as const) {
      for (let i = 0; i < n; i++) {
        await t.app.log.append(subject, { text: `item ${i} ${tag()}`, item: { namespace: ['memories', subject], key: `k${i}` } }, 'writer');
      }
    }
    // every frame read asks the cache of sealed frames first (appends fill it, so the store is not asked)
    const reads = vi.spyOn(SealedCache.prototype, 'get');
    const framesFor = async (subject: string) => {
      reads.mockClear();
      const found = await lookup(subject, ['memories', subject], 'k7');
      expect(found).toHaveLength(1);
      return reads.mock.calls.length;
    };
    try {
      const atSmall = await framesFor(small);
      const atLarge = await framesFor(large);
      expect(atSmall).toBe(1);
      expect(atLarge).toBe(atSmall);
    } finally {
      reads.mockRestore();
    }
  });

  it("the namespaces in use, of one subject or of all, from their entries; an erased subject's are gone", { timeout: 120_000 }, async () => {
    const A = `user:items-ns-a-${tag()}`;
    const B = `user:items-ns-b-${tag()}`;
    await put(A, ['memories', A], 'k', `a ${tag()}`);
    await put(A, ['profile', A], 'k', `a ${tag()}`);
    await put(A, ['profile', A], 'k2', `a ${tag()}`);
    await put(B, ['memories', B], 'k', `b ${tag()}`);
    expect((await namespaces(A)).sort()).toEqual([JSON.stringify(['memories', A]), JSON.stringify(['profile', A])].sort());
    const all = await namespaces();
    for (const ns of [
      ['memories', A],
      ['profile', A],
      ['memories', B],
    ])
      expect(all).toContain(JSON.stringify(ns));
    const erasure = await ok<{ erasureId: string }>(t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject: B } }), 202);
    expect((await awaitErasure(t.call, erasure.erasureId)).status).toBe('completed');
    expect(await namespaces()).not.toContain(JSON.stringify(['memories', B]));
    expect(await namespaces(A)).toHaveLength(2);
  });

  it('bad items and bad pages are 400, naming the field', async () => {
    const A = `user:items-bad-${tag()}`;
    for (const item of [
      { namespace: [], key: 'k' },
      { namespace: ['ok'], key: '' },
      { namespace: ['x'.repeat(257)], key: 'k' },
      { namespace: ['ok'], key: 'k', extra: 1 },
    ])
      await expectProblem(t.call('POST', `/v1/subjects/${A}/entries`, { body: { text: 'x', item } }), 400, 'validation_failed');
    await expectProblem(t.call('POST', `/v1/subjects/${A}/items/lookup`, { body: { namespace: 'memories', key: 'k' } }), 400, 'validation_failed');
    await expectProblem(t.call('GET', '/v1/items/namespaces?limit=0'), 400, 'validation_failed');
    await expectProblem(t.call('GET', '/v1/items/namespaces?subject=bad%20subject'), 400, 'validation_failed');
  });
});

describe('store items on the embedded default (PGlite)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await openTestApp({ embedded: true });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  it('a lookup finds the live version, and If-None-Match: * answers it as item_exists', async () => {
    const A = `user:items-embedded-${tag()}`;
    const ns = ['memories', A];
    const body = (text: string) => ({ text, item: { namespace: ns, key: 'profile' } });
    const first = await ok<{ entryId: string }>(
      t.call('POST', `/v1/subjects/${A}/entries`, { body: body('likes tea'), headers: { 'if-none-match': '*' } }),
      201,
    );
    const found = await ok<{ entries: Listed[] }>(t.call('POST', `/v1/subjects/${A}/items/lookup`, { body: { namespace: ns, key: 'profile' } }), 200);
    expect(found.entries.map((e) => e.entryId)).toEqual([first.entryId]);
    const refused = await expectProblem(
      t.call('POST', `/v1/subjects/${A}/entries`, { body: body('likes coffee'), headers: { 'if-none-match': '*' } }),
      412,
      'item_exists',
    );
    expect((refused.problem as unknown as { entries: Listed[] }).entries.map((e) => e.text)).toEqual(['likes tea']);
  });
});

/**
 * Store items searched on the service (POST /v1/subjects/{subject}/items/search,
 * src/log/item-search.ts), on PostgreSQL and MinIO through the HTTP app: one answer per
 * item, newest first or ranked by a query; kept to named namespaces and to entries whose
 * metadata holds given fields; paged by items; forgotten versions and erased subjects
 * answer nothing; bad requests are 400.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { containsFields } from '../../src/log/item-search.js';
import { SealedCache } from '../../src/storage/sealed-cache.js';
import { minioEnv } from '../backups/support.js';
import { awaitErasure, tag } from '../erasure/fixtures.js';
import { expectProblem, ok } from '../support/http.js';
import { openTestApp, type TestApp } from '../support/vault.js';

interface Found {
  items: Array<{ entries: Array<{ entryId: string; text: string; metadata: { key?: string; color?: string } | null }>; score?: number }>;
}

describe('store items searched on the service', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await openTestApp({ extraEnv: { ...minioEnv().env, LETHE_ERASURE_POLL_MS: '100' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  const put = async (subject: string, namespace: string[], key: string, text: string, color: string) =>
    (
      await ok<{ entryId: string }>(
        t.call('POST', `/v1/subjects/${subject}/entries`, { body: { text, metadata: { key, color }, item: { namespace, key } } }),
        201,
      )
    ).entryId;
  const search = async (subject: string, body: Record<string, unknown>) =>
    (await ok<Found>(t.call('POST', `/v1/subjects/${subject}/items/search`, { body }), 200)).items;
  const keys = (items: Found['items']) => items.map((i) => i.entries[0]!.metadata?.key);

  it('lists items newest first, one answer per item, kept to namespaces and metadata, paged by items', async () => {
    const A = `user:item-search-${tag()}`;
    const notes = ['memories', 'notes'];
    const prefs = ['memories', 'prefs'];
    await put(A, notes, 'k1', 'Alice visited Porto.', 'red');
    await put(A, prefs, 'k2', 'Alice prefers window seats.', 'blue');
    await put(A, notes, 'k3', 'Alice learns Portuguese.', 'red');
    // a second field of k1: still one item
    await put(A, notes, 'k1', 'Alice visited Porto in May.', 'red');
    await put(A, notes, 'k4', 'Alice owns a kayak.', 'green');
    expect(keys(await search(A, {}))).toEqual(['k4', 'k1', 'k3', 'k2']);
    const k1 = (await search(A, { namespaces: [notes], limit: 2, offset: 1 }))[0]!;
    expect(k1.entries.map((e) => e.text)).toEqual(['Alice visited Porto in May.', 'Alice visited Porto.']);
    expect(keys(await search(A, { namespaces: [notes] }))).toEqual(['k4', 'k1', 'k3']);
    expect(keys(await search(A, { namespaces: [prefs, ['memories', 'none']] }))).toEqual(['k2']);
    expect(keys(await search(A, { metadata: { color: 'red' } }))).toEqual(['k1', 'k3']);
    expect(keys(await search(A, { metadata: { color: 'red' }, offset: 1, limit: 5 }))).toEqual(['k3']);
    expect(keys(await search(A, { limit: 2 }))).toEqual(['k4', 'k1']);
    expect(keys(await search(A, { offset: 2 }))).toEqual(['k3', 'k2']);
    expect(await search(`user:item-search-none-${tag()}`, {})).toEqual([]);
  });

  it('ranks by a query, an item at its best entry, and a forgotten version or an erased subject answers nothing', { timeout: 120_000 }, async () => {
    const A = `user:item-search-rank-${tag()}`;
    const ns = ['memories', 'travel'];
    await put(A, ns, 'sea', 'Alice swims in the sea every morning.', 'blue');
    const old = await put(A, ns, 'bike', 'Alice rides a red bicycle to work.', 'red');
    await put(A, ns, 'cook', 'Alice cooks risotto on Sundays.', 'white');
    const found = await search(A, { query: 'Alice rides a red bicycle to work.', limit: 2 });
    expect(keys(found)[0]).toBe('bike');
    expect(found[0]!.score).toBeGreaterThan(found[1]!.score!);
    expect(keys(await search(A, { query: 'Alice rides a red bicycle to work.', metadata: { color: 'blue' } }))).toEqual(['sea']);
    // the old version forgotten (a supersession): its item answers with the successor only
    const next = await ok<{ superseded: { erasureId: string } }>(
      t.call('POST', `/v1/subjects/${A}/entries/${old}/supersede`, {
        body: { text: 'Alice takes the tram to work.', metadata: { key: 'bike', color: 'grey' }, item: { namespace: ns, key: 'bike' } },
      }),
      201,
    );
    const bike = (await search(A, { metadata: { key: 'bike' } }))[0]!;
    expect(bike.entries.map((e) => e.text)).toEqual(['Alice takes the tram to work.']);
    expect((await awaitErasure(t.call, next.superseded.erasureId)).status).toBe('completed');
    const erased = await ok<{ erasureId: string }>(t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject: A } }), 202);
    expect((await awaitErasure(t.call, erased.erasureId)).status).toBe('completed');
    expect(await search(A, {})).toEqual([]);
  });

  it('a metadata filter reads rounds of items until the page fills: the one match among 450 items, the oldest, is found', { timeout: 120_000 }, async () => {
    const A = `user:item-search-rounds-${tag()}`;
    const ns = ['memories', 'many'];
    for (let i = 0; i < 450; i++) {
      await t.app.log.append(
        A,
        { text: `note ${i}`, metadata: { key: `n${i}`, color: i === 0 ? 'gold' : 'grey' }, item: { namespace: ns, key: `n${i}` } },
        'writer',
      );
    }
    expect(keys(await search(A, { metadata: { color: 'gold' } }))).toEqual(['n0']);
    expect(keys(await search(A, { metadata: { color: 'grey' }, offset: 440, limit: 20 }))).toEqual(['n9', 'n8', 'n7', 'n6', 'n5', 'n4', 'n3', 'n2', 'n1']);
    expect(await search(A, { metadata: { color: 'none' } })).toEqual([]);
  });

  it('a filter most items pass opens little more than the page: 10 of 120 items every other one matches read 20 frames', {
    timeout: 120_000,
  }, async () => {
    const A = `user:item-search-page-${tag()}`;
    const ns = ['memories', 'halves'];
    for (let i = 0; i < 120; i++) {
      await t.app.log.append(
        A,
        { text: `note ${i}`, metadata: { key: `h${i}`, color: i % 2 === 0 ? 'even' : 'odd' }, item: { namespace: ns, key: `h${i}` } },
        'writer',
      );
    }
    // every frame read asks the cache of sealed frames first (appends fill it)
    const reads = vi.spyOn(SealedCache.prototype, 'get');
    try {
      const found = await search(A, { metadata: { color: 'even' }, limit: 10 });
      expect(keys(found)).toEqual(['h118', 'h116', 'h114', 'h112', 'h110', 'h108', 'h106', 'h104', 'h102', 'h100']);
      // one round of twice the page: 20 read, not all 120
      expect(reads.mock.calls.length).toBeLessThanOrEqual(20);
    } finally {
      reads.mockRestore();
    }
  });

  it('refuses bad requests with 400 naming the field', async () => {
    const A = `user:item-search-bad-${tag()}`;
    for (const body of [
      { limit: 0 },
      { limit: 101 },
      { offset: -1 },
      { namespaces: [] },
      { namespaces: [[]] },
      { metadata: 'x' },
      { query: 7 },
      { extra: 1 },
    ]) {
      await expectProblem(t.call('POST', `/v1/subjects/${A}/items/search`, { body }), 400, 'validation_failed');
    }
    await expectProblem(t.call('POST', `/v1/subjects/${A}/items/search`, { body: {}, role: 'eraser' }), 403, 'forbidden');
  });

  it('metadata matches field by field: objects nested, the rest exactly', () => {
    expect(containsFields({ a: 1, b: { c: 'x', d: [1, 2] } }, { b: { c: 'x' } })).toBe(true);
    expect(containsFields({ a: 1, b: { c: 'x', d: [1, 2] } }, { b: { d: [1, 2] } })).toBe(true);
    expect(containsFields({ a: 1, b: { c: 'x', d: [1, 2] } }, { b: { d: [1] } })).toBe(false);
    expect(containsFields({ a: 1 }, { a: '1' })).toBe(false);
    expect(containsFields(null, { a: 1 })).toBe(false);
    expect(containsFields({ a: null }, { a: null })).toBe(true);
  });
});

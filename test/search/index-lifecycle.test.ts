/**
 * The search index over its life, through real vaults on one PostgreSQL database (two
 * replicas hearing each other over LISTEN/NOTIFY): filled on append, rebuilt by
 * decrypting at start-up, emptied of a key's vectors when the key is destroyed, and
 * served over HTTP.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { isLetheError } from '../../src/errors.js';
import { MAX_QUERY_BYTES, MAX_SEARCH_K } from '../../src/search/service.js';
import type { App } from '../../src/app/open.js';
import { expectProblem } from '../support/http.js';
import { openTestApp, openTestVault, type TestApp, type TestVault } from '../support/vault.js';
import { thrown } from './fake-server.js';

/** Polls `check` until it holds (or 15 s pass); answers whether it came to hold. */
async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 15_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Everyone's records (an allSubjects search): what the index holds, whatever the subjects' keys. */
const ALL = { allSubjects: true } as const;

async function hitIds(vault: App, query: string, k = 10): Promise<string[]> {
  return (await vault.search.search(query, k, ALL)).hits.map((h) => h.id);
}

const ENTRIES: ReadonlyArray<[subject: string, text: string]> = [
  ['user:lisbon', 'Moved to Lisbon and rents a flat near the Alfama district.'],
  ['user:lisbon', 'Learning Portuguese at a language school in Lisbon.'],
  ['user:peanut', 'Allergic to peanuts and cashews.'],
  ['user:peanut', 'Carries an adrenaline pen because of the peanut allergy.'],
  ['user:jazz', 'Plays saxophone in a jazz quartet on Fridays.'],
  ['user:jazz', 'Collects jazz records from the fifties.'],
  ['user:jazz', 'Takes saxophone lessons from a jazz teacher.'],
  ['user:garden', 'Grows tomatoes and courgettes on an allotment.'],
];

describe('the search index on two replicas of one vault', () => {
  let tv: TestVault;
  let replica: App;
  const written: Array<{ subject: string; text: string; entryId: string; keyId: string }> = [];
  const idsOf = (subject: string) => written.filter((w) => w.subject === subject).map((w) => w.entryId);
  const keyOf = (subject: string) => written.find((w) => w.subject === subject)!.keyId;
  /** The destroyed subject's sealed embedding rows as they were before the destruction. */
  let peanutRows: Array<{ record_id: string; record_type: string; key_id: string; model: string; sealed: string }> = [];

  beforeAll(async () => {
    tv = await openTestVault();
    replica = await tv.reopen();
    for (const [subject, text] of ENTRIES) {
      const { entryId, keyId } = await tv.app.log.append(subject, { text }, 'writer');
      written.push({ subject, text, entryId, keyId });
    }
  });
  afterAll(async () => {
    await tv?.close();
  });

  it('an entry is searchable at once on the vault that appended it: its text read back and a read fence covering its key', async () => {
    const { hits, readFence } = await tv.app.search.search('moving to lisbon', 2, ALL);
    expect(hits.map((h) => h.id).sort()).toEqual(idsOf('user:lisbon').sort());
    expect(hits[0]).toEqual({
      id: written[0]!.entryId,
      type: 'entry',
      score: expect.any(Number),
      text: ENTRIES[0]![1],
      // an allSubjects search names no subject
      subject: null,
      kind: null,
      metadata: null,
      createdAt: expect.any(Date),
    });
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
    expect(tv.app.fences.parse(readFence)).toEqual([keyOf('user:lisbon')]);
    // a fence covers exactly the keys of what the search returned
    const mixed = await tv.app.search.search('peanut allergy jazz saxophone', 8, ALL);
    const keys = [...new Set(mixed.hits.map((h) => written.find((w) => w.entryId === h.id)!.keyId))].sort();
    expect(tv.app.fences.parse(mixed.readFence)).toEqual(keys);
  });

  it('entries appended on one replica become searchable on the other', async () => {
    // the primary's appends reached the replica over NOTIFY
    expect(await eventually(async () => (await hitIds(replica, 'peanut allergy', 2)).sort().join() === idsOf('user:peanut').sort().join())).toBe(true);
    // and the other way round
    const { entryId, keyId } = await replica.log.append('user:kite', { text: 'Goes kitesurfing at Tarifa every August.' }, 'writer');
    written.push({ subject: 'user:kite', text: 'Goes kitesurfing at Tarifa every August.', entryId, keyId });
    expect(await eventually(async () => (await hitIds(tv.app, 'kitesurfing in Tarifa', 1))[0] === entryId)).toBe(true);
    expect(tv.app.vectors.index.has(entryId)).toBe(true);
  });

  it('a vault opened later rebuilds the index by decrypting the stored embeddings and answers the same hits', async () => {
    const fresh = await tv.reopen();
    expect(fresh.vectors.index.size).toBe(written.length);
    for (const query of ['moving to lisbon', 'peanut allergy', 'jazz saxophone', 'tomato allotment', 'kitesurfing']) {
      const before = await tv.app.search.search(query, 5, ALL);
      const after = await fresh.search.search(query, 5, ALL);
      expect(after.hits, query).toEqual(before.hits);
    }
    expect(await fresh.vectors.rebuild()).toEqual({ loaded: written.length, destroyed: 0, otherModel: 0, workers: 0 });
  });

  it("embeddings are stored sealed: no row holds the vector's bytes in the clear", async () => {
    const rows = await queryRows<{ record_id: string; key_id: string; sealed: Uint8Array }>(
      tv.app.db.db,
      sql`select record_id, key_id, sealed from embeddings`,
    );
    expect(rows.length).toBe(written.length);
    for (const w of written) {
      const row = rows.find((r) => r.record_id === w.entryId)!;
      expect(row.key_id).toBe(w.keyId);
      const [vector] = await tv.app.vectors.embedder.embed([w.text]);
      const clear = Buffer.from(vector!.buffer, vector!.byteOffset, vector!.byteLength);
      // any 16-byte window of the plaintext vector that is not all zeros
      let window = 0;
      while (window + 16 <= clear.length && clear.subarray(window, window + 16).every((b) => b === 0)) window += 4;
      expect(Buffer.from(row.sealed).includes(clear.subarray(window, window + 16))).toBe(false);
    }
  });

  it("destroying a subject's key drops its entries from search at once on the same vault, and soon on the other replica", async () => {
    const keyId = keyOf('user:peanut');
    const ids = idsOf('user:peanut');
    expect((await hitIds(replica, 'peanut allergy', 2)).sort()).toEqual([...ids].sort());
    peanutRows = await queryRows<{ record_id: string; record_type: string; key_id: string; model: string; sealed: string }>(
      tv.app.db.db,
      sql`select record_id, record_type, key_id, model, encode(sealed, 'hex') as sealed from embeddings where key_id = ${keyId}`,
    );
    expect(peanutRows.length).toBe(ids.length);

    await tv.app.keys.destroyKey(keyId, { reason: 'search test', actor: 'admin' });

    expect(tv.app.vectors.index.idsOfKey(keyId)).toEqual([]);
    for (const id of ids) expect(tv.app.vectors.index.has(id)).toBe(false);
    const here = await hitIds(tv.app, 'peanut allergy cashews adrenaline pen', 10);
    expect(here.length).toBe(written.length - ids.length);
    for (const id of ids) expect(here).not.toContain(id);

    // the replica hears the destruction over NOTIFY and drops the vectors themselves
    expect(await eventually(() => replica.vectors.index.idsOfKey(keyId).length === 0 && ids.every((id) => !replica.vectors.index.has(id)))).toBe(true);
    const there = await hitIds(replica, 'peanut allergy cashews adrenaline pen', 10);
    for (const id of ids) expect(there).not.toContain(id);
    // the other subjects are untouched on both
    expect((await hitIds(replica, 'moving to lisbon', 2)).sort()).toEqual(idsOf('user:lisbon').sort());
    expect((await hitIds(tv.app, 'moving to lisbon', 2)).sort()).toEqual(idsOf('user:lisbon').sort());
  });

  it("a vault started after a key destruction does not load that key's vectors, not even sealed copies that outlived the key: the rebuild counts them as destroyed", async () => {
    const ids = idsOf('user:peanut');
    // Sealed copies of the destroyed key's embeddings that outlived it (a database
    // restored from a backup taken before the destruction): put back any the
    // destruction removed.
    await tv.app.db.db.execute(sql`insert into embeddings (record_id, record_type, key_id, model, sealed)
      select record_id, record_type, key_id, model, decode(sealed, 'hex')
        from json_to_recordset(${JSON.stringify(peanutRows)}::json) as v(record_id text, record_type text, key_id text, model text, sealed text)
      on conflict (record_id) do nothing`);
    const [left] = await queryRows<{ n: string | number }>(tv.app.db.db, sql`select count(*) as n from embeddings where key_id = ${keyOf('user:peanut')}`);
    expect(Number(left!.n)).toBe(ids.length);

    const restarted = await tv.reopen();
    for (const id of ids) expect(restarted.vectors.index.has(id)).toBe(false);
    expect(restarted.vectors.index.idsOfKey(keyOf('user:peanut'))).toEqual([]);
    expect(restarted.vectors.index.size).toBe(written.length - ids.length);
    expect(await restarted.vectors.rebuild()).toEqual({ loaded: written.length - ids.length, destroyed: ids.length, otherModel: 0, workers: 0 });
    const hits = await hitIds(restarted, 'peanut allergy', 10);
    for (const id of ids) expect(hits).not.toContain(id);
  });

  it('the survivors of a re-key stay searchable on every replica, and the excluded entry on none', async () => {
    const [kept1, excluded, kept2] = idsOf('user:jazz');
    const result = await tv.app.log.rekeySubject('user:jazz', { exclude: [excluded!], actor: 'admin', reason: 'search test' });
    expect(result).toMatchObject({ rewritten: 2, removed: 1 });

    const onPrimary = await hitIds(tv.app, 'jazz saxophone records', 3);
    expect(onPrimary).toContain(kept1);
    expect(onPrimary).toContain(kept2);
    expect(onPrimary).not.toContain(excluded);
    expect(tv.app.vectors.index.idsOfKey(result.newKeyId).sort()).toEqual([kept1!, kept2!].sort());

    const restarted = await tv.reopen();
    expect(restarted.vectors.index.idsOfKey(result.newKeyId).sort()).toEqual([kept1!, kept2!].sort());
    expect(restarted.vectors.index.has(excluded!)).toBe(false);

    // the replica that was running during the re-key
    const replicaCaughtUp = await eventually(async () => {
      const ids = await hitIds(replica, 'jazz saxophone records', 3);
      return ids.includes(kept1!) && ids.includes(kept2!) && !ids.includes(excluded!);
    }, 5_000);
    expect(replica.vectors.index.has(excluded!)).toBe(false);
    expect(replicaCaughtUp, `replica index holds ${JSON.stringify(replica.vectors.index.idsOfKey(result.newKeyId))} under the new key`).toBe(true);
  });

  it('search refuses k outside 1..100 and a query over 8 KiB (counted in UTF-8 bytes)', async () => {
    for (const k of [0, -1, MAX_SEARCH_K + 1, 2.5, Number.NaN]) {
      expect(isLetheError(await thrown(() => tv.app.search.search('lisbon', k, ALL)), 'validation_failed'), `k=${k}`).toBe(true);
    }
    expect((await tv.app.search.search('lisbon', MAX_SEARCH_K, ALL)).hits.length).toBeGreaterThan(0);
    expect(isLetheError(await thrown(() => tv.app.search.search('x'.repeat(MAX_QUERY_BYTES + 1), 5, ALL)), 'payload_too_large')).toBe(true);
    // 4,097 two-byte characters: under 8 Ki characters, over 8 KiB
    expect(isLetheError(await thrown(() => tv.app.search.search('é'.repeat(MAX_QUERY_BYTES / 2 + 1), 5, ALL)), 'payload_too_large')).toBe(true);
    const atLimit = await tv.app.search.search(`lisbon ${'x'.repeat(MAX_QUERY_BYTES - 7)}`, 5, ALL);
    expect(atLimit.hits.length).toBeGreaterThan(0);
  });
});

describe('POST /v1/search', () => {
  let t: TestApp;
  const written: Array<{ text: string; entryId: string; keyId: string }> = [];
  const TEXTS = [
    'Moved to Lisbon and rents a flat near the Alfama district.',
    'Allergic to peanuts and cashews.',
    'Plays saxophone in a jazz quartet on Fridays.',
    'Grows tomatoes and courgettes on an allotment.',
    'Drives a blue Toyota Corolla.',
    'Speaks Portuguese and some Mandarin.',
    'Has a ginger cat called Biscuit.',
    'Runs the Berlin marathon every year.',
    'Volunteers at the food bank on Saturdays.',
    'Prefers window seats on long flights.',
    'Reads crime novels on the train.',
    'Is saving up to buy a house.',
  ];
  const SUBJECTS = ['user:s0', 'user:s1', 'user:s2', 'user:s3'];

  beforeAll(async () => {
    t = await openTestApp();
    for (const [i, text] of TEXTS.entries()) {
      const res = await t.call('POST', `/v1/subjects/user:s${i % 4}/entries`, { body: { text } });
      expect(res.status).toBe(201);
      written.push({ text, ...((await res.json()) as { entryId: string; keyId: string }) });
    }
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers {hits: [{id, type, score, text, subject, kind, metadata, createdAt}], readFence}, best first, not cached', async () => {
    const res = await t.call('POST', '/v1/search', { body: { query: 'where in lisbon does she live', k: 3, subjects: SUBJECTS } });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as { hits: Array<{ id: string; type: string; score: number; text: string; createdAt: string }>; readFence: string };
    expect(Object.keys(body).sort()).toEqual(['hits', 'readFence']);
    expect(body.hits.length).toBe(3);
    for (const h of body.hits) expect(Object.keys(h).sort()).toEqual(['createdAt', 'id', 'kind', 'metadata', 'score', 'subject', 'text', 'type']);
    expect(body.hits[0]).toEqual({
      id: written[0]!.entryId,
      type: 'entry',
      score: expect.any(Number),
      text: TEXTS[0],
      subject: 'user:s0',
      kind: null,
      metadata: null,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    const scores = body.hits.map((h) => h.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    for (const h of body.hits) expect(h.text).toBe(written.find((w) => w.entryId === h.id)!.text);
    expect(body.readFence).toMatch(/^rf1\./);
    const keys = [...new Set(body.hits.map((h) => written.find((w) => w.entryId === h.id)!.keyId))].sort();
    expect(t.app.fences.parse(body.readFence)).toEqual(keys);
  });

  it('answers 10 hits when k is not given', async () => {
    const res = await t.call('POST', '/v1/search', { body: { query: 'lisbon', subjects: SUBJECTS } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { hits: unknown[] }).hits.length).toBe(10);
  });

  it('admin may search too', async () => {
    expect((await t.call('POST', '/v1/search', { role: 'admin', body: { query: 'lisbon', k: 1, subject: 'user:s0' } })).status).toBe(200);
  });

  const BAD_BODIES: ReadonlyArray<[string, { body?: unknown; rawBody?: string }]> = [
    ['no query', { body: { k: 3, subject: 'user:s0' } }],
    ['an empty query', { body: { query: '', subject: 'user:s0' } }],
    ['a query that is not a string', { body: { query: 42, subject: 'user:s0' } }],
    ['k = 0', { body: { query: 'lisbon', k: 0, subject: 'user:s0' } }],
    ['k = 101', { body: { query: 'lisbon', k: 101, subject: 'user:s0' } }],
    ['k = 2.5', { body: { query: 'lisbon', k: 2.5, subject: 'user:s0' } }],
    ['k as a string', { body: { query: 'lisbon', k: '5', subject: 'user:s0' } }],
    ['a body that is not JSON', { rawBody: '{"query": "lisbon", "subject": "user:s0"' }],
  ];
  for (const [what, request] of BAD_BODIES) {
    it(`is 400 validation_failed for ${what}`, async () => {
      await expectProblem(await t.call('POST', '/v1/search', request), 400, 'validation_failed');
    });
  }

  it('is 413 payload_too_large for a query over 8 KiB', async () => {
    await expectProblem(await t.call('POST', '/v1/search', { body: { query: 'q'.repeat(MAX_QUERY_BYTES + 1), subject: 'user:s0' } }), 413, 'payload_too_large');
  });

  it('is 401 without a token and 403 for the backup and eraser roles', async () => {
    await expectProblem(await t.call('POST', '/v1/search', { role: 'none', body: { query: 'lisbon', subject: 'user:s0' } }), 401, 'unauthorized');
    await expectProblem(await t.call('POST', '/v1/search', { role: 'backup', body: { query: 'lisbon', subject: 'user:s0' } }), 403, 'forbidden');
    await expectProblem(await t.call('POST', '/v1/search', { role: 'eraser', body: { query: 'lisbon', subject: 'user:s0' } }), 403, 'forbidden');
  });
});

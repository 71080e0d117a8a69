/**
 * The default search is hybrid (cosine and BM25 fused), over HTTP on PostgreSQL: it
 * finds what the README's example asks, keeps to its scope in every mode, and a
 * forgotten record's words stop changing anyone's score once it is gone.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitErasure, tag } from '../erasure/fixtures.js';
import { expectProblem, ok } from '../support/http.js';
import { openTestApp, type TestApp } from '../support/vault.js';

interface Hit {
  id: string;
  score: number;
  text: string;
  subject: string | null;
}

describe('POST /v1/search, hybrid by default', () => {
  let t: TestApp;
  const append = async (subject: string, text: string) =>
    (await ok<{ entryId: string }>(t.call('POST', `/v1/subjects/${subject}/entries`, { body: { text } }), 201)).entryId;
  const search = async (body: Record<string, unknown>) => (await ok<{ hits: Hit[] }>(t.call('POST', '/v1/search', { body }), 200)).hits;

  beforeAll(async () => {
    t = await openTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it("the README's example: its question answers the address first, by meaning (they share no word but the name)", async () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const block = readme.slice(readme.indexOf("entries.append('user:42'"), readme.indexOf('lethe.forget(entryId)'));
    const memories = [...block.matchAll(/entries\.append\('user:42', \{ text: '([^']+)' \}\)/g)].map((m) => m[1]!);
    const question = /lethe\.search\("([^"]+)"/.exec(block)?.[1];
    expect(memories).toEqual(['Alice moved to 12 Rose Street', 'Alice likes green tea']);
    expect(question).toBeDefined();
    const subject = `user:${tag()}`;
    const ids = [];
    for (const text of memories) ids.push(await append(subject, text));
    const hits = await search({ query: question, subject });
    expect(hits.map((h) => h.id)).toEqual(ids);
  });

  it("never answers another subject's record, in any mode, though it is the better match", async () => {
    const mine = `user:${tag()}`;
    const theirs = `user:${tag()}`;
    const own = await append(mine, 'my sister lives in Ghent');
    for (let i = 0; i < 12; i++) await append(theirs, `the violin teacher in Ghent moved house, lesson ${i}`);
    for (const mode of ['hybrid', 'vector', 'lexical']) {
      const hits = await search({ query: 'violin teacher in Ghent', subject: mine, mode, k: 10 });
      expect(
        hits.map((h) => h.id),
        mode,
      ).toEqual([own]);
      expect(hits[0]!.subject).toBe(mine);
    }
  });

  it("a forgotten record's words no longer change another record's lexical score", async () => {
    const subject = `user:${tag()}`;
    const kept = await append(subject, 'Maya adopted a beagle called Toast');
    await append(subject, 'Maya works at the bakery on Elm Road');
    const query = { query: 'Maya beagle', subject, mode: 'lexical', k: 10 };
    const before = (await search(query)).find((h) => h.id === kept)!.score;
    const copy = await append(subject, 'the neighbours have a beagle that barks at night');
    expect((await search(query)).find((h) => h.id === kept)!.score).not.toBe(before);
    const { erasureId } = await ok<{ erasureId: string }>(t.call('DELETE', `/v1/entries/${copy}`), 202);
    expect((await awaitErasure(t.call, erasureId)).status).toBe('completed');
    const after = await search(query);
    expect(after.map((h) => h.id)).not.toContain(copy);
    expect(after.find((h) => h.id === kept)!.score).toBe(before);
  });

  it('keeps to a time range: of createdAt, or of an event date in metadata', async () => {
    const subject = `user:${tag()}`;
    const at = async (text: string, date?: string) =>
      (await ok<{ entryId: string }>(t.call('POST', `/v1/subjects/${subject}/entries`, { body: { text, ...(date ? { metadata: { date } } : {}) } }), 201))
        .entryId;
    const march = await at('we hiked the ridge trail in the rain', '2025-03-14');
    const june = await at('we hiked the coastal trail at dawn', '2025-06-02');
    const undated = await at('we hiked the old trail again');
    const ids = async (extra: Record<string, unknown>) => (await search({ query: 'hiked trail', subject, k: 10, ...extra })).map((h) => h.id).sort();
    expect(await ids({})).toEqual([march, june, undated].sort());
    expect(await ids({ timeField: 'date', since: '2025-05-01' })).toEqual([june]);
    expect(await ids({ timeField: 'date', until: '2025-03-31T23:59:59Z' })).toEqual([march]);
    expect(await ids({ timeField: 'date', since: '2025-01-01', until: '2025-12-31' })).toEqual([june, march].sort());
    // createdAt: every one was appended a moment ago
    expect(await ids({ since: new Date(Date.now() - 60_000).toISOString() })).toEqual([march, june, undated].sort());
    expect(await ids({ until: new Date(Date.now() - 60_000).toISOString() })).toEqual([]);
  });

  it('refuses a mode it does not know, and a time range it cannot read', async () => {
    const bad = (extra: Record<string, unknown>) =>
      expectProblem(t.call('POST', '/v1/search', { body: { query: 'tea', subject: 'user:x', ...extra } }), 400, 'validation_failed');
    await bad({ mode: 'semantic' });
    await bad({ since: 'last tuesday' });
    await bad({ since: '2025-02-30x' });
    await bad({ since: '2025-06-01', until: '2025-01-01' });
    await bad({ timeField: 'date' });
  });
});

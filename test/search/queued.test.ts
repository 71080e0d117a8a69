/**
 * A scoped search ranks its subjects' entries still queued for the indexer besides the
 * index (src/search/queued.ts): a writer's entry is found by its subject's searches
 * from its registration — scored as the index scores it once indexed — never another
 * subject's, never one whose frame does not open or whose key is destroyed, and at most
 * the newest QUEUED_RANKED of them. On PostgreSQL, the indexer's worker not running.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LetheError } from '../../src/errors.js';
import { mergeRanked, QUEUED_BYTES, QUEUED_RANKED } from '../../src/search/queued.js';
import type { SearchMode } from '../../src/search/rank.js';
import { type Embedder, HashingEmbedder } from '../../src/vectors/embedder.js';
import { registerTexts, upload } from '../support/registration.js';
import { openTestVault, type TestVault } from '../support/vault.js';

const rand = () => randomBytes(4).toString('hex');

describe('scoped searches and the entries still queued for the indexer', () => {
  let tv: TestVault;
  beforeAll(async () => {
    tv = await openTestVault({ app: { indexWorker: false } });
  });
  afterAll(async () => {
    await tv?.close();
  });

  const scoped = (query: string, subject: string, mode: SearchMode = 'hybrid', k = 5) => tv.app.search.search(query, k, { subjects: [subject] }, { mode });

  it('finds a queued entry at once in every mode; an all-subjects search only once indexed, then at the same score and once', async () => {
    const vault = tv.app;
    const subject = `user:queued-${rand()}`;
    const canary = `quetzal${rand()}`;
    const { ids } = await registerTexts(vault, subject, [`The spare key hides under the ${canary} flowerpot`, 'It rained all afternoon in Leeds']);
    const scores = new Map<SearchMode, number>();
    for (const mode of ['hybrid', 'lexical', 'vector'] as const) {
      const { hits } = await scoped(`${canary} flowerpot`, subject, mode);
      expect(hits[0]?.id, mode).toBe(ids[0]);
      expect(hits[0]?.text).toContain(canary);
      scores.set(mode, hits[0]!.score);
    }
    // a lexical ranking leaves out what matches no word of the query
    expect((await scoped(`${canary} flowerpot`, subject, 'lexical')).hits.map((h) => h.id)).toEqual([ids[0]]);
    const everyone = await vault.search.search(`${canary} flowerpot`, 5, { allSubjects: true });
    expect(everyone.hits.map((h) => h.id)).not.toContain(ids[0]);

    await vault.log.drained({ timeoutMs: 60_000 });
    expect(vault.vectors.index.has(ids[0]!)).toBe(true);
    expect((await vault.search.search(`${canary} flowerpot`, 5, { allSubjects: true })).hits[0]?.id).toBe(ids[0]);
    for (const mode of ['hybrid', 'lexical', 'vector'] as const) {
      const { hits } = await scoped(`${canary} flowerpot`, subject, mode);
      expect(
        hits.filter((h) => h.id === ids[0]),
        mode,
      ).toHaveLength(1);
      // the index keeps vectors as int8: a cosine read back differs in the third decimal at most
      expect(hits[0]!.score, mode).toBeCloseTo(scores.get(mode)!, 2);
    }
  });

  it("never another subject's queued entry, one whose frame does not open, nor one whose key was destroyed", async () => {
    const vault = tv.app;
    const canary = `ocelot${rand()}`;
    const mine = `user:queued-mine-${rand()}`;
    const theirs = `user:queued-theirs-${rand()}`;
    const a = await registerTexts(vault, mine, [`my ${canary} lamp is blue`]);
    await registerTexts(vault, theirs, [`their ${canary} lamp is blue`, `their ${canary} lamp again`]);
    expect((await scoped(`${canary} lamp`, mine)).hits.map((h) => h.id)).toEqual(a.ids);

    // a frame that does not open under the key its row names: left out, no error (the indexer will refuse it)
    const forgedSubject = `user:queued-forged-${rand()}`;
    const body = await upload(vault, forgedSubject, [`a readable ${canary} neighbour`, `tampered ${canary} after sealing`]);
    const forged = body.entries.map((e, i) => (i === 1 ? { ...e, wrappedKey: body.entries[0]!.wrappedKey } : e));
    expect((await vault.log.register(body.segment, forged)).map((r) => r.status)).toEqual(['registered', 'registered']);
    expect((await scoped(`${canary} tampered sealing neighbour`, forgedSubject)).hits.map((h) => h.id)).toEqual([body.entries[0]!.entryId]);

    // a destroyed key takes its queued entries with it
    const gone = `user:queued-gone-${rand()}`;
    const g = await registerTexts(vault, gone, [`the ${canary} lamp of a subject erased`]);
    await vault.keys.destroyKey(g.keyId, { reason: 'test: destroyed while queued', actor: 'test' });
    expect((await scoped(`${canary} lamp`, gone)).hits).toEqual([]);
  });

  it('a queued entry registered at a place that is no frame of its segment is left out (the indexer refuses it), not an error of the search', async () => {
    const vault = tv.app;
    const subject = `user:queued-misplaced-${rand()}`;
    const canary = `tapir${rand()}`;
    const body = await upload(vault, subject, [`a readable ${canary} note`, `a misplaced ${canary} note`]);
    // what a writer may send: a place inside the segment, one byte off its frame
    const misplaced = body.entries.map((e, i) => (i === 1 ? { ...e, offset: e.offset + 1, length: e.length - 1 } : e));
    expect((await vault.log.register(body.segment, misplaced)).map((r) => r.status)).toEqual(['registered', 'registered']);
    expect((await scoped(`${canary} note`, subject)).hits.map((h) => h.id)).toEqual([body.entries[0]!.entryId]);
    // the subject's listing reads past it too
    expect((await vault.log.read(subject)).entries.map((e) => e.entryId)).toEqual([body.entries[0]!.entryId]);
  });

  it(`ranks the newest ${QUEUED_RANKED} queued entries of the scope, ${QUEUED_BYTES / 1024} KiB of frames at most: an older one is found once indexed`, async () => {
    const vault = tv.app;
    const subject = `user:queued-bytes-${rand()}`;
    const big = `okapi${rand()}`;
    const small = `dugong${rand()}`;
    // the oldest of five entries of 60 KiB: past the budget counted from the newest, left to the indexer
    const pad = (what: string) => `the ${what} note ${'padding words '.repeat((60 * 1024) / 14)}`;
    const large = await registerTexts(vault, subject, [pad(big), pad('second'), pad('third'), pad('fourth'), pad('fifth')]);
    const after = await registerTexts(vault, subject, [`the ${small} note`]);
    expect((await scoped(small, subject, 'lexical')).hits.map((h) => h.id)).toEqual(after.ids);
    expect((await scoped(big, subject, 'lexical')).hits.map((h) => h.id)).not.toContain(large.ids[0]);
    await vault.log.drained({ timeoutMs: 60_000 });
    expect((await scoped(big, subject, 'lexical')).hits.map((h) => h.id)).toEqual([large.ids[0]]);
  });

  it(`ranks the newest ${QUEUED_RANKED} queued entries of the scope: an older one is found once indexed`, async () => {
    const vault = tv.app;
    const subject = `user:queued-many-${rand()}`;
    const oldest = `narwhal${rand()}`;
    const newest = `pangolin${rand()}`;
    const first = await registerTexts(vault, subject, [`the ${oldest} note, queued first`]);
    const rest = await registerTexts(
      vault,
      subject,
      Array.from({ length: QUEUED_RANKED }, (_, i) => (i === QUEUED_RANKED - 1 ? `the ${newest} note, queued last` : `filler note number ${i}`)),
    );
    expect((await scoped(newest, subject)).hits[0]?.id).toBe(rest.ids.at(-1));
    expect((await scoped(oldest, subject, 'lexical')).hits.map((h) => h.id)).not.toContain(first.ids[0]);
    await vault.log.drained({ timeoutMs: 60_000 });
    expect((await scoped(oldest, subject, 'lexical')).hits.map((h) => h.id)).toEqual(first.ids);
  });

  it('merges the two rankings by score, each record once, the filter applied to the queued ones', () => {
    const hit = (id: string, score: number) => ({ id, type: 'entry' as const, keyId: 'k', score });
    const indexed = [hit('a', 0.9), hit('b', 0.5)];
    const queued = [hit('q1', 0.7), hit('b', 0.8), hit('q2', 0.6), hit('q3', 0.95)];
    expect(mergeRanked(indexed, queued, 3, (id) => id !== 'q3').map((h) => [h.id, h.score])).toEqual([
      ['a', 0.9],
      ['q1', 0.7],
      ['q2', 0.6],
    ]);
    expect(mergeRanked(indexed, queued, 10, () => true).map((h) => h.id)).toEqual(['q3', 'a', 'q1', 'q2', 'b']);
  });
});

describe('an embedder that refuses a queued entry', () => {
  let tv: TestVault;
  beforeAll(async () => {
    const inner = new HashingEmbedder(512);
    const refusing: Embedder = {
      model: inner.model,
      dimensions: inner.dimensions,
      embed: async (texts) => {
        if (texts.some((t) => t.includes('refused-by-the-embedder')))
          throw new LetheError('unavailable', 'the embedder refused the input', { retryable: true });
        return inner.embed(texts);
      },
    };
    tv = await openTestVault({ app: { indexWorker: false, embedder: refusing } });
  });
  afterAll(async () => {
    await tv?.close();
  });

  it('the search answers from the index alone, as before the entry was registered', async () => {
    const subject = `user:queued-refused-${rand()}`;
    const canary = `quokka${rand()}`;
    const kept = await registerTexts(tv.app, subject, [`the ${canary} garden`]);
    await tv.app.log.drained({ timeoutMs: 60_000 });
    await registerTexts(tv.app, subject, [`the ${canary} garden, refused-by-the-embedder`]);
    const { hits } = await tv.app.search.search(`${canary} garden`, 5, { subjects: [subject] });
    expect(hits.map((h) => h.id)).toEqual(kept.ids);
  });
});

describe('on the embedded default (PGlite)', () => {
  let tv: TestVault;
  beforeAll(async () => {
    tv = await openTestVault({ embedded: true, app: { indexWorker: false } });
  });
  afterAll(async () => {
    await tv?.close();
  });

  it("a subject's search finds its entry still queued, another subject's search does not", async () => {
    const canary = `axolotl${rand()}`;
    const subject = `user:queued-embedded-${rand()}`;
    const { ids } = await registerTexts(tv.app, subject, [`the ${canary} pond is deep`]);
    expect((await tv.app.search.search(`${canary} pond`, 5, { subjects: [subject] })).hits.map((h) => h.id)).toEqual(ids);
    expect((await tv.app.search.search(`${canary} pond`, 5, { subjects: [`user:other-${rand()}`] })).hits).toEqual([]);
  });
});

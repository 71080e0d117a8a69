/**
 * Retrieval quality of the built-in embedder on honest paraphrases, through a real
 * vault (PostgreSQL, local object store): one entry per subject, one hand-written
 * question per entry in other words. The corpus is test/search/paraphrases.json.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stem, tokenize } from '../../src/vectors/embedder.js';
import { openTestVault, type TestVault } from '../support/vault.js';

interface Pair {
  readonly subject: string;
  readonly entry: string;
  readonly query: string;
}

const corpus = JSON.parse(readFileSync(new URL('./paraphrases.json', import.meta.url), 'utf8')) as { pairs: Pair[] };

/**
 * The bar: the built-in embedder puts the right entry first for at least half of
 * these paraphrases ("most cases"). It is lexical — words, stems, character trigrams
 * — so questions that share no wording with their entry ("mum" / "mother", "book
 * club" / "reading group") are beyond it; a model behind the OpenAI-compatible
 * adapter is for those. Measured on this corpus with lethe-hash-v3-512 (the
 * default): 16 of 30 first (0.533), MRR@5 0.641; at 384 dimensions 14/30, at 1024
 * 19/30. The embedder is deterministic, so this does not flake.
 */
const MIN_TOP1 = 0.5;

// Words too common to count as shared wording between an entry and its question.
const FUNCTION_WORDS = new Set(
  (
    'a an and are as at be been but by can could did do does for from had has have he her hers him his how i if in into is it its ' +
    'me my no not now of on one or our she so than that the their them they this to too us was we were what when where which who ' +
    'why will with would you your about after all also any each every just more most only other out over own same should some ' +
    'such then there these those through under up very while right still s t'
  ).split(' '),
);

function contentStems(text: string): Set<string> {
  return new Set(
    tokenize(text)
      .filter((w) => !FUNCTION_WORDS.has(w))
      .map(stem),
  );
}

describe('paraphrased questions find their entry with the built-in embedder', () => {
  let tv: TestVault;
  const ids = new Map<string, string>(); // subject → entry id

  beforeAll(async () => {
    tv = await openTestVault();
    for (const p of corpus.pairs) {
      const { entryId } = await tv.app.log.append(p.subject, { text: p.entry, kind: 'fact' }, 'writer');
      ids.set(p.subject, entryId);
    }
  });
  afterAll(async () => {
    await tv?.close();
  });

  it('the corpus is honest: at least 25 subjects, distinct entries, and every question shares at most two word stems with its entry', () => {
    expect(corpus.pairs.length).toBeGreaterThanOrEqual(25);
    expect(new Set(corpus.pairs.map((p) => p.subject)).size).toBe(corpus.pairs.length);
    expect(new Set(corpus.pairs.map((p) => p.entry)).size).toBe(corpus.pairs.length);
    for (const p of corpus.pairs) {
      const entry = contentStems(p.entry);
      const shared = [...contentStems(p.query)].filter((s) => entry.has(s));
      expect(shared.length, `${p.query} shares ${shared.join(', ')}`).toBeLessThanOrEqual(2);
      expect(p.entry.toLowerCase()).not.toContain(p.query.toLowerCase());
    }
  });

  it(`ranks the right entry first for at least ${MIN_TOP1 * 100}% of the questions (hit rate and MRR@5 printed)`, async () => {
    const ranks: Array<{ subject: string; rank: number | undefined; top: string | undefined }> = [];
    for (const p of corpus.pairs) {
      const { hits } = await tv.app.search.search(p.query, 5, { allSubjects: true });
      expect(hits.length).toBe(5);
      const at = hits.findIndex((h) => h.id === ids.get(p.subject));
      if (at >= 0) expect(hits[at]!.text).toBe(p.entry);
      ranks.push({ subject: p.subject, rank: at >= 0 ? at + 1 : undefined, top: hits[0]?.text });
    }
    const n = ranks.length;
    const top1 = ranks.filter((r) => r.rank === 1).length;
    const mrr = ranks.reduce((sum, r) => sum + (r.rank ? 1 / r.rank : 0), 0) / n;
    const misses = ranks.filter((r) => r.rank !== 1).map((r) => `  ${r.subject}: rank ${r.rank ?? '>5'}, first was "${r.top}"`);
    console.log(
      `paraphrase retrieval (${tv.app.vectors.embedder.model}, ${n} entries): top-1 hit rate ${top1}/${n} = ${(top1 / n).toFixed(3)}, ` +
        `MRR@5 ${mrr.toFixed(3)}${misses.length ? `\n${misses.join('\n')}` : ''}`,
    );
    expect(top1 / n).toBeGreaterThanOrEqual(MIN_TOP1);
  });
});

/**
 * BM25 over the lexical index (src/vectors/lexical-rank.ts): scores counted over the
 * scope only, and a removed record leaves no frequency behind.
 */
import { describe, expect, it } from 'vitest';
import { bm25, bm25Outside, bm25Within } from '../../src/vectors/lexical-rank.js';
import { ShingleIndex } from '../../src/vectors/shingle-index.js';
import { ShingleHasher } from '../../src/vectors/shingles.js';

const hasher = new ShingleHasher(new Uint8Array(32).fill(7));
const file = (index: ShingleIndex, id: string, key: string, text: string) => index.upsert(id, 'entry', key, hasher.setOf(text));
const scoreOf = (hits: ReadonlyArray<{ id: string; score: number }>, id: string) => hits.find((h) => h.id === id)?.score;

describe('BM25 over the lexical index', () => {
  it('ranks the record holding the rarer query words first, and a verbatim phrase above its words apart', () => {
    const index = new ShingleIndex();
    file(index, 'a', 'k1', 'Alice likes green tea in the morning');
    file(index, 'b', 'k1', 'Alice moved to 12 Rose Street last spring');
    file(index, 'c', 'k1', 'Alice bought a green street bike');
    file(index, 'd', 'k1', 'Alice walked down Rose Street');
    const hits = bm25Within(index, hasher.of('Rose Street'), 10, { keyIds: ['k1'] });
    expect(
      hits
        .map((h) => h.id)
        .slice(0, 2)
        .sort(),
    ).toEqual(['b', 'd']);
    expect(hits.map((h) => h.id)).not.toContain('a');
    // "green street" is a pair of c only: c first, a (green, no street) after it
    expect(bm25Within(index, hasher.of('green street'), 10, { keyIds: ['k1'] })[0]!.id).toBe('c');
    // a query of stop words only has no terms: nothing ranked
    expect(bm25Within(index, hasher.of('where is the'), 10, { keyIds: ['k1'] })).toEqual([]);
  });

  it('a scoped ranking counts frequencies in its scope only: records of other keys change no score', () => {
    const index = new ShingleIndex();
    file(index, 'a', 'mine', 'my cat Pickle sleeps on the sofa');
    file(index, 'b', 'mine', 'the sofa is new');
    const before = bm25Within(index, hasher.of('Pickle sofa'), 10, { keyIds: ['mine'] });
    for (let i = 0; i < 50; i++) file(index, `x${i}`, 'theirs', `Pickle the sofa number ${i}`);
    const after = bm25Within(index, hasher.of('Pickle sofa'), 10, { keyIds: ['mine'] });
    expect(after).toEqual(before);
    expect(after.every((h) => h.keyId === 'mine')).toBe(true);
  });

  it("a removed record's words change no other record's score: frequencies are updated on removal", () => {
    const index = new ShingleIndex();
    file(index, 'a', 'k', 'Maya adopted a beagle called Toast');
    file(index, 'b', 'k', 'Maya works at the bakery');
    file(index, 'c', 'k', 'the bakery opens at six');
    const query = hasher.of('Maya beagle bakery');
    const before = { scoped: bm25Within(index, query, 10, { keyIds: ['k'] }), global: bm25(index, query, 10) };
    file(index, 'd', 'k', 'Maya beagle bakery beagle');
    file(index, 'e', 'gone', 'a beagle at the bakery');
    const during = bm25Within(index, query, 10, { keyIds: ['k'] });
    expect(scoreOf(during, 'a')).not.toBe(scoreOf(before.scoped, 'a'));
    index.remove('d');
    index.removeKey('gone');
    expect(bm25Within(index, query, 10, { keyIds: ['k'] })).toEqual(before.scoped);
    expect(bm25(index, query, 10)).toEqual(before.global);
  });

  it('keeps to the scope and to the filter, and the global ranking finds every key', () => {
    const index = new ShingleIndex();
    file(index, 'a', 'k1', 'the violin lesson is on Tuesday');
    file(index, 'b', 'k2', 'the violin lesson moved to Friday');
    file(index, 'art', 'k3', 'a summary: violin lessons');
    expect(bm25Within(index, hasher.of('violin lesson'), 10, { keyIds: ['k1'] }).map((h) => h.id)).toEqual(['a']);
    expect(
      bm25Within(index, hasher.of('violin lesson'), 10, { keyIds: ['k1'], ids: ['art'] })
        .map((h) => h.id)
        .sort(),
    ).toEqual(['a', 'art']);
    expect(bm25Within(index, hasher.of('violin'), 10, { keyIds: ['k1', 'k2'] }, (id) => id !== 'a').map((h) => h.id)).toEqual(['b']);
    expect(
      bm25(index, hasher.of('violin'), 10)
        .map((h) => h.id)
        .sort(),
    ).toEqual(['a', 'art', 'b']);
    expect(bm25(index, hasher.of('violin'), 1)).toHaveLength(1);
  });

  it('a record the index does not hold yet scores as it would filed in the scope (bm25Outside), frequencies counted with it', () => {
    const index = new ShingleIndex();
    file(index, 'a', 'k', 'Maya adopted a beagle called Toast');
    file(index, 'b', 'k', 'Maya works at the bakery');
    file(index, 'x', 'other', 'beagle beagle bakery');
    const query = hasher.of('beagle bakery Toast');
    const text = 'the beagle sleeps at the bakery';
    file(index, 'new', 'k', text);
    const filed = bm25Within(index, query, 10, { keyIds: ['k'] });
    index.remove('new');
    const [outside] = bm25Outside(index, query, { keyIds: ['k'] }, [hasher.setOf(text)]);
    expect(outside).toBeGreaterThan(0);
    expect(outside).toBeCloseTo(scoreOf(filed, 'new')!, 12);
    // a second one counts in the frequencies too; one matching no term scores 0
    const [again, none] = bm25Outside(index, query, { keyIds: ['k'] }, [hasher.setOf(text), hasher.setOf('nothing in common here')]);
    expect(again).not.toBe(outside);
    expect(none).toBe(0);
    // the others' scores are unchanged by the outside record (it is not filed)
    expect(bm25Within(index, query, 10, { keyIds: ['k'] }).map((h) => h.id)).not.toContain('new');
  });
});

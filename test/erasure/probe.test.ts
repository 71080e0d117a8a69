/** The reconstruction probe's pure parts: shingles, keyed hashes, scores, the sealed form. */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { randomBytes } from '../../src/crypto/index.js';
import {
  containment,
  decodeFingerprints,
  encodeFingerprints,
  keyedShingles,
  MATCH_MIN_SCORE,
  type ProbeCandidate,
  type RecordFingerprint,
  scoreProbe,
  shingleTexts,
} from '../../src/erasure/probe.js';
import { HashingEmbedder } from '../../src/vectors/embedder.js';

const key = randomBytes(32);
const embedder = new HashingEmbedder(512);

async function record(id: string, text: string): Promise<RecordFingerprint> {
  const [vector] = await embedder.embed([text]);
  return { id, vector: vector!, shingles: keyedShingles(text, key) };
}

async function candidate(id: string, text: string, tier: ProbeCandidate['tier'] = 'log'): Promise<ProbeCandidate> {
  const [vector] = await embedder.embed([text]);
  return { id, tier, vector: vector!, shingles: keyedShingles(text, key) };
}

describe('shingles', () => {
  it('pairs consecutive content words, dropping stop words and stemming', () => {
    expect(shingleTexts('My home address is 14 Rue des Lilas')).toEqual(['home', 'addres', '14', 'rue', 'des', 'lila', 'home addres', 'addres 14', '14 rue', 'rue des', 'des lila']);
    expect(shingleTexts('the and of')).toEqual([]);
    expect(shingleTexts('Lyon')).toEqual(['lyon']);
    expect(shingleTexts('Lyon, Lyon')).toEqual(['lyon', 'lyon lyon']);
  });

  it('are keyed: the same text gives the same hashes under one key and unrelated ones under another', () => {
    const text = 'penicillin allergy noted by the clinic';
    expect([...keyedShingles(text, key)]).toEqual([...keyedShingles(text, key)]);
    const other = keyedShingles(text, randomBytes(32));
    expect([...keyedShingles(text, key)].some((h) => other.has(h))).toBe(false);
    // the hashes never hold the words
    for (const h of keyedShingles(text, key)) expect(h).not.toMatch(/penicillin|allergy|clinic/);
  });

  it('containment is the fraction of the record found in the candidate', () => {
    expect(containment(new Set(['a', 'b', 'c', 'd']), new Set(['b', 'd', 'x']))).toBe(0.5);
    expect(containment(new Set(), new Set(['x']))).toBe(0);
  });
});

describe('scoreProbe', () => {
  it('finds a paraphrase of the erased address in another record and names it', async () => {
    const erased = [await record('entry_a1', 'My home address is 14 Rue des Lilas, Lyon; I moved there in March.')];
    const note = await candidate('entry_b1', "Dropped the parcel at Alice's place, 14 rue des Lilas in Lyon, she moved there in March.");
    const unrelated = await candidate('entry_b2', 'Bob ordered new running shoes for the marathon.');
    const { recovered, matches } = scoreProbe(erased, [note, unrelated], 0.9);
    expect(recovered).toBeGreaterThan(0.15);
    expect(matches.map((m) => m.id)).toEqual(['entry_b1']);
  });

  it('counts shared vocabulary below the match floor as nothing', async () => {
    const erased = [await record('entry_a1', 'Carl walks the dog every morning before work near the old harbour lighthouse.')];
    const { recovered, matches } = scoreProbe(erased, [await candidate('entry_c1', 'Dana walks to work.')], 0.9);
    expect(recovered).toBe(0);
    expect(matches).toEqual([]);
  });

  it('reports nothing when only unrelated text survives', async () => {
    const erased = [await record('entry_a1', 'Alice keeps her spare key under the blue flowerpot.')];
    const { recovered, matches } = scoreProbe(erased, [await candidate('entry_c1', 'Quarterly revenue grew by four percent.')], 0.9);
    expect(recovered).toBe(0);
    expect(matches).toEqual([]);
  });

  it('weighs records by their content: one record of two recovered is about half', async () => {
    const a = await record('entry_a1', 'Alice keeps her spare key under the blue flowerpot by the door.');
    const b = await record('entry_a2', 'Alice volunteers at the riverside animal shelter every Sunday morning.');
    const copy = await candidate('art_x', 'Alice keeps her spare key under the blue flowerpot by the door.', 'artifacts');
    const { recovered, matches } = scoreProbe([a, b], [copy], 0.99);
    expect(recovered).toBeGreaterThan(0.4);
    expect(recovered).toBeLessThan(0.6);
    expect(matches).toEqual([{ id: 'art_x', tier: 'artifacts', score: 1 }]);
  });

  it('counts a near-identical embedding as recovered only above the similarity setting', async () => {
    const a = await record('entry_a1', 'Alice keeps her spare key under the blue flowerpot.');
    const stale: ProbeCandidate = { id: 'entry_gone', tier: 'vector-index', vector: a.vector, shingles: new Set() };
    expect(scoreProbe([a], [stale], 0.9).recovered).toBe(1);
    expect(scoreProbe([a], [{ ...stale, vector: new Float32Array(512) }], 0.9).recovered).toBe(0);
  });

  it('is bounded 0..1 and only lists candidates scoring at least the match minimum (property)', async () => {
    const words = ['alice', 'key', 'flowerpot', 'lyon', 'rue', 'march', 'shoes', 'tea', 'clinic', 'penicillin'];
    const text = fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 12 }).map((w) => w.join(' '));
    await fc.assert(
      fc.asyncProperty(fc.array(text, { minLength: 1, maxLength: 4 }), fc.array(text, { maxLength: 5 }), async (rs, cs) => {
        const records = await Promise.all(rs.map((t, i) => record(`entry_r${i}`, t)));
        const candidates = await Promise.all(cs.map((t, i) => candidate(`entry_c${i}`, t)));
        const { recovered, matches } = scoreProbe(records, candidates, 0.9);
        expect(recovered).toBeGreaterThanOrEqual(0);
        expect(recovered).toBeLessThanOrEqual(1);
        for (const m of matches) expect(m.score).toBeGreaterThanOrEqual(MATCH_MIN_SCORE);
        if (candidates.length === 0) expect(recovered).toBe(0);
        // whatever is recovered is carried by a named record
        if (recovered > 0) expect(matches.length).toBeGreaterThan(0);
      }),
      { numRuns: 60 },
    );
  });
});

describe('sealed form', () => {
  it('round-trips vectors, shingles and attributes', async () => {
    const r = await record('entry_a1', 'Alice keeps her spare key under the blue flowerpot.');
    const back = decodeFingerprints(encodeFingerprints({ model: embedder.model, records: [r], attributes: ['Alice Moreau'] }));
    expect(back.model).toBe(embedder.model);
    expect(back.attributes).toEqual(['Alice Moreau']);
    expect(back.records[0]!.id).toBe('entry_a1');
    expect([...back.records[0]!.vector]).toEqual([...r.vector]);
    expect([...back.records[0]!.shingles]).toEqual([...r.shingles]);
  });
});

/** The reconstruction probe's pure parts: weights, candidates from the lexical index, scores, the sealed form. */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { randomBytes } from '../../src/crypto/index.js';
import {
  COMMON_MIN_RECORDS,
  combineProbeScores,
  decodeFingerprints,
  encodeFingerprints,
  type ExtraCandidate,
  MATCH_MIN_SCORE,
  NEAR_COPY,
  POSTINGS_BUDGET,
  type RecordFingerprint,
  RUN_SCORE,
  scoreProbe,
  shingleWeight,
} from '../../src/erasure/probe.js';
import { HashingEmbedder } from '../../src/vectors/embedder.js';
import { ShingleIndex } from '../../src/vectors/shingle-index.js';
import { ShingleHasher } from '../../src/vectors/shingles.js';
import { LetheError } from '../../src/errors.js';
import { utf8 } from '../../src/crypto/index.js';

const hasher = new ShingleHasher(randomBytes(32));
const embedder = new HashingEmbedder(512);

async function fingerprint(id: string, text: string): Promise<RecordFingerprint> {
  const [vector] = await embedder.embed([text]);
  return { id, vector: vector!, ...hasher.of(text) };
}

/** A store of surviving records (id → text), indexed as the vault indexes them. */
async function store(records: Record<string, string>) {
  const index = new ShingleIndex();
  const vectors = new Map<string, Float32Array>();
  for (const [id, text] of Object.entries(records)) {
    index.upsert(id, id.startsWith('art_') ? 'artifact' : 'entry', `key_${id}`, hasher.setOf(text));
    vectors.set(id, (await embedder.embed([text]))[0]!);
  }
  return { index, vectors };
}

async function probe(
  erased: Record<string, string>,
  survivors: Record<string, string>,
  options: { extra?: ExtraCandidate[]; dismissed?: string[]; similarity?: number } = {},
) {
  const { index, vectors } = await store(survivors);
  const records = await Promise.all(Object.entries(erased).map(([id, text]) => fingerprint(id, text)));
  return scoreProbe({
    index,
    records,
    extra: options.extra ?? [],
    vectorOf: (id) => vectors.get(id),
    similarity: options.similarity ?? 0.9,
    dismissed: new Map((options.dismissed ?? []).map((id) => [id, { score: 1 }])),
  });
}

const filler = (n: number, seed: number) =>
  Array.from(
    { length: n },
    (_, i) =>
      ['project', 'timeline', 'budget', 'review', 'team', 'agreed', 'quarter', 'item', 'discussed', 'owner', 'vendor', 'milestone'][(i * 7 + seed) % 12],
  ).join(' ');

describe('shingle weights', () => {
  it('weigh rare shingles more, and nothing once a shingle is common', () => {
    expect(shingleWeight(0, 1000)).toBeGreaterThan(shingleWeight(5, 1000));
    expect(shingleWeight(5, 1000)).toBeGreaterThan(shingleWeight(COMMON_MIN_RECORDS, 1000));
    expect(shingleWeight(COMMON_MIN_RECORDS + 1, 1000)).toBe(0);
    // in a large store the common line is a fraction of it
    expect(shingleWeight(5000, 1_000_000)).toBeGreaterThan(0);
    expect(shingleWeight(10_001, 1_000_000)).toBe(0);
    // a shingle in every record of a small store weighs little; one found nowhere else never weighs 0
    expect(shingleWeight(3, 3)).toBeLessThan(shingleWeight(0, 3) / 4);
    expect(shingleWeight(0, 0)).toBeGreaterThan(0);
  });
});

describe('scoreProbe', () => {
  it('finds a verbatim sentence inside a long record that only shares words with the decoys', async () => {
    const secret = "Walter keeps the vault combination 7741 written inside his grandmother's cookbook.";
    const decoys = Object.fromEntries(
      Array.from({ length: 10 }, (_, i) => [`entry_note${i}`, `Note ${i}: the cookbook club meets Thursday; bring your grandmother's recipes.`]),
    );
    const result = await probe({ entry_w1: secret }, { entry_long: `${filler(300, 1)} ${secret} ${filler(300, 5)}`, ...decoys });
    expect(result.matches.map((m) => m.id)).toEqual(['entry_long']);
    expect(result.recovered).toBe(1);
    expect(result.examined.shingleIndex).toBeGreaterThanOrEqual(1);
  });

  it('does not accuse records that share only template words', async () => {
    const result = await probe(
      { entry_a1: 'Alice said her favourite tea is XK-2291.' },
      { entry_b1: 'Bob said his favourite game is QZ-7713.', art_sum: 'Bob said his favourite game is QZ-7713.' },
    );
    expect(result.matches).toEqual([]);
    expect(result.recovered).toBe(0);
  });

  it('names a partial quote of six content words in order', async () => {
    const erased =
      'During the retreat Priya explained that the Halvorsen acquisition closes quietly next spring, and legal should prepare the Oslo filings before the board meets.';
    const quote = `${filler(40, 2)} someone mentioned the Halvorsen acquisition closes quietly next spring apparently ${filler(40, 3)}`;
    const result = await probe({ entry_p1: erased }, { entry_q: quote, entry_other: filler(60, 4) });
    expect(result.matches.map((m) => m.id)).toEqual(['entry_q']);
    expect(result.matches[0]!.score).toBeGreaterThanOrEqual(RUN_SCORE);
  });

  it('leaves a dismissed record out of recovered and lists it apart', async () => {
    const erased = { entry_a1: 'Alice keeps her spare key under the blue flowerpot by the door.' };
    const survivors = { entry_part: 'The blue flowerpot by the door is new; Alice bought it.', entry_x: 'Quarterly revenue grew.' };
    const counted = await probe(erased, survivors);
    expect(counted.matches).toEqual([{ id: 'entry_part', tier: 'log', score: expect.any(Number) }]);
    const score = counted.matches[0]!.score;
    expect(score).toBeLessThan(NEAR_COPY);
    const dismissed = await probe(erased, survivors, { dismissed: ['entry_part'] });
    expect(dismissed.recovered).toBe(0);
    expect(dismissed.matches).toEqual([]);
    expect(dismissed.dismissedMatches).toEqual([{ id: 'entry_part', score }]);
  });

  it('names a verbatim copy a near copy, and a ruling never dismisses one (it lapses)', async () => {
    const erased = { entry_a1: 'Alice keeps her spare key under the blue flowerpot by the door.' };
    const survivors = { entry_copy: 'Alice keeps her spare key under the blue flowerpot by the door.', entry_x: 'Quarterly revenue grew.' };
    expect((await probe(erased, survivors)).matches).toEqual([{ id: 'entry_copy', tier: 'log', score: 1, nearCopy: true }]);
    const dismissed = await probe(erased, survivors, { dismissed: ['entry_copy'] });
    expect(dismissed.recovered).toBe(1);
    expect(dismissed.lapsed).toEqual(['entry_copy']);
    expect(dismissed.dismissedMatches).toEqual([]);
  });

  it('weighs records by their private content: one record of two recovered is about half', async () => {
    const result = await probe(
      {
        entry_a1: 'Alice keeps her spare key under the blue flowerpot by the door.',
        entry_a2: 'Alice volunteers at the riverside animal shelter every Sunday morning.',
      },
      { art_x: 'Alice keeps her spare key under the blue flowerpot by the door.', entry_y: 'Lunch menu: soup.' },
      { extra: [{ id: 'art_x', source: 'provenance' }] },
    );
    expect(result.recovered).toBeGreaterThan(0.4);
    expect(result.recovered).toBeLessThan(0.6);
    expect(result.matches).toEqual([{ id: 'art_x', tier: 'artifacts', score: 1, nearCopy: true }]);
    expect(result.examined.provenance).toBe(1);
  });

  it('counts a vector neighbour above the similarity setting, and an unreadable indexed vector', async () => {
    const text = 'Alice keeps her spare key under the blue flowerpot.';
    const { index, vectors } = await store({ entry_other: 'Completely different words here.' });
    const a = await fingerprint('entry_a1', text);
    const base = { index, records: [a], extra: [], vectorOf: (id: string) => vectors.get(id), similarity: 0.9, dismissed: new Map() };
    expect(scoreProbe({ ...base, unreadable: [{ id: 'entry_gone', vector: a.vector }] }).matches).toEqual([
      { id: 'entry_gone', tier: 'vector-index', score: 1, nearCopy: true },
    ]);
    expect(scoreProbe({ ...base, unreadable: [{ id: 'entry_gone', vector: new Float32Array(512) }] }).recovered).toBe(0);
  });

  it('does not look candidates up by a shingle that is common (in over 1% and 20 of the records)', async () => {
    const many = Object.fromEntries(Array.from({ length: POSTINGS_BUDGET + 5 }, (_, i) => [`entry_m${i}`, `zebra ${i}`]));
    const result = await probe({ entry_a1: 'zebra crossing at Halden station' }, many);
    expect(result.cappedShingles).toBe(0); // 'zebra' is common here (over 1% and 20 records): it weighs nothing and is not looked up
    expect(result.examined.shingleIndex).toBe(0);
  });

  it('finds a record copied into more records than the common line, and does not flag everyday short messages copied as often', async () => {
    const note = 'Alice is on leave for lupus treatment until the end of March.';
    const survivors: Record<string, string> = {};
    for (let i = 0; i < 500; i++) survivors[`entry_f${i}`] = filler(12, i);
    for (let i = 0; i < 30; i++) survivors[`entry_copy${i}`] = `Standup ${i}: ${note}`;
    for (let i = 0; i < 40; i++) survivors[`entry_ok${i}`] = 'ok thanks see you tomorrow';
    const result = await probe({ entry_a1: note, entry_a2: 'ok thanks see you tomorrow', entry_a3: 'Alice booked the Halden cabin for 12 June.' }, survivors);
    // every copy is named; the everyday message is not, and it does not dilute what is recovered
    expect(result.matches.map((m) => m.id).sort()).toEqual(
      Object.keys(survivors)
        .filter((id) => id.startsWith('entry_copy'))
        .sort(),
    );
    expect(result.fallbacks).toBeGreaterThanOrEqual(1);
    expect(result.recovered).toBeGreaterThan(0.4);
  });

  it('finds a verbatim copy whose every shingle is on more posting lists than POSTINGS_BUDGET, through its rarest shingle', async () => {
    const text = 'Quentin moved the Ravensburg servers to the Tromso datacentre';
    const index = new ShingleIndex();
    const { words, pairs } = hasher.of(text);
    const subjectShingles = [...words, ...pairs];
    // 100,000 records; each of the text's shingles is also in 600 unrelated records (over POSTINGS_BUDGET, under 1%)
    let n = 0;
    for (let i = 0; i < 100_000; i++) {
      const own = [hasher.setOf(`filler ${i}`)[0]!];
      for (const [j, h] of subjectShingles.entries()) if ((i + j * 7919) % 166 === 0) own.push(h);
      index.upsert(`entry_${n++}`, 'entry', `key_${i}`, Float64Array.from(new Set(own)).sort());
    }
    for (const h of subjectShingles) expect(index.df(h)).toBeGreaterThan(POSTINGS_BUDGET);
    index.upsert('entry_copy', 'entry', 'key_copy', hasher.setOf(`Log: ${text}.`));
    const [vector] = await embedder.embed([text]);
    const result = scoreProbe({
      index,
      records: [{ id: 'entry_q', vector: vector!, words, pairs }],
      extra: [],
      vectorOf: () => undefined,
      similarity: 0.9,
      dismissed: new Map(),
    });
    expect(result.cappedShingles).toBeGreaterThan(0);
    expect(result.matches.map((m) => m.id)).toEqual(['entry_copy']);
  });

  it('a dismissal lapses when the record scores higher than when it was ruled, or was rewritten under another key', async () => {
    const erased = { entry_a1: 'Alice keeps her spare key under the blue flowerpot by the door.' };
    const survivors = { entry_part: 'The blue flowerpot by the door is new; Alice bought it.', entry_x: 'Quarterly revenue grew.' };
    const { index, vectors } = await store(survivors);
    const records = [await fingerprint('entry_a1', erased.entry_a1)];
    const base = { index, records, extra: [], vectorOf: (id: string) => vectors.get(id), similarity: 0.9 };
    const score = scoreProbe({ ...base, dismissed: new Map() }).matches[0]!.score;
    expect(scoreProbe({ ...base, dismissed: new Map([['entry_part', { score, keyId: 'key_entry_part' }]]) }).matches).toEqual([]);
    const higher = scoreProbe({ ...base, dismissed: new Map([['entry_part', { score: score - 0.1, keyId: 'key_entry_part' }]]) });
    expect(higher.matches.map((m) => m.id)).toEqual(['entry_part']);
    expect(higher.lapsed).toEqual(['entry_part']);
    const rekeyed = scoreProbe({ ...base, dismissed: new Map([['entry_part', { score, keyId: 'key_before' }]]) });
    expect(rekeyed.matches.map((m) => m.id)).toEqual(['entry_part']);
    expect(rekeyed.recovered).toBeGreaterThan(0);
  });

  it('is bounded 0..1, names only candidates at or above the match minimum, and names whatever it recovers (property)', async () => {
    const words = ['alice', 'key', 'flowerpot', 'lyon', 'rue', 'march', 'shoes', 'tea', 'clinic', 'penicillin', 'oslo', '4411'];
    const text = fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 12 }).map((w) => w.join(' '));
    await fc.assert(
      fc.asyncProperty(fc.array(text, { minLength: 1, maxLength: 4 }), fc.array(text, { maxLength: 6 }), async (rs, cs) => {
        const result = await probe(Object.fromEntries(rs.map((t, i) => [`entry_r${i}`, t])), Object.fromEntries(cs.map((t, i) => [`entry_c${i}`, t])));
        expect(result.recovered).toBeGreaterThanOrEqual(0);
        expect(result.recovered).toBeLessThanOrEqual(1);
        for (const m of result.matches) expect(m.score).toBeGreaterThanOrEqual(MATCH_MIN_SCORE);
        if (cs.length === 0) expect(result.recovered).toBe(0);
        if (result.recovered > 0) expect(result.matches.length).toBeGreaterThan(0);
      }),
      { numRuns: 60 },
    );
  });
});

describe('combineProbeScores (a sharded probe)', () => {
  it('two shards scored apart find what one index finds: each copy on its own shard, the same recovered', async () => {
    const erased = {
      entry_a1: "Walter keeps the vault combination 7741 written inside his grandmother's cookbook.",
      entry_a2: 'During the retreat Priya explained that the Halvorsen acquisition closes quietly next spring.',
    };
    const left = { entry_c1: `${filler(40, 1)} Walter keeps the vault combination 7741 written inside his grandmother's cookbook.`, entry_n1: filler(50, 2) };
    const right = { entry_c2: 'someone mentioned the Halvorsen acquisition closes quietly next spring apparently', entry_n2: filler(50, 3) };
    const whole = await probe(erased, { ...left, ...right });
    const parts = [await probe(erased, left), await probe(erased, right)];
    const combined = combineProbeScores(parts);
    expect(combined.matches.map((m) => m.id).sort()).toEqual(whole.matches.map((m) => m.id).sort());
    expect(combined.matches.map((m) => m.id).sort()).toEqual(['entry_c1', 'entry_c2']);
    // each shard finds one of the two records carried; together they carry both
    for (const p of parts) expect(p.recovered).toBeLessThan(whole.recovered);
    expect(combined.recovered).toBeCloseTo(whole.recovered, 1);
    expect(combined.examined.shingleIndex).toBe(parts[0]!.examined.shingleIndex + parts[1]!.examined.shingleIndex);
  });

  it('a dismissal on one shard is kept; one part alone is returned as it is', async () => {
    const erased = { entry_a1: 'Alice keeps her spare key under the blue flowerpot by the door.' };
    const part = await probe(erased, { entry_part: 'The blue flowerpot by the door is new; Alice bought it.' }, { dismissed: ['entry_part'] });
    const other = await probe(erased, { entry_x: 'Quarterly revenue grew.' });
    const combined = combineProbeScores([part, other]);
    expect(combined.matches).toEqual([]);
    expect(combined.dismissedMatches.map((d) => d.id)).toEqual(['entry_part']);
    expect(combined.recovered).toBe(0);
    expect(combineProbeScores([part])).toBe(part);
  });

  it("a record one part counts as a match (its ruling lapsed there) stays a match, whatever another part's dismissal says", () => {
    const base = { recovered: 0, lapsed: [], examined: { shingleIndex: 0, vectorIndex: 0, provenance: 0 }, cappedShingles: 0, fallbacks: 0, perRecord: [] };
    const dismissedHere = { ...base, matches: [], dismissedMatches: [{ id: 'entry_x', score: 0.4 }] };
    const lapsedThere = { ...base, matches: [{ id: 'entry_x', tier: 'log' as const, score: 0.6 }], dismissedMatches: [], lapsed: ['entry_x'] };
    const combined = combineProbeScores([dismissedHere, lapsedThere]);
    expect(combined.matches.map((m) => m.id)).toEqual(['entry_x']);
    expect(combined.dismissedMatches).toEqual([]);
    expect(combined.lapsed).toEqual(['entry_x']);
  });
});

describe('ShingleIndex', () => {
  it('keeps document frequency exact through removals, key destruction and compaction', () => {
    const index = new ShingleIndex();
    const shared = hasher.setOf('lighthouse harbour');
    // the index copies what it is given and zeroes it: each record its own copy
    for (let i = 0; i < 6000; i++) index.upsert(`entry_${i}`, 'entry', `key_${i % 3}`, i % 2 ? new Float64Array(shared) : hasher.setOf(`record ${i}`));
    // a survivor's set as the index holds it, before the compactions below move it
    index.upsert('entry_keep', 'entry', 'key_keep', hasher.setOf('keeper of the light'));
    const heldBefore = index.setAt(index.slotOf('entry_keep')!)!;
    expect(heldBefore.some((x) => x !== 0)).toBe(true);
    const h = shared[0]!;
    expect(index.df(h)).toBe(3000);
    expect(index.removeKey('key_1')).toBe(2000);
    // key_1 held every third record: of the odd ones (sharing), a third
    expect(index.df(h)).toBe(2000);
    for (let i = 0; i < 6000; i++) index.remove(`entry_${i}`); // triggers compactions on the way
    // a compaction files the live sets anew and zeroes what it leaves
    expect(heldBefore.every((x) => x === 0)).toBe(true);
    expect([...index.setAt(index.slotOf('entry_keep')!)!]).toEqual([...hasher.setOf('keeper of the light')]);
    index.remove('entry_keep');
    expect(index.size).toBe(0);
    expect(index.df(h)).toBe(0);
    expect(index.distinct).toBe(0);
    // what it was given is zeroed at once, and its copy when the record leaves
    const gone = hasher.setOf('harbour lighthouse keeper');
    index.upsert('entry_z', 'entry', 'key_z', gone);
    expect([...gone].every((x) => x === 0)).toBe(true);
    const held = index.setAt(index.slotOf('entry_z')!)!;
    expect(held.some((x) => x !== 0)).toBe(true);
    index.remove('entry_z');
    expect([...held].every((x) => x === 0)).toBe(true);
    expect(index.setAt(0)).toBeUndefined();
    let visited = 0;
    index.postings(h, 10, () => visited++);
    expect(visited).toBe(0);
  });

  it("replaces a record's shingles on upsert", () => {
    const index = new ShingleIndex();
    const before = hasher.setOf('Lisbon');
    index.upsert('art_1', 'artifact', 'vk_1', before);
    index.upsert('art_1', 'artifact', 'vk_2', hasher.setOf('Porto'));
    expect(index.df(before[0]!)).toBe(0);
    expect(index.keyOf('art_1')).toBe('vk_2');
    expect(index.size).toBe(1);
  });
});

describe('sealed form', () => {
  it('round-trips vectors, ordered shingles and attributes', async () => {
    const r = await fingerprint('entry_a1', 'Alice keeps her spare key under the blue flowerpot.');
    const back = decodeFingerprints(encodeFingerprints({ model: embedder.model, records: [r], attributes: ['Alice Moreau'] }));
    expect(back.model).toBe(embedder.model);
    expect(back.attributes).toEqual(['Alice Moreau']);
    expect(back.records[0]!.id).toBe('entry_a1');
    expect([...back.records[0]!.vector]).toEqual([...r.vector]);
    expect(back.records[0]!.words).toEqual(r.words);
    expect(back.records[0]!.pairs).toEqual(r.pairs);
  });

  it('refuses fingerprints of an older format instead of misreading them', () => {
    const old = utf8.encode(JSON.stringify({ model: 'm', attributes: [], records: [{ id: 'entry_a', v: '', s: ['abc'] }] }));
    expect(() => decodeFingerprints(old)).toThrow(LetheError);
  });
});

describe('keyed shingles', () => {
  it('are the same under one key and unrelated under another, and never hold the words', () => {
    const text = 'penicillin allergy noted by the clinic';
    expect(hasher.of(text)).toEqual(hasher.of(text));
    const other = new ShingleHasher(randomBytes(32)).of(text);
    const mine = new Set([...hasher.of(text).words, ...hasher.of(text).pairs]);
    expect([...other.words, ...other.pairs].some((h) => mine.has(h))).toBe(false);
    expect(hasher.of(text).words).toHaveLength(4); // penicillin allergy noted clinic: stop words dropped
    expect(hasher.of(text).pairs).toHaveLength(3);
    for (const h of hasher.of(text).words) expect(Number.isSafeInteger(h)).toBe(true);
  });
});

/**
 * The reconstruction probe against a labelled evaluation set (fixtures/probe-eval): what it
 * finds of an erased subject's content in the records that survive, and what it
 * wrongly flags. The figures are printed; the floors asserted here are the levels the
 * scoring reaches (bench section `probe` reports the same figures).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ExtractiveRegenerator } from '../../src/artifacts/regenerator.js';
import {
  CATEGORIES,
  type Category,
  DISGUISE_CATEGORIES,
  type EvalCorpus,
  generateCorpus,
  POSITIVE,
  type StoreRecord,
} from '../../fixtures/probe-eval/corpus.js';
import { evaluateProbe, formatEvaluation, type ProbeEvaluation } from '../../fixtures/probe-eval/evaluate.js';

describe('probe evaluation set', () => {
  const corpus = generateCorpus();
  let evaluation: ProbeEvaluation;
  const figures = (c: Category) => evaluation.categories.find((x) => x.category === c)!;

  beforeAll(async () => {
    evaluation = await evaluateProbe(corpus);
    console.log(`reconstruction probe on the evaluation set\n${formatEvaluation(evaluation)}`);
    const nsw = figures('paraphrase-no-shared-words');
    console.log(`paraphrase-no-shared-words recall (reported, not asserted): ${((nsw.recall ?? 0) * 100).toFixed(1)}% (${nsw.truePositives}/${nsw.pairs})`);
  }, 120_000);

  it('is deterministic, with at least 200 labelled pairs and 25 per category', () => {
    expect(generateCorpus()).toEqual(corpus);
    expect(corpus.pairs.length).toBeGreaterThanOrEqual(200);
    for (const c of CATEGORIES) expect(corpus.pairs.filter((p) => p.category === c).length, c).toBeGreaterThanOrEqual(25);
    for (const p of corpus.pairs) expect(p.positive).toBe(POSITIVE[p.category]);
    // each erased record is its subject's only record; every id is unique
    const subjectOf = new Map(corpus.store.map((r) => [r.id, r.subject]));
    expect(subjectOf.size).toBe(corpus.store.length);
    for (const p of corpus.pairs) {
      const subject = subjectOf.get(p.erased)!;
      expect(corpus.store.filter((r) => r.subject === subject).map((r) => r.id)).toEqual([p.erased]);
      expect(subjectOf.get(p.surviving)).not.toBe(subject);
    }
    expect(corpus.store.length).toBeGreaterThan(3000);
  });

  it('finds every verbatim quote in a long record and every partial quote', () => {
    for (const c of ['verbatim-in-long', 'partial-quote'] as const) {
      expect(figures(c).recall, `${c} misses: ${JSON.stringify(evaluation.misses.filter((m) => m.category === c))}`).toBe(1);
    }
  });

  it('flags no other instance of a template and no email sharing only boilerplate', () => {
    for (const c of ['template-only', 'boilerplate'] as const) {
      expect(figures(c).falsePositives, `${c} false alarms: ${JSON.stringify(evaluation.falseAlarms.filter((m) => m.category === c))}`).toBe(0);
    }
  });

  it('finds every disguised copy: zero-width spaces, Cyrillic look-alikes, soft hyphens, a number written another way', () => {
    // measured: 30/30 in each class (before the comparison form: 0, 0, 2 and 5 of 30)
    for (const c of DISGUISE_CATEGORIES) {
      expect(figures(c).recall, `${c} misses: ${JSON.stringify(evaluation.misses.filter((m) => m.category === c))}`).toBe(1);
    }
  });

  it('is precise: at least 95% of the flagged labelled records carry the erased content', () => {
    expect(evaluation.precision).toBeGreaterThanOrEqual(0.95);
  });

  it('finds regenerated summaries and key-term paraphrases at the level the scoring reaches', () => {
    // measured: summarised 30/30, paraphrase-key-terms 30/30 (lowest key-term score 0.27, the match floor 0.25)
    expect(figures('summarised').recall).toBeGreaterThanOrEqual(1);
    expect(figures('paraphrase-key-terms').recall).toBeGreaterThanOrEqual(1);
  });
});

// ------------------------------------------------------------------ two stories

/** A small store: records in order, ids given. */
function store(records: Array<[id: string, subject: string, text: string, kind?: 'entry' | 'artifact']>): StoreRecord[] {
  return records.map(([id, subject, text, kind]) => ({ id, subject, text, kind: kind ?? 'entry' }));
}

/** ~`words` words of meeting-minutes filler, deterministic. */
function minutesFiller(words: number): string[] {
  const people = ['Ana', 'Ben', 'Chloe', 'Dev', 'Eva', 'Femi'];
  const things = [
    'budget',
    'timeline',
    'vendor contract',
    'hiring plan',
    'release checklist',
    'office move',
    'customer survey',
    'pricing page',
    'audit findings',
    'training day',
  ];
  const verbs = ['review', 'update', 'circulate', 'postpone', 'finalise', 'estimate'];
  const out: string[] = [];
  let n = 0;
  for (let i = 0; n < words; i++) {
    const s = `${people[i % people.length]} will ${verbs[(i * 7) % verbs.length]} the ${things[(i * 3) % things.length]} before the ${things[(i * 5 + 1) % things.length]} is discussed again on ${['Monday', 'Wednesday', 'Friday'][i % 3]}.`;
    out.push(s);
    n += s.split(/\s+/).length;
  }
  return out;
}

describe('probe stories', () => {
  it("(a) finds a secret sentence quoted inside another subject's 600-word minutes, beside ten notes sharing a few of its words", async () => {
    const secret = "Walter keeps the vault combination 7741-alpha written inside his grandmother's cookbook.";
    const filler = minutesFiller(600);
    filler.splice(37, 0, secret);
    const notes: Array<[string, string, string]> = Array.from({ length: 10 }, (_, i) => [
      `note_${i}`,
      'subject_d',
      [
        `Note ${i}: the cookbook club meets on Thursday; bring your grandmother's recipes.`,
        `Note ${i}: the bank vault tour was cancelled, the museum is closed.`,
        `Note ${i}: found a cookbook with a combination lock diary inside.`,
      ][i % 3]!,
    ]);
    const corpus: EvalCorpus = {
      store: store([['entry_w', 'subject_w', secret], ['minutes_m', 'subject_m', `Minutes of the planning meeting.\n${filler.join(' ')}`], ...notes]),
      pairs: [{ erased: 'entry_w', surviving: 'minutes_m', category: 'verbatim-in-long', positive: true }],
      decoys: notes.map(([id]) => ({ erased: 'entry_w', decoy: id })),
    };
    const e = await evaluateProbe(corpus);
    expect(e.outcomes[0]!.flagged).toBe(true);
    expect(e.matchesBySubject.subject_w).toHaveProperty('minutes_m');
  });

  it('(b) flags nothing after A is erased when a summary was regenerated from B only', async () => {
    const a = 'Alice said her favourite tea is XK-2291';
    const b = 'Bob said his favourite game is QZ-7713';
    const summary = await new ExtractiveRegenerator().regenerate({
      artifactId: 'summary_ab',
      kind: 'summary',
      sources: [{ id: 'entry_b', type: 'entry', text: b }],
    });
    const corpus: EvalCorpus = {
      store: store([
        ['entry_a', 'subject_a', a],
        ['entry_b', 'subject_b', b],
        ['summary_ab', 'workspace', summary, 'artifact'],
      ]),
      pairs: [
        { erased: 'entry_a', surviving: 'entry_b', category: 'template-only', positive: false },
        { erased: 'entry_a', surviving: 'summary_ab', category: 'template-only', positive: false },
      ],
      decoys: [],
    };
    const e = await evaluateProbe(corpus);
    expect(e.matchesBySubject.subject_a).toEqual({});
  });
});

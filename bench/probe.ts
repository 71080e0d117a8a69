/**
 * Probe: how well the reconstruction probe finds an erased subject's content in what
 * survives, and what its lexical part costs as the store grows. Needs
 * `node --expose-gc` (run.ts passes it, and a larger heap).
 *
 *   1. quality  the labelled evaluation set (fixtures/probe-eval/corpus.ts: ~5,000 records of
 *               agent memory over a few hundred subjects, 360 labelled (erased, surviving)
 *               pairs in 12 categories, four of them disguised copies), run through evaluateProbe (fixtures/probe-eval/
 *               evaluate.ts: the whole store in one ShingleIndex and HashingEmbedder(512);
 *               each erased subject's records removed, fingerprinted, scored by scoreProbe
 *               with the vector-index neighbours as extra candidates, put back). Figures:
 *               recall per positive category, false positives per negative one, overall
 *               precision (flagged positives ÷ flagged labelled records).
 *   2. scale    one subject of BENCH_PROBE_SUBJECT records (default 1,000) in stores of
 *               BENCH_PROBE_SMALL (default 10,000) and BENCH_PROBE_LARGE (default
 *               100,000; 1,000,000 with BENCH_FULL=1) records, built straight into a ShingleIndex
 *               (no database), one after the other in this process. Text: 10–40 content
 *               words a record, drawn from a Zipf (s = 1) vocabulary of 500,000 generated
 *               words (each hashed once with the keyed ShingleHasher, pairs combined with
 *               pairHash), one word in ten a number (Zipf over 1..100,000); the subject's
 *               records draw the same way plus its own rare tokens (its name in a third of
 *               them, account and phone numbers, its pet's and street's names). The subject's
 *               records are spread through the store; ids look like lethe's, one key per
 *               ~20 background records. Five background records quote 8 words of one of
 *               the subject's records each (the probe must find them: a check, not a timing).
 *               Memory: heapUsed + arrayBuffers after the build minus before, both after
 *               forced garbage collections (the whole index: postings, per-record sets, ids,
 *               key sets), per record. Then removeKey(subject) (timed) and scoreProbe with
 *               `extra: []` — the shingle-index part of the probe — BENCH_PROBE_RUNS times
 *               (default 5; 3 when quick) after one unmeasured run. Figures: median ms at
 *               each size, large ÷ small (aim ≤ 2: the probe's cost should follow the
 *               subject, not the store), candidates examined, capped shingles.
 */
import { type CategoryFigures, evaluateProbe } from '../fixtures/probe-eval/evaluate.js';
import { DISGUISE_CATEGORIES, generateCorpus } from '../fixtures/probe-eval/corpus.js';
import { scoreProbe, type RecordFingerprint, COMMON_FRACTION, COMMON_MIN_RECORDS, POSTINGS_BUDGET } from '../src/erasure/probe.js';
import { STOP_WORDS } from '../src/vectors/embedder.js';
import { POSTING_SHARDS, ShingleIndex } from '../src/vectors/shingle-index.js';
import { pairHash, ShingleHasher, shingleSet } from '../src/vectors/shingles.js';
import { byMode, envInt, QUICK } from './support/mode.js';
import { gcNow, memNow, runIfMain } from './support/process.js';
import { type Aim, aim, fmtInt, formatAims, fmtNum, fmtRatio, fmtSeconds, type LatencyStats, progress, stats, table } from './support/report.js';
import { mulberry32 as prng, seededId } from '../fixtures/prng.js';

export interface ProbeScaleRun {
  /** Records in the store before the erasure (the subject's included). */
  readonly records: number;
  readonly subjectRecords: number;
  readonly buildSeconds: number;
  /** Of the background records' build: drawing and hashing text, shingleSet (textSeconds), and ShingleIndex.upsert. */
  readonly buildSplit: { readonly textSeconds: number; readonly upsertSeconds: number };
  readonly meanContentWords: number;
  /** Shingles filed over all records, and distinct shingles (posting lists), after the build. */
  readonly filed: number;
  readonly distinct: number;
  readonly memory: {
    readonly deltaBytes: number;
    readonly heapUsedDelta: number;
    readonly arrayBuffersDelta: number;
    readonly bytesPerRecord: number;
    readonly bytesPerShingle: number;
  };
  readonly removeKeyMs: number;
  readonly probe: LatencyStats;
  /** Shingles with more than this many readable records weigh 0. */
  readonly commonAbove: number;
  readonly examined: number;
  readonly cappedShingles: number;
  readonly matches: number;
  readonly recovered: number;
  readonly planted: { readonly found: number; readonly total: number };
}

export interface ProbeResult {
  readonly quality: {
    readonly seconds: number;
    readonly records: number;
    readonly pairs: number;
    readonly categories: CategoryFigures[];
    readonly precision: number;
    readonly flagged: number;
    readonly decoys: { readonly flagged: number; readonly total: number };
    readonly misses: number;
    readonly falseAlarms: number;
  };
  readonly scale: {
    readonly small: ProbeScaleRun;
    readonly large: ProbeScaleRun;
    /** large median ms ÷ small median ms. */
    readonly ratio: number;
    readonly target: number;
    readonly memoryRatio: number;
    /** The entries one JavaScript Map holds (ShingleIndex's postings are one Map). */
  };
  /** Lexical probe large ÷ small (<= 2); precision on the evaluation set (>= 0.95) and quote recall (= 1), as the tests assert. */
  readonly aims: Aim[];
  /** A planted quote the probe did not find makes the run invalid. */
  readonly valid: boolean;
  readonly warnings: string[];
  /** Findings that do not invalidate the figures (the index nearing a Map's size limit). */
  readonly notes: string[];
}

// ------------------------------------------------------------------ helpers

/** The cumulative distribution of a Zipf law over ranks 0..n-1 (weight 1/(rank+1)^s). */
function zipfCdf(n: number, s: number): Float64Array {
  const cdf = new Float64Array(n);
  let acc = 0;
  for (let i = 0; i < n; i++) cdf[i] = acc += 1 / (i + 1) ** s;
  for (let i = 0; i < n; i++) cdf[i]! /= acc;
  return cdf;
}

/** Inverse-CDF sampling of ranks. */
function zipfSampler(cdf: Float64Array, rand: () => number): () => number {
  const n = cdf.length;
  return () => {
    const u = rand();
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

// syllables ending so that the stemmer strips nothing (no -s, -ed, -ly, -ing ...): each word is its own stem
const SYLLABLES = [
  'ka',
  'lo',
  'mi',
  'ter',
  'va',
  'bel',
  'dor',
  'pri',
  'ne',
  'su',
  'bar',
  'ro',
  'gal',
  'fi',
  'tu',
  'mar',
  'le',
  'kor',
  'vi',
  'sto',
  'pa',
  'zul',
  'ri',
  'mo',
];

/** The word of vocabulary rank `i`: at least three syllables, distinct for every rank. */
function vocabularyWord(i: number): string {
  let n = i + SYLLABLES.length ** 2;
  let w = '';
  while (n > 0) {
    w = SYLLABLES[n % SYLLABLES.length]! + w;
    n = Math.floor(n / SYLLABLES.length);
  }
  return STOP_WORDS.has(w) ? `${w}k` : w;
}

const VOCABULARY = 500_000;
const NUMBERS = 100_000;
const RECORDS_PER_KEY = 20;

/**
 * Keyed hashes of the vocabulary's words and of the numbers, each computed once (with
 * hasher.of, as the index would) and kept for every store built in this process. The
 * caches are allocated up front, so filling them during a build adds nothing to the
 * measured memory.
 */
class Vocabulary {
  readonly hasher: ShingleHasher;
  readonly wordHash = new Float64Array(VOCABULARY).fill(NaN);
  readonly numberHash = new Float64Array(NUMBERS).fill(NaN);
  readonly tokenHash = new Map<string, number>();
  readonly wordCdf: Float64Array;
  readonly numberCdf: Float64Array;

  constructor(hasher: ShingleHasher) {
    this.hasher = hasher;
    this.wordCdf = zipfCdf(VOCABULARY, 1);
    this.numberCdf = zipfCdf(NUMBERS, 1);
  }
}

/** Draws record texts as keyed word hashes. */
class TextSource {
  readonly #v: Vocabulary;
  readonly #rand: () => number;
  readonly #word: () => number;
  readonly #number: () => number;
  wordsDrawn = 0;

  constructor(vocabulary: Vocabulary, seed: number) {
    this.#v = vocabulary;
    this.#rand = prng(seed);
    this.#word = zipfSampler(vocabulary.wordCdf, this.#rand);
    this.#number = zipfSampler(vocabulary.numberCdf, this.#rand);
  }

  get rand(): () => number {
    return this.#rand;
  }

  /** The keyed hash of one token's only content word. */
  token(text: string): number {
    let h = this.#v.tokenHash.get(text);
    if (h === undefined) {
      const words = this.#v.hasher.of(text).words;
      if (words.length !== 1) throw new Error(`"${text}" is not one content word`);
      this.#v.tokenHash.set(text, (h = words[0]!));
    }
    return h;
  }

  /** One background word: a vocabulary word, or (one in ten) a number. */
  draw(): number {
    this.wordsDrawn++;
    if (this.#rand() < 0.1) {
      const n = this.#number();
      let h = this.#v.numberHash[n]!;
      if (Number.isNaN(h)) this.#v.numberHash[n] = h = this.#v.hasher.of(String(n + 1)).words[0]!;
      return h;
    }
    const w = this.#word();
    let h = this.#v.wordHash[w]!;
    if (Number.isNaN(h)) {
      const words = this.#v.hasher.of(vocabularyWord(w)).words;
      if (words.length !== 1) throw new Error(`vocabulary word ${vocabularyWord(w)} is not one content word`);
      this.#v.wordHash[w] = h = words[0]!;
    }
    return h;
  }

  /** A background record's words: 10–40 of them. */
  record(): number[] {
    const n = 10 + Math.floor(this.#rand() * 31);
    const out = new Array<number>(n);
    for (let i = 0; i < n; i++) out[i] = this.draw();
    return out;
  }
}

function pairsOf(words: readonly number[]): number[] {
  const pairs = new Array<number>(Math.max(0, words.length - 1));
  for (let i = 0; i + 1 < words.length; i++) pairs[i] = pairHash(words[i]!, words[i + 1]!);
  return pairs;
}

/** The subject's records: background-like text with its own rare tokens mixed in. */
function subjectRecords(src: TextSource, n: number): Array<{ words: number[]; pairs: number[] }> {
  const rand = src.rand;
  const name = ['wendeline', 'okonkwo', 'brandtner'].map((t) => src.token(t));
  const own = ['fennimore', 'quillacollo', 'zanzibarstraat', 'biscotti', 'marlowe', 'tresillian', 'ashbourne', 'gwendraeth'].map((t) => src.token(t));
  const numbers = Array.from({ length: 40 }, () => src.token(String(1_000_000 + Math.floor(rand() * 8_999_999))));
  const out: Array<{ words: number[]; pairs: number[] }> = [];
  for (let i = 0; i < n; i++) {
    const words = src.record();
    const put = (h: number) => words.splice(Math.floor(rand() * (words.length + 1)), 0, h);
    if (rand() < 1 / 3) {
      const at = Math.floor(rand() * words.length);
      words.splice(at, 0, name[0]!, name[1]!, name[2]!);
    }
    if (rand() < 0.5) put(numbers[Math.floor(rand() * numbers.length)]!);
    if (rand() < 0.3) put(own[Math.floor(rand() * own.length)]!);
    out.push({ words, pairs: pairsOf(words) });
  }
  return out;
}

// ------------------------------------------------------------------ 2. scale

function measureScale(vocabulary: Vocabulary, records: number, subjectN: number, runs: number, seed: number): ProbeScaleRun {
  const src = new TextSource(vocabulary, seed);
  const rand = src.rand;
  // the subject's texts and fingerprints exist before the store (the erasure's fingerprints were taken then)
  const subject = subjectRecords(src, subjectN);
  const subjectKey = seededId('key_', rand);
  const fingerprints: RecordFingerprint[] = subject.map((s) => ({ id: seededId('entry_', rand), vector: new Float32Array(0), words: s.words, pairs: s.pairs }));
  // five background records quote 8 words of a subject record each
  const plantedAt = new Map<number, number[]>();
  for (let k = 0; k < 5; k++) {
    const s = subject[Math.floor(rand() * subject.length)]!;
    const start = Math.floor(rand() * Math.max(1, s.words.length - 8));
    plantedAt.set(Math.floor(((k + 0.5) * records) / 5), s.words.slice(start, start + 8));
  }
  const planted: string[] = [];
  gcNow();
  const before = memNow();
  progress(`probe: building a shingle index of ${fmtInt(records)} records (${fmtInt(subjectN)} of the subject)`);
  const t0 = performance.now();
  const index = new ShingleIndex();
  const every = Math.floor(records / subjectN);
  let key = '';
  let background = 0;
  let nextSubject = 0;
  let textMs = 0;
  let upsertMs = 0;
  for (let i = 0; i < records; i++) {
    if (i % every === every - 1 && nextSubject < subjectN) {
      const s = subject[nextSubject]!;
      index.upsert(fingerprints[nextSubject]!.id, 'entry', subjectKey, shingleSet(s));
      nextSubject++;
      continue;
    }
    const g0 = performance.now();
    if (background++ % RECORDS_PER_KEY === 0) key = seededId('key_', rand);
    let words = src.record();
    const quote = plantedAt.get(i);
    if (quote) words = [...words.slice(0, 5), ...quote, ...words.slice(5)];
    const id = seededId('entry_', rand);
    if (quote) planted.push(id);
    const set = shingleSet({ words, pairs: pairsOf(words) });
    const g1 = performance.now();
    index.upsert(id, 'entry', key, set);
    textMs += g1 - g0;
    upsertMs += performance.now() - g1;
    if ((i + 1) % 250_000 === 0) progress(`probe:   ${fmtInt(i + 1)} records`);
  }
  for (; nextSubject < subjectN; nextSubject++) index.upsert(fingerprints[nextSubject]!.id, 'entry', subjectKey, shingleSet(subject[nextSubject]!));
  const buildSeconds = (performance.now() - t0) / 1000;
  gcNow();
  const after = memNow();
  const filed = index.filed;
  const distinct = index.distinct;
  const deltaBytes = after.heapUsed - before.heapUsed + (after.arrayBuffers - before.arrayBuffers);

  const r0 = performance.now();
  const removed = index.removeKey(subjectKey);
  const removeKeyMs = performance.now() - r0;
  if (removed !== subjectN) throw new Error(`removeKey removed ${removed} records, expected ${subjectN}`);

  const input = { index, records: fingerprints, extra: [], vectorOf: () => undefined, similarity: 0.9, dismissed: new Map<string, { score: number }>() };
  progress(`probe: scoreProbe over ${fmtInt(subjectN)} fingerprints in ${fmtInt(index.size)} records (1 unmeasured + ${runs} runs)`);
  const w0 = performance.now();
  let result = scoreProbe(input);
  // a slow probe gets fewer measured runs (BENCH_PROBE_BUDGET_S, default 20 s, for the measured runs of one size)
  const budgetMs = envInt('BENCH_PROBE_BUDGET_S', 20, 1) * 1000;
  const measured = Math.max(1, Math.min(runs, Math.floor(budgetMs / Math.max(1, performance.now() - w0))));
  if (measured < runs) progress(`probe:   one run took ${fmtNum((performance.now() - w0) / 1000, 1)} s: ${measured} measured runs`);
  const samples: number[] = [];
  for (let k = 0; k < measured; k++) {
    const s0 = performance.now();
    result = scoreProbe(input);
    samples.push(performance.now() - s0);
  }
  const flagged = new Set(result.matches.map((m) => m.id));
  const n = index.size;
  return {
    records,
    subjectRecords: subjectN,
    buildSeconds,
    buildSplit: { textSeconds: textMs / 1000, upsertSeconds: upsertMs / 1000 },
    meanContentWords: src.wordsDrawn / records,
    filed,
    distinct,
    memory: {
      deltaBytes,
      heapUsedDelta: after.heapUsed - before.heapUsed,
      arrayBuffersDelta: after.arrayBuffers - before.arrayBuffers,
      bytesPerRecord: deltaBytes / records,
      bytesPerShingle: deltaBytes / filed,
    },
    removeKeyMs,
    probe: stats(samples, 1),
    commonAbove: Math.max(COMMON_MIN_RECORDS, COMMON_FRACTION * n),
    examined: result.examined.shingleIndex,
    cappedShingles: result.cappedShingles,
    matches: result.matches.length,
    recovered: result.recovered,
    planted: { found: planted.filter((id) => flagged.has(id)).length, total: planted.length },
  };
}

// ------------------------------------------------------------------ orchestration

/** The quote categories whose recall test/erasure/probe-eval.test.ts asserts to be 1. */
const QUOTE_CATEGORIES: readonly string[] = ['verbatim-in-long', 'partial-quote'];

export async function runProbe(): Promise<ProbeResult> {
  const smallN = envInt('BENCH_PROBE_SMALL', 10_000, 2_000);
  const largeN = envInt('BENCH_PROBE_LARGE', byMode({ quick: 100_000, normal: 100_000, full: 1_000_000 }), 2_000);
  const subjectN = envInt('BENCH_PROBE_SUBJECT', 1_000, 10);
  const runs = envInt('BENCH_PROBE_RUNS', QUICK ? 3 : 5, 1);
  const warnings: string[] = [];

  progress('probe: evaluation set (fixtures/probe-eval)');
  const q0 = performance.now();
  const evaluation = await evaluateProbe(generateCorpus());
  const quality = {
    seconds: (performance.now() - q0) / 1000,
    records: evaluation.records,
    pairs: evaluation.pairs,
    categories: evaluation.categories,
    precision: evaluation.precision,
    flagged: evaluation.flagged,
    decoys: { flagged: evaluation.decoys.flagged, total: evaluation.decoys.total },
    misses: evaluation.misses.length,
    falseAlarms: evaluation.falseAlarms.length,
  };

  const hasher = new ShingleHasher(new Uint8Array(32).map((_, i) => (i * 53 + 7) & 0xff));
  const vocabulary = new Vocabulary(hasher);
  gcNow();
  const small = measureScale(vocabulary, smallN, subjectN, runs, 11);
  gcNow();
  const large = measureScale(vocabulary, largeN, subjectN, runs, 22);
  hasher.destroy();
  const notes: string[] = [];
  for (const x of [small, large]) {
    if (x.planted.found !== x.planted.total)
      warnings.push(`at ${fmtInt(x.records)} records the probe found ${x.planted.found} of ${x.planted.total} planted quotes`);
  }
  const ratio = large.probe.medianMs / small.probe.medianMs;
  const quoteRecall = Math.min(...quality.categories.filter((c) => QUOTE_CATEGORIES.includes(c.category)).map((c) => c.recall ?? 0));
  const disguiseRecall = Math.min(...quality.categories.filter((c) => DISGUISE_CATEGORIES.includes(c.category)).map((c) => c.recall ?? 0));
  const aims = [
    aim(`lexical probe median, ${fmtInt(largeN)} ÷ ${fmtInt(smallN)} records`, ratio, '<= 2', ratio <= 2),
    aim(`probe precision on the evaluation set (${quality.pairs} pairs)`, quality.precision, '>= 0.95', quality.precision >= 0.95),
    aim(`probe recall, ${QUOTE_CATEGORIES.join(' and ')} (lowest)`, quoteRecall, '= 1', quoteRecall >= 1),
    aim(`probe recall, disguised copies: ${DISGUISE_CATEGORIES.join(', ')} (lowest)`, disguiseRecall, '= 1', disguiseRecall >= 1),
  ];
  return {
    quality,
    aims,
    scale: { small, large, ratio, target: 2, memoryRatio: large.memory.bytesPerRecord / small.memory.bytesPerRecord },
    valid: warnings.length === 0,
    warnings,
    notes,
  };
}

const pct = (x: number | null) => (x === null ? '—' : `${fmtNum(x * 100, 1)}%`);

export function formatProbe(r: ProbeResult): string {
  const q = r.quality;
  const s = r.scale;
  const x = [s.small, s.large];
  const lines = [
    `Evaluation set (fixtures/probe-eval): ${fmtInt(q.records)} records, ${q.pairs} labelled pairs; built-in embedder, similarity 0.9; ${fmtSeconds(q.seconds)}`,
    table(
      ['category', 'label', 'pairs', 'flagged', 'recall / false positives'],
      q.categories.map((c) => [
        c.category,
        c.positive ? 'carries' : 'does not',
        String(c.pairs),
        String(c.truePositives + c.falsePositives),
        c.positive ? pct(c.recall) : `${c.falsePositives} FP`,
      ]),
    ),
    `precision ${pct(q.precision)} (${q.flagged} flagged labelled records); decoys flagged ${q.decoys.flagged} of ${q.decoys.total}` +
      '; paraphrase-no-shared-words is expected to be missed by the built-in embedder',
    '',
    `Lexical probe (scoreProbe, extra: []) for one subject of ${fmtInt(s.small.subjectRecords)} records, removed by removeKey first; ` +
      `Zipf text, ~${fmtNum(s.small.meanContentWords, 0)} content words a record; memory = heapUsed + arrayBuffers after the build minus before (after gc); ` +
      `runs after ${s.small.probe.warmups} unmeasured (fewer when one run is slow: BENCH_PROBE_BUDGET_S)`,
    table(
      [
        'records',
        'build',
        'shingles filed',
        'distinct',
        'memory',
        'B/record',
        'B/shingle',
        'removeKey ms',
        'runs',
        'probe median ms',
        'p95 ms',
        'examined',
        'capped',
        'common above',
        'planted found',
      ],
      x.map((m) => [
        fmtInt(m.records),
        `${fmtSeconds(m.buildSeconds)} (${fmtNum(m.buildSplit.upsertSeconds, 1)} upsert)`,
        fmtInt(m.filed),
        fmtInt(m.distinct),
        `${fmtNum(m.memory.deltaBytes / 2 ** 20, 1)} MiB`,
        fmtNum(m.memory.bytesPerRecord, 0),
        fmtNum(m.memory.bytesPerShingle, 1),
        fmtNum(m.removeKeyMs, 1),
        String(m.probe.runs),
        fmtNum(m.probe.medianMs, 1),
        fmtNum(m.probe.p95Ms, 1),
        fmtInt(m.examined),
        fmtInt(m.cappedShingles),
        fmtInt(m.commonAbove),
        `${m.planted.found}/${m.planted.total}`,
      ]),
    ),
    `distinct shingles (posting lists) at ${fmtInt(s.large.records)} records: ${fmtInt(s.large.distinct)}, in ${POSTING_SHARDS} posting tables`,
    `probe median ms ${fmtInt(s.large.records)} ÷ ${fmtInt(s.small.records)} records = ${fmtRatio(s.ratio)} (aim <= ${s.target}: ${s.ratio <= s.target ? 'met' : 'NOT met'}); ` +
      `bytes per record ${fmtRatio(s.memoryRatio)}; postings read per private record at most ${POSTINGS_BUDGET}`,
  ];
  lines.push(formatAims(r.aims));
  for (const n of r.notes) lines.push(`NOTE: ${n}`);
  for (const w of r.warnings) lines.push(`WARNING: ${w}`);
  return lines.join('\n');
}

await runIfMain(import.meta.url, runProbe, formatProbe);

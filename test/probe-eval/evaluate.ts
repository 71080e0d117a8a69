/**
 * Runs the reconstruction probe (scoreProbe) over the labelled evaluation set
 * (corpus.ts) the way an erasure does, and counts what it flags.
 *
 * The whole store is filed in one ShingleIndex (one ShingleHasher under a fixed test
 * key; each record under its subject as key id) and embedded with HashingEmbedder(512).
 * For each erased subject in turn: its records leave the index (removeKey, as the
 * destroyed key removes them), its records are fingerprinted (embedding + keyed words
 * and pairs in order), the vector-index neighbours of each fingerprint are found by
 * brute force over the surviving records (the top VECTOR_NEIGHBOURS and every one at
 * or above the similarity setting, as the probe's adaptive k does, up to VECTOR_LIMIT),
 * scoreProbe scores them, and the subject's records go back into the index.
 *
 * A labelled surviving record is *flagged* when it is in the probe's `matches`.
 * Per category: true positives (positive, flagged), false negatives (positive, not
 * flagged), false positives (negative, flagged), recall = TP ÷ positives. Precision is
 * over every flagged labelled surviving record: flagged positives ÷ flagged.
 */
import { scoreProbe, VECTOR_LIMIT, VECTOR_NEIGHBOURS, type ExtraCandidate, type RecordFingerprint } from '../../src/erasure/probe.js';
import { HashingEmbedder } from '../../src/vectors/embedder.js';
import { ShingleIndex } from '../../src/vectors/shingle-index.js';
import { ShingleHasher, shingleSet, type TextShingles } from '../../src/vectors/shingles.js';
import { CATEGORIES, type Category, type EvalCorpus } from './corpus.js';

/** The fixed key the evaluation's shingles are hashed under. */
export const EVAL_KEY: Uint8Array = new Uint8Array(32).map((_, i) => (i * 37 + 11) & 0xff);

export interface EvaluateOptions {
  /** The similarity setting (default 0.9, the built-in embedder's default). */
  readonly similarity?: number;
  readonly dimensions?: number;
  /** Progress callback (subjects done, subjects in all). */
  readonly onProgress?: (done: number, all: number) => void;
}

export interface CategoryFigures {
  readonly category: Category;
  readonly positive: boolean;
  readonly pairs: number;
  readonly truePositives: number;
  readonly falseNegatives: number;
  readonly falsePositives: number;
  /** TP ÷ pairs for a positive category; null for a negative one. */
  readonly recall: number | null;
  /** Flagged ÷ pairs (for a negative category: the false-alarm rate). */
  readonly flaggedRate: number;
}

export interface PairOutcome {
  readonly category: Category;
  readonly erased: string;
  readonly surviving: string;
  readonly positive: boolean;
  readonly flagged: boolean;
  /** The probe's score of the surviving record, when flagged. */
  readonly score: number | null;
  /** Cosine of the two records' embeddings (diagnostic). */
  readonly cosine: number;
}

export interface ProbeEvaluation {
  readonly records: number;
  readonly pairs: number;
  readonly categories: CategoryFigures[];
  /** Flagged positives ÷ all flagged labelled surviving records. */
  readonly precision: number;
  readonly flagged: number;
  /** Positive pairs not flagged, and negative pairs flagged. */
  readonly misses: PairOutcome[];
  readonly falseAlarms: PairOutcome[];
  /** Decoys (unlabelled records sharing a few words of a verbatim-in-long sentence) flagged, of all decoys. */
  readonly decoys: { readonly flagged: number; readonly total: number; readonly flaggedPairs: Array<{ erased: string; decoy: string; score: number }> };
  readonly outcomes: PairOutcome[];
  /** Every record the probe flagged, per erased subject (id → score). */
  readonly matchesBySubject: Record<string, Record<string, number>>;
  readonly timings: { readonly buildMs: number; readonly probeMs: number; readonly subjects: number };
}

function dot(a: Float32Array, b: Float32Array, offset: number): number {
  let d = 0;
  for (let i = 0; i < a.length; i++) d += a[i]! * b[offset + i]!;
  return d;
}

export async function evaluateProbe(corpus: EvalCorpus, options: EvaluateOptions = {}): Promise<ProbeEvaluation> {
  const similarity = options.similarity ?? 0.9;
  const dims = options.dimensions ?? 512;
  const t0 = performance.now();
  const hasher = new ShingleHasher(EVAL_KEY);
  const embedder = new HashingEmbedder(dims);
  const index = new ShingleIndex();
  const { store } = corpus;
  const rowOf = new Map<string, number>();
  const matrix = new Float32Array(store.length * dims);
  const shingles: TextShingles[] = [];
  const sets: Float64Array[] = [];
  for (let row = 0; row < store.length; row++) {
    const rec = store[row]!;
    rowOf.set(rec.id, row);
    const s = hasher.of(rec.text);
    shingles.push(s);
    sets.push(shingleSet(s));
    matrix.set(embedder.embedOne(rec.text), row * dims);
    index.upsert(rec.id, rec.kind, rec.subject, sets[row]!);
  }
  hasher.destroy();
  const vectorOf = (id: string): Float32Array | undefined => {
    const row = rowOf.get(id);
    return row === undefined ? undefined : matrix.subarray(row * dims, (row + 1) * dims);
  };
  const buildMs = performance.now() - t0;

  const bySubject = new Map<string, number[]>();
  for (let row = 0; row < store.length; row++) {
    const subject = store[row]!.subject;
    let rows = bySubject.get(subject);
    if (!rows) bySubject.set(subject, (rows = []));
    rows.push(row);
  }
  const erasedSubjects: string[] = [];
  for (const p of corpus.pairs) {
    const subject = store[rowOf.get(p.erased)!]!.subject;
    if (!erasedSubjects.includes(subject)) erasedSubjects.push(subject);
  }

  const flaggedBy = new Map<string, Map<string, number>>();
  const t1 = performance.now();
  let done = 0;
  for (const subject of erasedSubjects) {
    const rows = bySubject.get(subject)!;
    const own = new Set(rows);
    index.removeKey(subject);
    const records: RecordFingerprint[] = rows.map((row) => ({
      id: store[row]!.id,
      vector: matrix.subarray(row * dims, (row + 1) * dims),
      words: shingles[row]!.words,
      pairs: shingles[row]!.pairs,
    }));
    // the vector index's neighbours of each fingerprint: top VECTOR_NEIGHBOURS, and every one ≥ similarity (up to VECTOR_LIMIT)
    const extra = new Map<string, number>();
    for (const r of records) {
      const scored: Array<{ row: number; cosine: number }> = [];
      for (let row = 0; row < store.length; row++) {
        if (own.has(row)) continue;
        scored.push({ row, cosine: dot(r.vector, matrix, row * dims) });
      }
      scored.sort((a, b) => b.cosine - a.cosine);
      for (let k = 0; k < Math.min(scored.length, VECTOR_LIMIT); k++) {
        const c = scored[k]!;
        if (k >= VECTOR_NEIGHBOURS && c.cosine < similarity) break;
        const id = store[c.row]!.id;
        extra.set(id, Math.max(extra.get(id) ?? -1, c.cosine));
      }
    }
    const extras: ExtraCandidate[] = [...extra].map(([id, cosine]) => ({ id, source: 'vector-index', cosine }));
    const result = scoreProbe({ index, records, extra: extras, vectorOf, similarity, dismissed: new Map() });
    flaggedBy.set(subject, new Map(result.matches.map((m) => [m.id, m.score])));
    for (const row of rows) index.upsert(store[row]!.id, store[row]!.kind, subject, sets[row]!);
    options.onProgress?.(++done, erasedSubjects.length);
  }
  const probeMs = performance.now() - t1;

  const outcomes: PairOutcome[] = corpus.pairs.map((p) => {
    const erasedRow = rowOf.get(p.erased)!;
    const survivingRow = rowOf.get(p.surviving)!;
    const flagged = flaggedBy.get(store[erasedRow]!.subject)!;
    const score = flagged.get(p.surviving);
    return {
      category: p.category,
      erased: p.erased,
      surviving: p.surviving,
      positive: p.positive,
      flagged: score !== undefined,
      score: score ?? null,
      cosine: Math.round(dot(matrix.subarray(erasedRow * dims, (erasedRow + 1) * dims), matrix, survivingRow * dims) * 1e4) / 1e4,
    };
  });
  const categories: CategoryFigures[] = CATEGORIES.map((category) => {
    const of = outcomes.filter((o) => o.category === category);
    const positive = of[0]?.positive ?? true;
    const tp = of.filter((o) => o.positive && o.flagged).length;
    const fn = of.filter((o) => o.positive && !o.flagged).length;
    const fp = of.filter((o) => !o.positive && o.flagged).length;
    return {
      category,
      positive,
      pairs: of.length,
      truePositives: tp,
      falseNegatives: fn,
      falsePositives: fp,
      recall: positive ? (of.length === 0 ? 0 : tp / of.length) : null,
      flaggedRate: of.length === 0 ? 0 : of.filter((o) => o.flagged).length / of.length,
    };
  });
  const flaggedOutcomes = outcomes.filter((o) => o.flagged);
  const flaggedDecoys: ProbeEvaluation['decoys']['flaggedPairs'] = [];
  for (const d of corpus.decoys) {
    const score = flaggedBy.get(store[rowOf.get(d.erased)!]!.subject)?.get(d.decoy);
    if (score !== undefined) flaggedDecoys.push({ ...d, score });
  }
  return {
    records: store.length,
    pairs: corpus.pairs.length,
    categories,
    precision: flaggedOutcomes.length === 0 ? 1 : flaggedOutcomes.filter((o) => o.positive).length / flaggedOutcomes.length,
    flagged: flaggedOutcomes.length,
    misses: outcomes.filter((o) => o.positive && !o.flagged),
    falseAlarms: outcomes.filter((o) => !o.positive && o.flagged),
    decoys: { flagged: flaggedDecoys.length, total: corpus.decoys.length, flaggedPairs: flaggedDecoys },
    outcomes,
    matchesBySubject: Object.fromEntries([...flaggedBy].map(([subject, m]) => [subject, Object.fromEntries(m)])),
    timings: { buildMs, probeMs, subjects: erasedSubjects.length },
  };
}

/** A small plain-text table of the per-category figures. */
export function formatEvaluation(e: ProbeEvaluation): string {
  const pct = (x: number | null) => (x === null ? '—' : `${(x * 100).toFixed(1)}%`);
  const rows = e.categories.map((c) => [
    c.category,
    c.positive ? '+' : '−',
    String(c.pairs),
    String(c.truePositives),
    String(c.falseNegatives),
    String(c.falsePositives),
    c.positive ? pct(c.recall) : `flagged ${pct(c.flaggedRate)}`,
  ]);
  const headers = ['category', '±', 'pairs', 'TP', 'FN', 'FP', 'recall'];
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [
    line(headers),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...rows.map(line),
    `precision ${pct(e.precision)} (${e.flagged} flagged labelled records); decoys flagged ${e.decoys.flagged}/${e.decoys.total}; ${e.records} records, ${e.pairs} pairs`,
  ].join('\n');
}

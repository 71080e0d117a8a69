/**
 * The reconstruction probe's pure parts: fingerprints of the subject's content, where
 * candidates come from, and the score of what survives.
 *
 * A fingerprint of one record is its embedding and its keyed shingles in text order
 * (src/vectors/shingles.ts: content words and pairs of consecutive ones, HMAC'd under
 * the index key). Neither holds the text; both are sealed under the erasure key.
 *
 * **Candidates.** Readable records that share a distinctive shingle with the subject:
 * the fingerprint shingles are looked up in the lexical index — pairs before words,
 * shortest lists first — and every record on a list read is considered, up to
 * POSTINGS_BUDGET postings per private record (a shingle on more lists than the budget
 * left is too common to find anything by; when nothing read finds a candidate and a
 * copy could matter, the record's rarest shingle is read up to FALLBACK_POSTINGS). Beside them, the vector
 * index's neighbours of the fingerprints (adaptive k: every neighbour at or above the
 * similarity setting, up to VECTOR_LIMIT per query, and at least VECTOR_NEIGHBOURS),
 * and the artifacts the provenance graph names.
 *
 * **Weights.** A shingle weighs its inverse document frequency among the readable
 * records, ln((N + 2) / (df + 1)) (the erased record counted), measured in memory at
 * probe time (never persisted), and judged leaving out the candidate under
 * examination: a copy of the subject's words does not make them look common. A
 * shingle in more than max(COMMON_MIN_RECORDS, COMMON_FRACTION · N) other records is
 * template or boilerplate and weighs 0. A record's private content is the weight of
 * its shingles (one copy left out); a record whose every shingle is common weighs as
 * an average record of the subject when a near copy carries it, and nothing otherwise
 * (everyday messages do not dilute the rest).
 *
 * **Score.** Surviving record c carries private record r to the degree
 *   score(r, c) = max(containment, near copy, verbatim, semantic)
 * - containment: the weight of r's shingles found in c over the weight of all of r's
 *   shingles (each weighed leaving c out);
 * - near copy: the share of r's distinct shingles c holds, when it is at least
 *   NEAR_COPY and r has RUN_WORDS content words or more (whatever the weights say);
 * - verbatim: RUN_SCORE when c holds a run of at least RUN_WORDS of r's content words
 *   in r's order (each consecutive pair of the run present in c), at least half of
 *   the run's pairs not common;
 * - semantic: the cosine of the two embeddings when ≥ the similarity setting (only
 *   when the fingerprints came from the same embedder model; the embedder's
 *   probeCosine: for the built-in one, of its hashed features alone).
 * A score below MATCH_MIN_SCORE is shared vocabulary and counts as 0. `recovered` is
 * the mean over the subject's records of their best score, weighted by their private
 * content. Every record that contributes to it is named in `matches`; a match a person
 * dismissed (a stated human judgement) is left out and listed as dismissed, unless the
 * ruling lapsed (the record scores higher now, became a near copy, or was rewritten
 * under another key). A match holding a verbatim run, or scoring NEAR_COPY or more, is
 * named `nearCopy`: no ruling may dismiss it (src/erasure/dismissal.ts).
 */
import type { ShingleIndex } from '../vectors/shingle-index.js';
import type { ProbeMatch } from './view.js';
import type { RecordFingerprint } from './fingerprints.js';
import { MATCH_MIN_SCORE, RUN_WORDS, RUN_MIN_DISTINCT_PAIRS, NEAR_COPY, POSTINGS_BUDGET, WORD_LOOKUP_COST, FALLBACK_POSTINGS } from './probe-weights.js';
import { type Prepared, prepare, lastRun, lexicalScore } from './probe-lexical.js';

export {
  COMMON_FRACTION,
  COMMON_MIN_RECORDS,
  FALLBACK_POSTINGS,
  MATCH_MIN_SCORE,
  NEAR_COPY,
  POSTINGS_BUDGET,
  PROBE_MAX_QUERIES,
  RUN_SCORE,
  RUN_WORDS,
  shingleWeight,
  VECTOR_LIMIT,
  VECTOR_NEIGHBOURS,
} from './probe-weights.js';

export { decodeFingerprints, encodeFingerprints, type Fingerprints, type RecordFingerprint } from './fingerprints.js';

/** At most `n` items of `list`, evenly spread over it. */
export function spread<T>(list: readonly T[], n: number): T[] {
  if (list.length <= n) return [...list];
  return Array.from({ length: n }, (_, i) => list[Math.floor((i * list.length) / n)]!);
}

/** A candidate that did not come from the lexical index (a vector neighbour, a provenance artifact). */
export interface ExtraCandidate {
  readonly id: string;
  readonly source: 'vector-index' | 'provenance';
  /** The best cosine a vector query found it at. */
  readonly cosine?: number;
}

export interface ProbeInput {
  readonly index: ShingleIndex;
  readonly records: readonly RecordFingerprint[];
  readonly extra: readonly ExtraCandidate[];
  /** A candidate's vector (for the semantic score), when the vector index holds it. */
  readonly vectorOf: (id: string) => Float32Array | undefined;
  readonly similarity: number;
  /**
   * Records a person ruled do not carry the subject's content, with the score they had
   * and the key they were under when ruled: a ruling lapses when the record now
   * scores higher or sits under another key (it was rewritten).
   */
  readonly dismissed: ReadonlyMap<string, { readonly score: number; readonly keyId?: string | undefined }>;
  /** False when the fingerprints came from another embedder model: no cosine is compared. */
  readonly sameModel?: boolean;
  /** How alike two vectors are (the embedder's probeCosine; default their dot product, the cosine of unit vectors). */
  readonly cosine?: (a: Float32Array, b: Float32Array) => number;
  /** Vectors still indexed although their text can no longer be read (scored by cosine alone). */
  readonly unreadable?: ReadonlyArray<{ readonly id: string; readonly vector: Float32Array }>;
  /** A supersession's successors (supersede.ts): the same person's current data, never a match. */
  readonly successors?: ReadonlySet<string>;
}

export interface ProbeScore {
  readonly recovered: number;
  readonly matches: ProbeMatch[];
  /** Dismissed records that would have matched, with their score. */
  readonly dismissedMatches: Array<{ id: string; score: number }>;
  /** Dismissals that lapsed: the record now scores higher than when ruled, or was rewritten under another key. */
  readonly lapsed: string[];
  /** Distinct candidate records examined, per source. */
  readonly examined: { shingleIndex: number; vectorIndex: number; provenance: number };
  /** Weighted fingerprint shingles not looked up (over the record's postings budget), counted per record. */
  readonly cappedShingles: number;
  /** Records looked up through their rarest shingle instead (FALLBACK_POSTINGS). */
  readonly fallbacks: number;
  /** Each private record's weight, whether it weighs on its own (not all common), and its best score not dismissed: what `recovered` is the mean of, and what combines the scores of several shards (combineProbeScores). */
  readonly perRecord: ReadonlyArray<{ readonly weight: number; readonly weighed: boolean; readonly top: number }>;
}

function dot(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return 0;
  let d = 0;
  for (let i = 0; i < a.length; i++) d += a[i]! * b[i]!;
  return d;
}

const round = (x: number): number => Math.round(x * 1e4) / 1e4;

/** Per-slot accumulators, reused from record to record (a slot's stamp says which record last reached it), and the probe's counters. */
interface Accumulators {
  readonly stamp: Uint32Array;
  readonly accW: Float64Array;
  readonly accPairs: Uint16Array;
  readonly examined: Uint8Array;
  examinedCount: number;
  cappedShingles: number;
  fallbacks: number;
  generation: number;
}

function newAccumulators(capacity: number): Accumulators {
  return {
    stamp: new Uint32Array(capacity),
    accW: new Float64Array(capacity),
    accPairs: new Uint16Array(capacity),
    examined: new Uint8Array(capacity),
    examinedCount: 0,
    cappedShingles: 0,
    fallbacks: 0,
    generation: 0,
  };
}

/**
 * The candidates private record `p` reaches: partial weight and shared pairs of each
 * record on the postings of its distinctive shingles, pairs first and shortest lists
 * first, at most POSTINGS_BUDGET postings; when nothing read finds a candidate yet a
 * copy could hold the record, the postings of its rarest shingle, up to FALLBACK_POSTINGS.
 */
function reachCandidates(index: ShingleIndex, p: Prepared, acc: Accumulators): { gen: number; reached: number[]; read: number; fallback: boolean } {
  const { stamp, accW, accPairs, examined } = acc;
  const r = p.r;
  const gen = ++acc.generation;
  const reached: number[] = [];
  const reach = (slot: number): void => {
    if (stamp[slot] === gen) return;
    stamp[slot] = gen;
    accW[slot] = 0;
    accPairs[slot] = 0;
    reached.push(slot);
    if (!examined[slot]) {
      examined[slot] = 1;
      acc.examinedCount++;
    }
  };
  // pairs first at equal cost (a quote is found by its pairs), then by the length of the list
  const lookups = [...p.inside]
    .filter(([, w]) => w > 0)
    .map(([h, w]) => {
      const df = p.df.get(h)!;
      return { h, w, df, cost: df * (p.pairs.has(h) ? 1 : WORD_LOOKUP_COST) };
    });
  lookups.sort((a, b) => a.cost - b.cost);
  let budget = POSTINGS_BUDGET;
  let read = 0;
  let unread = 0;
  for (const { h, w, df } of lookups) {
    if (df > budget) {
      unread += w;
      acc.cappedShingles++;
      continue;
    }
    budget -= df;
    read += w;
    const isPair = p.pairs.has(h);
    index.postings(h, df, (slot) => {
      reach(slot);
      accW[slot]! += w;
      if (isPair) accPairs[slot]!++;
    });
  }
  // nothing read found a candidate, yet a copy could hold the record (an all-common record of some length, or one
  // whose weight is all in shingles on too many lists)
  const copyMatters = p.total === 0 && r.words.length >= RUN_WORDS;
  const unreadMatters = p.floor === 0 ? unread > 0 : unread / p.floor >= MATCH_MIN_SCORE;
  let fallback = false;
  if (reached.length === 0 && (copyMatters || unreadMatters)) {
    let rarest: number | undefined;
    let rarestDf = Infinity;
    for (const [h, df] of p.df) {
      if (df > 0 && df < rarestDf) {
        rarest = h;
        rarestDf = df;
      }
    }
    if (rarest !== undefined) {
      acc.fallbacks++;
      fallback = true;
      index.postings(rarest, FALLBACK_POSTINGS, reach);
    }
  }
  return { gen, reached, read, fallback };
}

/** Scores every candidate against every private record (see the module comment). */
export function scoreProbe(input: ProbeInput): ProbeScore {
  const { index, records, extra, vectorOf, similarity, dismissed } = input;
  const acc = newAccumulators(index.slotCapacity);
  const { stamp, accW, accPairs } = acc;
  const near = extra.filter((c) => (c.cosine ?? 0) >= similarity);
  const extraSlots = new Map<number, ExtraCandidate>();
  for (const c of extra) {
    const slot = index.slotOf(c.id);
    if (slot !== undefined) extraSlots.set(slot, c);
  }
  const best = new Map<string, { score: number; tier: ProbeMatch['tier']; near: boolean }>();
  let weighted = 0;
  let total = 0;
  const prepared = records.map((r) => prepare(index, r));
  // a record whose every shingle is common carries no measurable private weight: when a near copy carries it, it counts as an average record of the subject
  const weighed = prepared.filter((p) => p.total > 0);
  const average = weighed.length ? weighed.reduce((sum, p) => sum + p.total, 0) / weighed.length : 1;
  const lapsed = new Set<string>();
  const isDismissed = (id: string, score: number, near: boolean): boolean => {
    const ruling = dismissed.get(id);
    if (!ruling) return false;
    const keyNow = index.keyOf(id);
    // a near copy is never dismissed: a ruling on a record that became one lapses
    if (near || score > ruling.score + 1e-4 || (ruling.keyId !== undefined && keyNow !== undefined && keyNow !== ruling.keyId)) {
      lapsed.add(id);
      return false;
    }
    return true;
  };
  const sameModel = input.sameModel ?? true;
  const cosineOf = input.cosine ?? dot;
  const perRecord: Array<{ weight: number; weighed: boolean; top: number }> = [];
  for (const p of prepared) {
    const r = p.r;
    const weight = p.total > 0 ? p.total : average;
    const { gen, reached, read, fallback } = reachCandidates(index, p, acc);
    const scoreOf = (slot: number, extraCandidate = false): number => {
      lastRun.verbatim = false;
      const set = index.setAt(slot);
      if (!set) return 0;
      const ours = stamp[slot] === gen;
      // scored in full: a candidate holding a quarter of the weight that was read, three read pairs (a run may
      // hold them), one reached through the fallback, or one another source named
      const could = ours && read > 0 && accW[slot]! / read >= MATCH_MIN_SCORE;
      const runCould = ours && accPairs[slot]! >= RUN_MIN_DISTINCT_PAIRS;
      return could || runCould || (ours && fallback) || extraCandidate ? lexicalScore(p, set) : 0;
    };
    let top = 0;
    const consider = (id: string, tier: ProbeMatch['tier'], score: number, verbatim = false) => {
      if (score < MATCH_MIN_SCORE || input.successors?.has(id)) return;
      const near = verbatim || score >= NEAR_COPY;
      if (!isDismissed(id, score, near) && score > top) top = score;
      const prev = best.get(id);
      if (!prev || score > prev.score) best.set(id, { score, tier, near: near || (prev?.near ?? false) });
      else if (near) prev.near = true;
    };
    const considerSlot = (slot: number, score: number, verbatim = false) => {
      const rec = index.recordAt(slot);
      if (rec) consider(rec.id, rec.type === 'entry' ? 'log' : 'artifacts', score, verbatim);
    };
    for (const slot of reached) considerSlot(slot, scoreOf(slot), lastRun.verbatim);
    for (const [slot] of extraSlots) if (stamp[slot] !== gen) considerSlot(slot, scoreOf(slot, true), lastRun.verbatim);
    // semantic: the candidates a vector query found at or above the similarity setting
    for (const c of sameModel ? near : []) {
      const v = vectorOf(c.id);
      const slot = index.slotOf(c.id);
      if (!v || slot === undefined) continue;
      const cosine = cosineOf(r.vector, v);
      if (cosine >= similarity) {
        const lexical = scoreOf(slot, true);
        considerSlot(slot, Math.max(Math.min(1, cosine), lexical), lastRun.verbatim);
      }
    }
    for (const u of sameModel ? (input.unreadable ?? []) : []) {
      const cosine = cosineOf(r.vector, u.vector);
      if (cosine >= similarity) consider(u.id, 'vector-index', Math.min(1, cosine));
    }
    // an all-common record weighs in only when something carries it (so everyday messages do not dilute the rest)
    if (p.total > 0 || top > 0) {
      weighted += weight * top;
      total += weight;
    }
    perRecord.push({ weight, weighed: p.total > 0, top });
  }
  const matches: ProbeScore['matches'] = [];
  const dismissedMatches: ProbeScore['dismissedMatches'] = [];
  for (const [id, b] of best) {
    if (dismissed.has(id) && !lapsed.has(id)) dismissedMatches.push({ id, score: round(b.score) });
    else matches.push({ id, tier: b.tier, score: round(b.score), ...(b.near ? { nearCopy: true } : {}) });
  }
  matches.sort((a, b) => b.score - a.score || a.id.localeCompare(b.id));
  dismissedMatches.sort((a, b) => a.id.localeCompare(b.id));
  const sources = { shingleIndex: acc.examinedCount, vectorIndex: 0, provenance: 0 };
  for (const c of extra) sources[c.source === 'vector-index' ? 'vectorIndex' : 'provenance']++;
  return {
    recovered: total === 0 ? 0 : round(weighted / total),
    matches,
    dismissedMatches,
    lapsed: [...lapsed].sort(),
    examined: sources,
    cappedShingles: acc.cappedShingles,
    fallbacks: acc.fallbacks,
    perRecord,
  };
}

/**
 * The probe over several shards' indexes, each scored on its own (its own document
 * frequencies: the shards split the subjects by a hash, so each is a sample of the
 * store): a private record's best score is its best on any shard, its weight the mean
 * of its weights; the matches, dismissals and counts are the union and the sums.
 */
export function combineProbeScores(parts: readonly ProbeScore[]): ProbeScore {
  if (parts.length === 1) return parts[0]!;
  const n = Math.max(0, ...parts.map((p) => p.perRecord.length));
  const perRecord = Array.from({ length: n }, (_, i) => {
    const mine = parts.map((p) => p.perRecord[i]).filter((r) => r !== undefined);
    const weighed = mine.filter((r) => r.weighed);
    const weight = (weighed.length ? weighed : mine).reduce((sum, r) => sum + r.weight, 0) / Math.max(1, (weighed.length ? weighed : mine).length);
    return { weight, weighed: weighed.length > 0, top: Math.max(0, ...mine.map((r) => r.top)) };
  });
  let weighted = 0;
  let total = 0;
  for (const r of perRecord) {
    if (!r.weighed && r.top === 0) continue;
    weighted += r.weight * r.top;
    total += r.weight;
  }
  const matches = new Map<string, ProbeMatch>();
  for (const m of parts.flatMap((p) => p.matches)) if ((matches.get(m.id)?.score ?? -1) < m.score) matches.set(m.id, m);
  const dismissedMatches = new Map<string, { id: string; score: number }>();
  for (const d of parts.flatMap((p) => p.dismissedMatches)) if ((dismissedMatches.get(d.id)?.score ?? -1) < d.score) dismissedMatches.set(d.id, d);
  const sum = (f: (p: ProbeScore) => number) => parts.reduce((s, p) => s + f(p), 0);
  // a record one part counts (its ruling lapsed there: a higher score, another key) is a match, whatever another part says
  for (const id of matches.keys()) dismissedMatches.delete(id);
  return {
    recovered: total === 0 ? 0 : round(weighted / total),
    matches: [...matches.values()].sort((a, b) => b.score - a.score || a.id.localeCompare(b.id)),
    dismissedMatches: [...dismissedMatches.values()].sort((a, b) => a.id.localeCompare(b.id)),
    lapsed: [...new Set(parts.flatMap((p) => p.lapsed))].sort(),
    examined: {
      shingleIndex: sum((p) => p.examined.shingleIndex),
      vectorIndex: sum((p) => p.examined.vectorIndex),
      provenance: Math.max(0, ...parts.map((p) => p.examined.provenance)),
    },
    cappedShingles: sum((p) => p.cappedShingles),
    fallbacks: sum((p) => p.fallbacks),
    perRecord,
  };
}

/**
 * The reconstruction probe's pure parts: fingerprints of the subject's content, where
 * candidates come from, and the score of what survives.
 *
 * A fingerprint of one record is its embedding and its keyed shingles in text order
 * (src/vectors/shingles.ts: content words and pairs of consecutive ones, HMAC'd under
 * the index key). Neither holds the text; both are sealed under the erasure key.
 *
 * **Candidates.** Every readable record that shares a distinctive shingle with the
 * subject: each fingerprint shingle is looked up in the lexical index and every record
 * on its posting list is considered (up to POSTINGS_CAP per shingle; a shingle on
 * more lists than that is too common to find anything by). Beside them, the vector
 * index's neighbours of the fingerprints (adaptive k: every neighbour at or above the
 * similarity setting, up to VECTOR_LIMIT per query, and at least VECTOR_NEIGHBOURS),
 * and the artifacts the provenance graph names.
 *
 * **Weights.** A shingle weighs its inverse document frequency among the readable
 * records, ln((N + 2) / (df + 1)) (the erased record counted), measured in memory at probe time (never persisted),
 * and judged leaving out the candidate under examination: a copy of the subject's
 * words does not make them look common. A shingle in more than
 * max(COMMON_MIN_RECORDS, COMMON_FRACTION · N) other records is template or
 * boilerplate and weighs 0. A record's private content is the weight of its shingles
 * (one copy left out); a record whose every shingle is common carries nothing private.
 *
 * **Score.** Surviving record c carries private record r to the degree
 *   score(r, c) = max(containment, verbatim, semantic)
 * - containment: the weight of r's shingles found in c over the weight of all of r's
 *   shingles (each weighed leaving c out);
 * - verbatim: RUN_SCORE when c holds a run of at least RUN_WORDS of r's content words
 *   in r's order (each consecutive pair of the run present in c), at least half of
 *   the run's pairs not common;
 * - semantic: the cosine of the two embeddings when ≥ the similarity setting.
 * A score below MATCH_MIN_SCORE is shared vocabulary and counts as 0. `recovered` is
 * the mean over the subject's records of their best score, weighted by their private
 * content. Every record that contributes to it is named in `matches`; a match a person
 * dismissed (a stated human judgement) is left out and listed as dismissed.
 */
import { toBase64Url, utf8 } from '../crypto/index.js';
import { LetheError } from '../errors.js';
import type { ShingleIndex } from '../vectors/shingle-index.js';
import { hasShingle } from '../vectors/shingles.js';
import type { ProbeMatch } from './view.js';

/** Candidates reported as matches score at least this much against some private record. */
export const MATCH_MIN_SCORE = 0.25;
/** Content words in order that make a verbatim run. */
export const RUN_WORDS = 6;
/** Pairs of a shortest verbatim run that must not be common: half of its RUN_WORDS - 1, rounded up. */
const RUN_MIN_DISTINCT_PAIRS = Math.ceil((RUN_WORDS - 1) / 2);
/** What a verbatim run scores (at least): a quote of the record carries it. */
export const RUN_SCORE = 0.5;
/** Postings read per shingle: a shingle on more lists than this finds nothing by itself. */
export const POSTINGS_CAP = 512;
/** A shingle in more readable records than max(this, COMMON_FRACTION · N) is common and weighs 0. */
export const COMMON_MIN_RECORDS = 20;
export const COMMON_FRACTION = 0.01;
/** Vector neighbours taken per query at least, and at most (the adaptive k's ceiling). */
export const VECTOR_NEIGHBOURS = 8;
export const VECTOR_LIMIT = 256;
/** Fingerprinted records used as nearest-neighbour queries (each a full pass of the vector index). */
export const PROBE_MAX_QUERIES = 128;

/** At most `n` items of `list`, evenly spread over it. */
export function spread<T>(list: readonly T[], n: number): T[] {
  if (list.length <= n) return [...list];
  return Array.from({ length: n }, (_, i) => list[Math.floor((i * list.length) / n)]!);
}

export interface RecordFingerprint {
  readonly id: string;
  /** Unit-length embedding of the record's text. */
  readonly vector: Float32Array;
  /** Keyed hashes of the record's content words, in order. */
  readonly words: readonly number[];
  /** Keyed hashes of its consecutive word pairs, in order. */
  readonly pairs: readonly number[];
}

export interface Fingerprints {
  /** The embedder model the vectors came from (vectors of another model are not compared). */
  readonly model: string;
  readonly records: readonly RecordFingerprint[];
  /** The request's public attributes, used as search queries. */
  readonly attributes: readonly string[];
}

/**
 * How much a shingle found in `df` of `n` readable records weighs: its inverse
 * document frequency, counting the erased record among the records (so a shingle
 * found nowhere else weighs ln(n + 2), never 0, even in a store of one record).
 */
export function shingleWeight(df: number, n: number): number {
  if (df > Math.max(COMMON_MIN_RECORDS, COMMON_FRACTION * n)) return 0;
  return Math.log((n + 2) / (df + 1));
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
  /** Records a person ruled do not carry the subject's content. */
  readonly dismissed: ReadonlySet<string>;
  /** Vectors still indexed although their text can no longer be read (scored by cosine alone). */
  readonly unreadable?: ReadonlyArray<{ readonly id: string; readonly vector: Float32Array }>;
}

export interface ProbeScore {
  readonly recovered: number;
  readonly matches: ProbeMatch[];
  /** Dismissed records that would have matched, with their score. */
  readonly dismissedMatches: Array<{ id: string; score: number }>;
  /** Distinct candidate records examined, per source. */
  readonly examined: { shingleIndex: number; vectorIndex: number; provenance: number };
  /** Fingerprint shingles whose posting lists were cut at POSTINGS_CAP. */
  readonly cappedShingles: number;
}

function dot(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return 0;
  let d = 0;
  for (let i = 0; i < a.length; i++) d += a[i]! * b[i]!;
  return d;
}

const round = (x: number): number => Math.round(x * 1e4) / 1e4;

/**
 * One private record prepared for scoring: each distinct shingle's weight when a
 * candidate holds it (`inside`: judged by the other records, so the copy under
 * examination does not make the subject's own words look common) and when it does
 * not (`outside`).
 */
interface Prepared {
  readonly r: RecordFingerprint;
  readonly inside: Map<number, number>;
  readonly outside: Map<number, number>;
  /** The record's private content: Σ inside (one copy of it does not make it common). */
  readonly total: number;
  /** Σ outside: the least the denominator of a containment can be. */
  readonly floor: number;
  /** Inside weight of shingles that count but whose postings were not all read. */
  readonly unread: number;
  /** Pairs whose postings were not all read (they may extend a verbatim run). */
  readonly unreadPairs: number;
}

function prepare(index: ShingleIndex, r: RecordFingerprint): Prepared {
  // weights are judged by the records other than the candidate (leave one out)
  const others = Math.max(0, index.size - 1);
  const inside = new Map<number, number>();
  const outside = new Map<number, number>();
  let total = 0;
  let floor = 0;
  let unread = 0;
  for (const h of [...r.words, ...r.pairs]) {
    if (inside.has(h)) continue;
    const df = index.df(h);
    const wIn = shingleWeight(Math.max(0, df - 1), others);
    const wOut = shingleWeight(df, others);
    inside.set(h, wIn);
    outside.set(h, wOut);
    total += wIn;
    floor += wOut;
    if (wIn > 0 && df > POSTINGS_CAP) unread += wIn;
  }
  // only pairs that count can make a run's distinct half (lexicalScore); common ones need not be read
  let unreadPairs = 0;
  for (const h of new Set(r.pairs)) if (inside.get(h)! > 0 && index.df(h) > POSTINGS_CAP) unreadPairs++;
  return { r, inside, outside, total, floor, unread, unreadPairs };
}

/** Containment and verbatim run of r in the record whose sorted set is `set`. */
function lexicalScore(p: Prepared, set: Float64Array): number {
  let found = 0;
  let missing = 0;
  for (const [h, wIn] of p.inside) {
    if (hasShingle(set, h)) found += wIn;
    else missing += p.outside.get(h)!;
  }
  let score = found + missing > 0 ? found / (found + missing) : 0;
  // the longest run of r's pairs present in c, in r's order
  let run = 0;
  let distinct = 0;
  for (const h of p.r.pairs) {
    if (hasShingle(set, h)) {
      run++;
      if (p.inside.get(h)! > 0) distinct++;
      if (run + 1 >= RUN_WORDS && distinct * 2 >= run) {
        score = Math.max(score, RUN_SCORE);
        break;
      }
    } else {
      run = 0;
      distinct = 0;
    }
  }
  return score;
}

/** Scores every candidate against every private record (see the module comment). */
export function scoreProbe(input: ProbeInput): ProbeScore {
  const { index, records, extra, vectorOf, similarity, dismissed } = input;
  const touched = new Set<number>();
  let cappedShingles = 0;
  const near = extra.filter((c) => (c.cosine ?? 0) >= similarity);
  const extraSlots = new Map<number, ExtraCandidate>();
  for (const c of extra) {
    const slot = index.slotOf(c.id);
    if (slot !== undefined) extraSlots.set(slot, c);
  }
  const best = new Map<string, { score: number; tier: ProbeMatch['tier'] }>();
  let weighted = 0;
  let total = 0;
  for (const r of records) {
    const p = prepare(index, r);
    // partial weight and shared pairs of each record reached through the postings of r's distinctive shingles
    const acc = new Map<number, { w: number; pairs: number }>();
    const pairSet = new Set(r.pairs);
    for (const [h, w] of p.inside) {
      if (w === 0) continue;
      if (index.df(h) > POSTINGS_CAP) {
        cappedShingles++;
        continue;
      }
      const isPair = pairSet.has(h);
      index.postings(h, POSTINGS_CAP, (slot) => {
        touched.add(slot);
        const a = acc.get(slot);
        if (a) {
          a.w += w;
          if (isPair) a.pairs++;
        } else acc.set(slot, { w, pairs: isPair ? 1 : 0 });
      });
    }
    const scoreOf = (slot: number): number => {
      const set = index.setAt(slot);
      const a = acc.get(slot);
      let score = 0;
      // containment ≤ (what the postings found + what was not read) ÷ Σ outside
      const reach = (a?.w ?? 0) + p.unread;
      const could = p.total > 0 && (p.floor === 0 ? reach > 0 : reach / p.floor >= MATCH_MIN_SCORE);
      // a run of RUN_WORDS words has RUN_WORDS - 1 pairs, at least half of them not common (lexicalScore)
      const runCould = (a?.pairs ?? 0) + p.unreadPairs >= RUN_MIN_DISTINCT_PAIRS;
      if (set && (could || runCould)) score = lexicalScore(p, set);
      return score;
    };
    let top = 0;
    const consider = (id: string, tier: ProbeMatch['tier'], score: number) => {
      if (score < MATCH_MIN_SCORE || p.total === 0) return;
      if (!dismissed.has(id) && score > top) top = score;
      const prev = best.get(id);
      if (!prev || score > prev.score) best.set(id, { score, tier });
    };
    const considerSlot = (slot: number, score: number) => {
      const rec = index.recordAt(slot);
      if (rec) consider(rec.id, rec.type === 'entry' ? 'log' : 'artifacts', score);
    };
    for (const slot of acc.keys()) considerSlot(slot, scoreOf(slot));
    for (const [slot] of extraSlots) if (!acc.has(slot)) considerSlot(slot, scoreOf(slot));
    // semantic: the candidates a vector query found at or above the similarity setting
    for (const c of near) {
      const v = vectorOf(c.id);
      const slot = index.slotOf(c.id);
      if (!v || slot === undefined) continue;
      const cosine = dot(r.vector, v);
      if (cosine >= similarity) considerSlot(slot, Math.max(Math.min(1, cosine), scoreOf(slot)));
    }
    for (const u of input.unreadable ?? []) {
      const cosine = dot(r.vector, u.vector);
      if (cosine >= similarity) consider(u.id, 'vector-index', Math.min(1, cosine));
    }
    weighted += p.total * top;
    total += p.total;
  }
  const matches: ProbeScore['matches'] = [];
  const dismissedMatches: ProbeScore['dismissedMatches'] = [];
  for (const [id, b] of best) {
    if (dismissed.has(id)) dismissedMatches.push({ id, score: round(b.score) });
    else matches.push({ id, tier: b.tier, score: round(b.score) });
  }
  matches.sort((a, b) => b.score - a.score || a.id.localeCompare(b.id));
  dismissedMatches.sort((a, b) => a.id.localeCompare(b.id));
  const sources = { shingleIndex: touched.size, vectorIndex: 0, provenance: 0 };
  for (const c of extra) sources[c.source === 'vector-index' ? 'vectorIndex' : 'provenance']++;
  return { recovered: total === 0 ? 0 : round(weighted / total), matches, dismissedMatches, examined: sources, cappedShingles };
}

/** The sealed form's version: fingerprints of another version are refused, never misread. */
const FINGERPRINTS_VERSION = 2;

/** Fingerprints as bytes to seal (vectors as base64url float32, shingles as their keyed hashes). */
export function encodeFingerprints(f: Fingerprints): Uint8Array {
  return utf8.encode(
    JSON.stringify({
      version: FINGERPRINTS_VERSION,
      model: f.model,
      attributes: f.attributes,
      records: f.records.map((r) => ({
        id: r.id,
        v: toBase64Url(new Uint8Array(r.vector.buffer, r.vector.byteOffset, r.vector.byteLength)),
        w: r.words,
        p: r.pairs,
      })),
    }),
  );
}

export function decodeFingerprints(bytes: Uint8Array): Fingerprints {
  const raw = JSON.parse(utf8.decode(bytes)) as {
    version?: number;
    model: string;
    attributes: string[];
    records: Array<{ id: string; v: string; w: number[]; p: number[] }>;
  };
  if (raw.version !== FINGERPRINTS_VERSION) {
    throw new LetheError('conflict', 'the probe fingerprints were taken by an older lethe; request a new erasure of the subject to probe again');
  }
  return {
    model: raw.model,
    attributes: raw.attributes,
    records: raw.records.map((r) => {
      const b = Buffer.from(r.v, 'base64url');
      const vector = new Float32Array(b.byteLength / 4);
      new Uint8Array(vector.buffer).set(b);
      b.fill(0);
      return { id: r.id, vector, words: r.w, pairs: r.p };
    }),
  };
}

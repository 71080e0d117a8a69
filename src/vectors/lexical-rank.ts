/**
 * BM25 over the lexical index (shingle-index.ts): a record's score for a query is
 * Σ idf(t) · (k1 + 1) / (1 + k1 · (1 − b + b · |d| / avgdl)) over the query's keyed
 * words and word pairs `t` the record holds, divided by the most any record could
 * score for that query (0..1: how much of the query's weight it covers). The index keeps each record's distinct
 * shingles only (a set, never counts), so every term frequency is 1; |d| is the set's
 * size. A word pair counts PAIR_WEIGHT of a word: a phrase met verbatim ranks above
 * its words met apart.
 *
 * A scoped ranking counts its frequencies (N, df, avgdl) over its scope alone: a
 * subject's scores never depend on anyone else's records, and a removed record (its
 * key destroyed, forgotten) is in no scope and no posting, so it changes no score from
 * the moment the index drops it. A global ranking (every subject's records) counts over
 * the whole index.
 */
import { hasShingle, type TextShingles } from './shingles.js';
import type { ShingleIndex } from './shingle-index.js';
import type { IndexHit } from './exact-rank.js';
import type { RecordType } from './vector-index.js';

const K1 = 1.2;
const B = 0.75;
/** A word pair's weight against a word's. */
export const PAIR_WEIGHT = 0.5;
/** A global ranking visits at most this many postings of one term (a term that common adds next to nothing). */
const POSTINGS_CAP = 100_000;

/** A query's distinct terms, sorted, with their weights (a word 1, a pair PAIR_WEIGHT). */
interface Terms {
  readonly hashes: Float64Array;
  readonly weights: Float64Array;
}

function termsOf(q: TextShingles): Terms {
  const weight = new Map<number, number>();
  for (const h of q.words) weight.set(h, 1);
  for (const h of q.pairs) if (!weight.has(h)) weight.set(h, PAIR_WEIGHT);
  const hashes = Float64Array.from(weight.keys()).sort();
  return { hashes, weights: Float64Array.from(hashes, (h) => weight.get(h)!) };
}

function idf(n: number, df: number): number {
  return Math.log(1 + (n - df + 0.5) / (df + 0.5));
}

/** The most any record could score for these term weights (every term held, the shortest record): scores are divided by it, to 0..1. */
function ceiling(weights: Float64Array): number {
  let sum = 0;
  for (const w of weights) sum += w;
  return sum > 0 ? (sum * (K1 + 1)) / (1 + K1 * (1 - B)) : 1;
}

type Keep = (id: string, type: RecordType) => boolean;

/** The `k` best of scored slots, best first (ties: the lower slot first, as the vector index's exact ranking). */
function best(index: ShingleIndex, scores: Map<number, number>, k: number, keep?: Keep): IndexHit[] {
  const ranked = [...scores].sort((a, b) => b[1] - a[1] || a[0] - b[0]);
  const out: IndexHit[] = [];
  for (const [slot, score] of ranked) {
    const r = index.recordAt(slot);
    if (!r || (keep && !keep(r.id, r.type))) continue;
    out.push({ id: r.id, type: r.type, keyId: r.keyId, score });
    if (out.length === k) break;
  }
  return out;
}

type Scope = { readonly keyIds?: Iterable<string>; readonly ids?: Iterable<string> };

function slotsOf(index: ShingleIndex, scope: Scope): Set<number> {
  const slots = new Set<number>();
  for (const keyId of scope.keyIds ?? []) for (const id of index.idsOfKey(keyId)) slots.add(index.slotOf(id)!);
  for (const id of scope.ids ?? []) {
    const slot = index.slotOf(id);
    if (slot !== undefined) slots.add(slot);
  }
  return slots;
}

/**
 * How rare each of `words` (keyed word hashes) is in a scope (undefined: every record),
 * from 0 (every record holds it) to 1 (none does): its inverse document frequency over
 * the largest one it could have. Undefined for a scope of fewer than two records.
 */
export function rarity(index: ShingleIndex, words: readonly number[], scope?: Scope): number[] | undefined {
  let n: number;
  let df: number[];
  if (!scope) {
    n = index.size;
    df = words.map((h) => index.df(h));
  } else {
    const slots = slotsOf(index, scope);
    n = slots.size;
    df = words.map(() => 0);
    for (const slot of slots) {
      const set = index.setAt(slot)!;
      for (let i = 0; i < words.length; i++) if (hasShingle(set, words[i]!)) df[i]!++;
    }
  }
  if (n < 2) return undefined;
  const most = idf(n, 0);
  return df.map((d) => idf(n, d) / most);
}

/**
 * The `k` records filed under `scope.keyIds` or named by `scope.ids` that score best
 * for the query, best first; records matching no term are not ranked. Frequencies are
 * counted over the scope only.
 */
export function bm25Within(index: ShingleIndex, query: TextShingles, k: number, scope: Scope, keep?: Keep): IndexHit[] {
  const terms = termsOf(query);
  if (k <= 0 || terms.hashes.length === 0) return [];
  const slots = slotsOf(index, scope);
  const counted = countTerms(
    terms,
    [...slots].map((slot) => index.setAt(slot)!),
  );
  if (!counted.matched.some((m) => m)) return [];
  const score = scorer(terms, counted);
  const scores = new Map<number, number>();
  let i = 0;
  for (const slot of slots) {
    const m = counted.matched[i++];
    if (m) scores.set(slot, score(m));
  }
  return best(index, scores, k, keep);
}

/**
 * The scores of records the index does not hold yet (`sets`: their shingle sets), as
 * bm25Within would give them were they filed in the scope: frequencies over the scope
 * and them together. 0 for a record matching no term.
 */
export function bm25Outside(index: ShingleIndex, query: TextShingles, scope: Scope, sets: readonly Float64Array[]): number[] {
  const terms = termsOf(query);
  if (terms.hashes.length === 0 || sets.length === 0) return sets.map(() => 0);
  const inScope = [...slotsOf(index, scope)].map((slot) => index.setAt(slot)!);
  const counted = countTerms(terms, [...inScope, ...sets]);
  const score = scorer(terms, counted);
  return counted.matched.slice(inScope.length).map((m) => (m ? score(m) : 0));
}

type Matched = { length: number; terms: number[] } | undefined;

/** One pass over the records' sets: which terms each holds (undefined: none), each term's document frequency, the sets' total size. */
function countTerms(terms: Terms, sets: readonly Float64Array[]): { n: number; total: number; df: Float64Array; matched: Matched[] } {
  const df = new Float64Array(terms.hashes.length);
  let total = 0;
  const matched = sets.map((set): Matched => {
    total += set.length;
    let held: number[] | undefined;
    for (let t = 0; t < terms.hashes.length; t++) {
      if (!hasShingle(set, terms.hashes[t]!)) continue;
      df[t]!++;
      (held ??= []).push(t);
    }
    return held ? { length: set.length, terms: held } : undefined;
  });
  return { n: sets.length, total, df, matched };
}

/** A matched record's score (0..1) under the counted frequencies. */
function scorer(terms: Terms, counted: { n: number; total: number; df: Float64Array }): (m: NonNullable<Matched>) => number {
  const { n, total, df } = counted;
  const avgdl = total / n;
  const weight = Float64Array.from(terms.weights, (w, t) => w * idf(n, df[t]!));
  const most = ceiling(weight);
  return (m) => {
    const norm = (K1 + 1) / (1 + K1 * (1 - B + (B * m.length) / avgdl));
    let s = 0;
    for (const t of m.terms) s += weight[t]!;
    return (s * norm) / most;
  };
}

/** The `k` records of the whole index that score best for the query, best first; frequencies over the whole index. */
export function bm25(index: ShingleIndex, query: TextShingles, k: number, keep?: Keep): IndexHit[] {
  const terms = termsOf(query);
  const n = index.size;
  if (k <= 0 || n === 0 || terms.hashes.length === 0) return [];
  const avgdl = index.filed / n;
  const sums = new Map<number, number>();
  const weight = Float64Array.from(terms.hashes, (h, t) => terms.weights[t]! * idf(n, index.df(h)));
  const most = ceiling(weight);
  for (let t = 0; t < terms.hashes.length; t++) {
    const h = terms.hashes[t]!;
    const w = weight[t]!;
    index.postings(h, POSTINGS_CAP, (slot) => sums.set(slot, (sums.get(slot) ?? 0) + w));
  }
  const scores = new Map<number, number>();
  for (const [slot, s] of sums) scores.set(slot, (s * (K1 + 1)) / (1 + K1 * (1 - B + (B * index.setAt(slot)!.length) / avgdl)) / most);
  return best(index, scores, k, keep);
}

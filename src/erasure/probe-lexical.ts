/** How much of one private record a candidate's shingle set holds: containment, near copy and verbatim run. */
import type { ShingleIndex } from '../vectors/shingle-index.js';
import { hasShingle } from '../vectors/shingles.js';
import type { RecordFingerprint } from './fingerprints.js';
import { RUN_WORDS, RUN_SCORE, NEAR_COPY, shingleWeight } from './probe-weights.js';

/**
 * One private record prepared for scoring: each distinct shingle's weight when a
 * candidate holds it (`inside`: judged by the other records, so the copy under
 * examination does not make the subject's own words look common) and when it does
 * not (`outside`).
 */
export interface Prepared {
  readonly r: RecordFingerprint;
  readonly inside: Map<number, number>;
  readonly outside: Map<number, number>;
  /** The record's private content: Σ inside (one copy of it does not make it common). */
  readonly total: number;
  /** Σ outside: the least the denominator of a containment can be. */
  readonly floor: number;
  /** The record's pairs, for telling pairs from words. */
  readonly pairs: ReadonlySet<number>;
  /** Each distinct shingle's document frequency, read once. */
  readonly df: ReadonlyMap<number, number>;
}

export function prepare(index: ShingleIndex, r: RecordFingerprint): Prepared {
  // weights are judged by the records other than the candidate (leave one out)
  const others = Math.max(0, index.size - 1);
  const inside = new Map<number, number>();
  const outside = new Map<number, number>();
  const dfs = new Map<number, number>();
  let total = 0;
  let floor = 0;
  for (const h of [...r.words, ...r.pairs]) {
    if (inside.has(h)) continue;
    const df = index.df(h);
    dfs.set(h, df);
    const wIn = shingleWeight(Math.max(0, df - 1), others);
    const wOut = shingleWeight(df, others);
    inside.set(h, wIn);
    outside.set(h, wOut);
    total += wIn;
    floor += wOut;
  }
  return { r, inside, outside, total, floor, pairs: new Set(r.pairs), df: dfs };
}

/** Set by lexicalScore: whether the record it last scored holds a verbatim run (a near copy, whatever its score). */
export const lastRun = { verbatim: false };

/** Containment and verbatim run of r in the record whose sorted set is `set` (`lastRun.verbatim`: a run was found). */
export function lexicalScore(p: Prepared, set: Float64Array): number {
  lastRun.verbatim = false;
  let found = 0;
  let missing = 0;
  for (const [h, wIn] of p.inside) {
    if (hasShingle(set, h)) found += wIn;
    else missing += p.outside.get(h)!;
  }
  let score = found + missing > 0 ? found / (found + missing) : 0;
  // a near copy of a record of at least RUN_WORDS content words counts whatever the weights say (copies do not make the record common)
  if (p.r.words.length >= RUN_WORDS) {
    let held = 0;
    for (const h of p.inside.keys()) if (hasShingle(set, h)) held++;
    if (held / p.inside.size >= NEAR_COPY) score = Math.max(score, held / p.inside.size);
  }
  // the longest run of r's pairs present in c, in r's order
  let run = 0;
  let distinct = 0;
  for (const h of p.r.pairs) {
    if (hasShingle(set, h)) {
      run++;
      if (p.inside.get(h)! > 0) distinct++;
      if (run + 1 >= RUN_WORDS && distinct * 2 >= run) {
        score = Math.max(score, RUN_SCORE);
        lastRun.verbatim = true;
        break;
      }
    } else {
      run = 0;
      distinct = 0;
    }
  }
  return score;
}

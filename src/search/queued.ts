/**
 * A scoped search ranks the named subjects' entries still waiting in the indexing
 * queue besides the index: a writer's entry is found by its subject's searches from
 * its registration, not from its indexing (issue 35: search visibility decoupled from
 * the indexer). At most QUEUED_RANKED of them, the newest, QUEUED_BYTES of frames in
 * all; each read as any hit is (its frame opened and held to the entry schema: one
 * that fails is left out), then embedded and shingled for this search alone — nothing
 * of it is kept — and scored as the index would score it: the query's dot product
 * with its embedding, BM25 over the scope and these entries together, fused by
 * rank.ts's weights.
 */
import { bm25Outside } from '../vectors/lexical-rank.js';
import type { Vectors } from '../vectors/service.js';
import { shingleSet } from '../vectors/shingles.js';
import type { IndexHit } from '../vectors/vector-index.js';
import { LEXICAL_WEIGHT, queryVector, type RankScope, type SearchMode } from './rank.js';

/** Queued entries one scoped search ranks at most (the newest; older ones wait for the indexer). */
export const QUEUED_RANKED = 64;
/** Their frames' bytes at most, in all: a search opens, embeds and shingles no more than this much text of them. */
export const QUEUED_BYTES = 256 * 1024;

export interface QueuedEntry {
  readonly id: string;
  readonly keyId: string;
  readonly text: string;
}

/** The queued entries' scores for the query in `mode`, best first; in lexical mode only those matching a term. */
export async function rankQueued(vectors: Vectors, query: string, mode: SearchMode, scope: RankScope, entries: readonly QueuedEntry[]): Promise<IndexHit[]> {
  // one the index holds by now is ranked by it; an entry without text matches no query
  const fresh = entries.filter((e) => e.text !== '' && !vectors.index.has(e.id));
  if (fresh.length === 0) return [];
  const lexical = vectors.lexical;
  const terms = vectors.shinglesOf(query);
  let byVector: number[] | undefined;
  let byWords: number[] | undefined;
  // what is derived from the entries' text is wiped once scored
  if (mode !== 'lexical') {
    const q = await queryVector(vectors.embedder, lexical, query, terms, scope);
    if (q) {
      const embedded = await vectors.embedder.embed(fresh.map((e) => e.text));
      byVector = embedded.map((v) => dot(q, v));
      for (const v of [q, ...embedded]) v.fill(0);
    }
  }
  if (mode !== 'vector' && terms.words.length > 0) {
    const sets = fresh.map((e) => shingleSet(vectors.shinglesOf(e.text)));
    byWords = bm25Outside(lexical, terms, scope, sets);
    for (const set of sets) set.fill(0);
  }
  const hits: IndexHit[] = [];
  for (const [i, e] of fresh.entries()) {
    const v = byVector?.[i];
    const w = byWords?.[i];
    let score: number | undefined;
    // as rank.ts: a lexical ranking leaves out what matches no term, a fused one weighs both (a signal absent adds 0)
    if (mode === 'vector' || (mode === 'hybrid' && !byWords)) score = v;
    else if (mode === 'lexical' || !byVector) score = w ? w : undefined;
    else score = (1 - LEXICAL_WEIGHT) * Math.max(0, v!) + LEXICAL_WEIGHT * w!;
    if (score !== undefined) hits.push({ id: e.id, type: 'entry', keyId: e.keyId, score });
  }
  return hits.sort((a, b) => b.score - a.score);
}

/** The index's candidates and the queued entries' hits as one ranking: the `n` best not refused by `keep`, each record once. */
export function mergeRanked(ranked: readonly IndexHit[], queued: readonly IndexHit[], n: number, keep: (id: string) => boolean): IndexHit[] {
  const seen = new Set(ranked.map((h) => h.id));
  return [...ranked, ...queued.filter((h) => !seen.has(h.id) && keep(h.id))].sort((a, b) => b.score - a.score).slice(0, n);
}

function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

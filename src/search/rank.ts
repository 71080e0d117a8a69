/**
 * How a search ranks its candidates: by the vector index (cosine to the query's
 * embedding), by the lexical index (BM25 over keyed words and pairs), or both fused
 * (the default). Each signal ranks the same scope — the named subjects' keys and the
 * artifacts above them, or everything — never the whole index filtered afterwards.
 *
 * Fusion is a weighted sum of the two scores, both 0..1: the cosine, and BM25 over the
 * most the query could score (lexical-rank.ts). The query's embedding weighs each word
 * by its rarity in the scope (from the lexical index), so a word every record holds —
 * the user's own name — ranks nothing. Chosen on the retrieval set (bench/retrieval.ts)
 * against other weights and reciprocal rank fusion: docs/performance.md.
 */
import type { Vectors } from '../vectors/service.js';
import { bm25, bm25Within, rarity } from '../vectors/lexical-rank.js';
import type { IndexHit } from '../vectors/vector-index.js';
import type { TextShingles } from '../vectors/shingles.js';
import type { ShingleIndex } from '../vectors/shingle-index.js';

export type SearchMode = 'hybrid' | 'vector' | 'lexical';
export const SEARCH_MODES: readonly SearchMode[] = ['hybrid', 'vector', 'lexical'];

/** The `n` best candidates not refused by `keep`, best first. */
export type Ranker = (n: number, keep: (id: string) => boolean) => IndexHit[];

/** The records a scoped search ranks: those filed under the keys, and the ids named. */
export interface RankScope {
  readonly keyIds: readonly string[];
  readonly ids: readonly string[];
}

/** The weight of the lexical score in a fused one (the vector's is 1 − it). */
export const LEXICAL_WEIGHT = 0.3;

/** How many candidates each signal gives a fused ranking at least. */
const FUSION_POOL = 64;

/** Fuses two rankings of the same candidates: each record at the weighted sum of its two scores (a signal that missed it adds 0). */
export function fuse(vector: readonly IndexHit[], lexical: readonly IndexHit[], n: number): IndexHit[] {
  const fused = new Map<string, IndexHit & { score: number }>();
  for (const h of vector) fused.set(h.id, { ...h, score: (1 - LEXICAL_WEIGHT) * Math.max(0, h.score) });
  for (const h of lexical) {
    const part = LEXICAL_WEIGHT * h.score;
    const seen = fused.get(h.id);
    if (seen) seen.score += part;
    else fused.set(h.id, { ...h, score: part });
  }
  return [...fused.values()].sort((a, b) => b.score - a.score).slice(0, n);
}

/** The query's embedding, its words weighed by their rarity in the scope (a word every record holds — the user's own name — ranks nothing); undefined when it is all zeros. */
export async function queryVector(
  embedder: Vectors['embedder'],
  lexical: ShingleIndex,
  query: string,
  terms: TextShingles,
  scope: RankScope | undefined,
): Promise<Float32Array | undefined> {
  const weights = embedder.embedWeighted && terms.words.length > 0 ? rarity(lexical, terms.words, scope) : undefined;
  const vector = weights ? embedder.embedWeighted!(query, weights) : (await embedder.embed([query]))[0]!;
  return vector.some((x) => x !== 0) ? vector : undefined;
}

/**
 * The ranker of a query in one mode over a scope (undefined: every record): undefined
 * when the query has nothing to match on (stop words only), so it finds nothing rather
 * than `k` arbitrary records.
 */
export async function rankerFor(vectors: Vectors, query: string, mode: SearchMode, scope: RankScope | undefined): Promise<Ranker | undefined> {
  // one index of each kind for the whole search (a rebuild may swap in others meanwhile)
  const index = vectors.index;
  const lexicalIndex = vectors.lexical;
  let byVector: Ranker | undefined;
  let byWords: Ranker | undefined;
  const terms = vectors.shinglesOf(query);
  if (mode !== 'lexical') {
    const vector = await queryVector(vectors.embedder, lexicalIndex, query, terms, scope);
    if (vector) byVector = scope ? (n, keep) => index.searchWithin(vector, n, scope, keep) : (n, keep) => index.search(vector, n, keep);
  }
  if (mode !== 'vector') {
    if (terms.words.length > 0) {
      byWords = scope ? (n, keep) => bm25Within(lexicalIndex, terms, n, scope, keep) : (n, keep) => bm25(lexicalIndex, terms, n, (id) => keep(id));
    }
  }
  if (mode === 'vector') return byVector;
  if (mode === 'lexical' || !byVector) return byWords;
  if (!byWords) return byVector;
  const v = byVector;
  const w = byWords;
  // each signal's candidates from a wider pool: a record one signal ranks low still gets its part from the other
  return (n, keep) => fuse(v(Math.max(n, FUSION_POOL), keep), w(Math.max(n, FUSION_POOL), keep), n);
}

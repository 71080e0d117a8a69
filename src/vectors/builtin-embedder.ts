/**
 * The built-in embedder: static word vectors (word-vectors.ts) and feature hashing
 * (embedder.ts) side by side in one vector, so that the cosine of two texts is
 * WORD_WEIGHT · (cosine of their word-vector averages) + the rest · (cosine of their
 * hashed features). The word vectors meet texts that share meaning and no words
 * ("moved to Rose Street" / "where does she live"); the hashed features keep what
 * they miss (names, numbers, rare words, misspellings). No network, no model server.
 *
 * A text's word-vector half is the SIF average (Arora et al., 2017): each known
 * content word weighted a / (a + p(w)), p(w) estimated from its frequency rank by
 * Zipf's law, so frequent words count less. Measured on lethe's retrieval set
 * (bench/retrieval.ts) against the hashing embedder alone: docs/performance.md.
 */
import { type Embedder, type EmbedderSpec, HashingEmbedder, normalize, STOP_WORDS, tokenize } from './embedder.js';
import { type WordVectors, wordVectors } from './word-vectors.js';

/** The word vectors' share of the cosine. */
export const WORD_WEIGHT = 0.7;
/** SIF's a. */
const SIF_A = 1e-3;
/** Zipf's normaliser for GloVe's 400,000-word vocabulary: p(rank r) ≈ 1 / (r · H). */
const ZIPF_H = Math.log(400_000) + 0.5772;

export class BuiltInEmbedder implements Embedder {
  readonly model: string;
  readonly dimensions: number;
  readonly spec: EmbedderSpec | undefined;
  readonly #hashing: HashingEmbedder;
  readonly #words: WordVectors;

  /** `hashDimensions`: the hashed half's size (LETHE_EMBEDDING_DIMENSIONS). */
  constructor(hashDimensions = 512, words?: WordVectors) {
    this.#hashing = new HashingEmbedder(hashDimensions);
    this.#words = words ?? wordVectors();
    // word vectors of the caller's own cannot be built again on another thread
    this.spec = words || new.target !== BuiltInEmbedder ? undefined : { kind: 'builtin', hashDimensions };
    this.dimensions = this.#words.dimensions + hashDimensions;
    // letters, digits and dashes: the word vectors' package version and the hashed half's own model
    this.model = `lethe-words-v1-glove${this.#words.dimensions}-${this.#words.source.split('@')[1]!.replaceAll('.', '-')}-${this.#hashing.model}`;
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    return texts.map((t) => this.embedOne(t));
  }

  /** The cosine of the hashed halves alone: word vectors say two texts are about the same thing, not that one copies the other. */
  probeCosine(a: Float32Array, b: Float32Array): number {
    if (a.length !== this.dimensions || b.length !== this.dimensions) return 0;
    let dot = 0;
    let na = 0;
    let nb = 0;
    for (let i = this.#words.dimensions; i < a.length; i++) {
      dot += a[i]! * b[i]!;
      na += a[i]! * a[i]!;
      nb += b[i]! * b[i]!;
    }
    return na > 0 && nb > 0 ? dot / Math.sqrt(na * nb) : 0;
  }

  embedWeighted(text: string, weights: readonly number[]): Float32Array {
    return this.embedOne(text, weights);
  }

  /** `weights`: each content word's weight, in text order (embedWeighted); 1 when absent. */
  embedOne(text: string, weights?: readonly number[]): Float32Array {
    const { rows, ranks, scales, data, dimensions: dims } = this.#words;
    const words = new Float32Array(dims);
    let nth = 0;
    for (const word of tokenize(text)) {
      if (STOP_WORDS.has(word)) continue;
      const given = weights?.[nth++] ?? 1;
      const row = rows.get(word);
      if (row === undefined) continue;
      const weight = (SIF_A / (SIF_A + 1 / (ranks[row]! * ZIPF_H))) * scales[row]! * given;
      for (let i = 0, at = row * dims; i < dims; i++, at++) words[i]! += weight * data[at]!;
    }
    normalize(words);
    const hashed = this.#hashing.embedOne(text, weights);
    const out = new Float32Array(this.dimensions);
    const w = Math.sqrt(WORD_WEIGHT);
    const h = Math.sqrt(1 - WORD_WEIGHT);
    for (let i = 0; i < dims; i++) out[i] = w * words[i]!;
    for (let i = 0; i < hashed.length; i++) out[dims + i] = h * hashed[i]!;
    // a text with no known word: the hashed half alone, at unit length
    return normalize(out);
  }
}

/**
 * The embedder port, and the built-in embedder that needs no network and no model.
 *
 * The built-in embedder is feature hashing (Weinberger et al., 2009): each text becomes
 * a bag of features — content words, their Porter stems and character trigrams of each
 * word — hashed into a fixed number of signed dimensions, weighted by
 * sublinear term frequency, and L2-normalised, so the dot product of two vectors is
 * their cosine similarity. It matches paraphrases that share words or word stems
 * ("moved to Lisbon" / "relocating to lisbon"), not ones that share only meaning; a
 * model behind the OpenAI-compatible adapter does that.
 */
import { LetheError } from '../errors.js';
import { stemmer as porter } from 'stemmer';
import { comparisonForm } from './fold.js';

export interface Embedder {
  /** Names the vector space: vectors of different models are never compared. */
  readonly model: string;
  readonly dimensions: number;
  /** One unit-length vector per text, in order. */
  embed(texts: readonly string[]): Promise<Float32Array[]>;
  /**
   * A query's vector with each content word (a token not in STOP_WORDS, in text order)
   * counted `weights[i]` times as much: how a search weighs a query's words by their
   * rarity in its scope. Built-in embedders only; a model's adapter embeds the text as it is.
   */
  embedWeighted?(text: string, weights: readonly number[]): Float32Array;
  /**
   * How alike two of its vectors are for the reconstruction probe, which looks for
   * copies, not for texts about the same thing (default: their cosine). The built-in
   * embedder compares the hashed features alone: what LETHE_PROBE_SIMILARITY measures.
   */
  probeCosine?(a: Float32Array, b: Float32Array): number;
  /** How another thread builds the same embedder (seal-worker.ts); absent: it embeds on its own thread only. */
  readonly spec?: EmbedderSpec;
}

/** A built-in embedder, as a worker thread builds it again (a model's adapter has none: it embeds where it was made). */
export type EmbedderSpec = { readonly kind: 'hashing'; readonly dimensions: number } | { readonly kind: 'builtin'; readonly hashDimensions: number };

export const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'a an and are as at be been being but by did do does for from had has have he her hers him his i if in into is it its ' +
    'me my of on or our ours she so than that the their them they this those to too us was we were what when where which ' +
    'who whom will with would you your yours about after again all also am any because before both can could each few ' +
    'just more most no nor not now only other out over own same should some such then there these through under until up ' +
    'very while why how'
  ).split(' '),
);

/** A word's Porter stem (the `stemmer` package): "moving" and "moved" meet at "move", "relocation" and "relocating" at "reloc". */
export function stem(word: string): string {
  return porter(word);
}

/** The words of a text's comparison form (fold.ts: disguises undone, lower case, accents dropped, digit runs joined). */
export function tokenize(text: string): string[] {
  return comparisonForm(text).match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** FNV-1a, 32 bits: a fast non-cryptographic hash for feature buckets (not a secret). */
function fnv1a(text: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

export class HashingEmbedder implements Embedder {
  readonly model: string;
  readonly dimensions: number;
  readonly spec: EmbedderSpec | undefined;

  constructor(dimensions = 512) {
    if (!Number.isInteger(dimensions) || dimensions < 16 || dimensions > 4096) {
      throw new LetheError('validation_failed', 'embedding dimensions must be an integer from 16 to 4096');
    }
    this.dimensions = dimensions;
    this.model = `lethe-hash-v3-${dimensions}`;
    // a subclass embeds in its own way: a worker could not build it again from this
    this.spec = new.target === HashingEmbedder ? { kind: 'hashing', dimensions } : undefined;
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    return texts.map((t) => this.embedOne(t));
  }

  embedWeighted(text: string, weights: readonly number[]): Float32Array {
    return this.embedOne(text, weights);
  }

  /** `weights`: each content word's weight, in text order (embedWeighted); 1 when absent. */
  embedOne(text: string, weights?: readonly number[]): Float32Array {
    // feature → [weight, occurrences]
    const features = new Map<string, [number, number]>();
    const add = (feature: string, weight: number) => {
      const seen = features.get(feature);
      if (seen) {
        seen[1]++;
        seen[0] = Math.max(seen[0], weight);
      } else features.set(feature, [weight, 1]);
    };
    // Weights chosen on a hand-written paraphrase set (test/search/paraphrases.json),
    // averaged over a dozen hash seeds so they do not fit one collision pattern: word
    // bigrams cost more in collisions than they gave; character trigrams carry the
    // morphology stems miss ("diabetes" / "diabetic").
    let nth = 0;
    for (const word of tokenize(text)) {
      if (STOP_WORDS.has(word)) continue;
      const w = weights?.[nth++] ?? 1;
      add(`w:${word}`, w);
      add(`s:${stem(word)}`, w);
      const padded = `<${word}>`;
      for (let i = 0; i + 3 <= padded.length; i++) add(`c:${padded.slice(i, i + 3)}`, 0.4 * w);
    }
    const vector = new Float32Array(this.dimensions);
    for (const [feature, [weight, count]] of features) {
      const h = fnv1a(feature, 0);
      const sign = fnv1a(feature, 0x9e3779b9) & 1 ? 1 : -1;
      vector[h % this.dimensions]! += sign * weight * (1 + Math.log(count));
    }
    return normalize(vector);
  }
}

export function normalize(vector: Float32Array): Float32Array {
  let norm = 0;
  for (let i = 0; i < vector.length; i++) norm += vector[i]! * vector[i]!;
  norm = Math.sqrt(norm);
  if (norm > 0) for (let i = 0; i < vector.length; i++) vector[i]! /= norm;
  return vector;
}

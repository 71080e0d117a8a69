/**
 * The reconstruction probe's pure parts: fingerprints of the subject's content and
 * the score of what survives.
 *
 * A fingerprint of one record is its embedding and its word shingles: content words
 * and pairs of consecutive ones (stop words dropped, crude stems), each stored only as a
 * keyed hash (HMAC-SHA256 under the erasure's own key, 8 bytes). Neither holds the
 * text; both are sealed under the erasure key at rest and die with it.
 *
 * A surviving record c carries private record r to the degree
 *   score(r, c) = max(containment(r, c), cosine(r, c) when ≥ the similarity setting)
 * where containment is the fraction of r's shingles found in c; a score below
 * MATCH_MIN_SCORE is shared vocabulary and counts as 0. The probe's `recovered` is the
 * mean over the subject's records of their best score, weighted by shingle count: the
 * fraction of the subject's private content recoverable from what remains readable.
 * Every record that contributes to it is named in `matches`.
 */
import { KeyedHasher, toBase64Url, utf8 } from '../crypto/index.js';
import { STOP_WORDS, stem, tokenize } from '../vectors/embedder.js';
import type { ProbeMatch } from './view.js';

/** Candidates reported as matches score at least this much against some private record. */
export const MATCH_MIN_SCORE = 0.25;

/** Nearest neighbours looked at per fingerprint vector and per public attribute. */
export const PROBE_NEIGHBOURS = 8;

/** Fingerprinted records used as nearest-neighbour queries (every record is still scored against every candidate). */
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
  /** Keyed hashes of the record's shingles. */
  readonly shingles: ReadonlySet<string>;
}

export interface Fingerprints {
  /** The embedder model the vectors came from (vectors of another model are not compared). */
  readonly model: string;
  readonly records: readonly RecordFingerprint[];
  /** The request's public attributes, used as search queries. */
  readonly attributes: readonly string[];
}

export interface ProbeCandidate {
  readonly id: string;
  readonly tier: ProbeMatch['tier'];
  readonly vector: Float32Array;
  readonly shingles: ReadonlySet<string>;
}

/**
 * Word shingles of a text: its content words (stop words dropped, stemmed) and the
 * pairs of consecutive ones. Single words catch a summary that rearranges the text
 * ("birdwatching ACME-42" from "loves birdwatching in the marshes, ACME-42"); pairs
 * weigh wording that survives intact.
 */
export function shingleTexts(text: string): string[] {
  const words = tokenize(text)
    .filter((w) => !STOP_WORDS.has(w))
    .map(stem);
  const out = new Set<string>(words);
  for (let i = 0; i + 1 < words.length; i++) out.add(`${words[i]} ${words[i + 1]}`);
  return [...out];
}

/** How many bytes of each shingle's HMAC are kept. */
const SHINGLE_HASH_BYTES = 8;

/** Keyed hashes (8 bytes, base64url) of a text's shingles, under `key` or an already keyed hasher. */
export function keyedShingles(text: string, key: Uint8Array | KeyedHasher): Set<string> {
  const hasher = key instanceof KeyedHasher ? key : new KeyedHasher(key);
  try {
    return hasher.truncated(shingleTexts(text), SHINGLE_HASH_BYTES);
  } finally {
    if (hasher !== key) hasher.destroy();
  }
}

function dot(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return 0;
  let d = 0;
  for (let i = 0; i < a.length; i++) d += a[i]! * b[i]!;
  return d;
}

export function containment(record: ReadonlySet<string>, candidate: ReadonlySet<string>): number {
  if (record.size === 0) return 0;
  let hit = 0;
  for (const s of record) if (candidate.has(s)) hit++;
  return hit / record.size;
}

/** How much of `record` the candidate carries (0..1). */
export function pairScore(record: RecordFingerprint, candidate: ProbeCandidate, similarity: number): number {
  const cosine = dot(record.vector, candidate.vector);
  const semantic = cosine >= similarity ? Math.min(1, cosine) : 0;
  return Math.max(containment(record.shingles, candidate.shingles), semantic);
}

const round = (x: number): number => Math.round(x * 1e4) / 1e4;

/**
 * `recovered` and the candidates that carry something. A record with no shingles
 * (punctuation only) weighs 1, so it still counts when its vector is found.
 */
export function scoreProbe(
  records: readonly RecordFingerprint[],
  candidates: readonly ProbeCandidate[],
  similarity: number,
): { recovered: number; matches: ProbeMatch[] } {
  if (records.length === 0) return { recovered: 0, matches: [] };
  const best = new Map<string, ProbeMatch>();
  let weighted = 0;
  let total = 0;
  for (const r of records) {
    let top = 0;
    for (const c of candidates) {
      const score = pairScore(r, c, similarity);
      // below the match floor a score is shared vocabulary, not the record: it counts for nothing,
      // so whatever `recovered` reports is carried by a record `matches` names
      if (score < MATCH_MIN_SCORE) continue;
      if (score > top) top = score;
      if (score > (best.get(c.id)?.score ?? 0)) best.set(c.id, { id: c.id, tier: c.tier, score: round(score) });
    }
    const weight = Math.max(1, r.shingles.size);
    weighted += weight * top;
    total += weight;
  }
  const matches = [...best.values()].sort((a, b) => b.score - a.score || a.id.localeCompare(b.id));
  return { recovered: round(weighted / total), matches };
}

/** Fingerprints as bytes to seal (vectors as base64url float32, shingles as their hashes). */
export function encodeFingerprints(f: Fingerprints): Uint8Array {
  return utf8.encode(
    JSON.stringify({
      model: f.model,
      attributes: f.attributes,
      records: f.records.map((r) => ({
        id: r.id,
        v: toBase64Url(new Uint8Array(r.vector.buffer, r.vector.byteOffset, r.vector.byteLength)),
        s: [...r.shingles],
      })),
    }),
  );
}

export function decodeFingerprints(bytes: Uint8Array): Fingerprints {
  const raw = JSON.parse(utf8.decode(bytes)) as { model: string; attributes: string[]; records: Array<{ id: string; v: string; s: string[] }> };
  return {
    model: raw.model,
    attributes: raw.attributes,
    records: raw.records.map((r) => {
      const b = Buffer.from(r.v, 'base64url');
      const vector = new Float32Array(b.byteLength / 4);
      new Uint8Array(vector.buffer).set(b);
      b.fill(0);
      return { id: r.id, vector, shingles: new Set(r.s) };
    }),
  };
}

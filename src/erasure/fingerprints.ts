/** The probe's fingerprints of the subject's records (embedding and keyed shingles in text order, never the text) and their sealed form's bytes. */
import { toBase64Url, utf8 } from '../crypto/index.js';
import { LetheError } from '../errors.js';

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

/** The sealed form's version: fingerprints of another version are refused, never misread. */
export const FINGERPRINTS_VERSION = 2;

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

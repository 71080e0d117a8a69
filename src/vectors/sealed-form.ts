/**
 * The sealed form of a record's embedding, without the database: the int8 quantisation
 * of the vector, the plaintext layout (format 1: vector; format 2: shingle set first),
 * and sealing and opening it under the key of its text. Kept apart from embeddings.ts
 * (the rows, their SQL and events) so the rebuild's worker threads (open-worker.ts)
 * load only this, the crypto module and the shingle set's encoding.
 */
import { encodeContext, open, seal } from '../crypto/index.js';
import { LetheError } from '../errors.js';
import { decodeShingleSet, encodeShingleSet } from './shingles.js';

export interface EmbeddingPlace {
  readonly recordId: string;
  readonly keyId: string;
  readonly model: string;
}

function context(place: EmbeddingPlace): Uint8Array {
  return encodeContext('embedding', { recordId: place.recordId, keyId: place.keyId, model: place.model });
}

/**
 * At rest a vector is int8-quantised with one scale per vector (format byte 1, the
 * scale as float32, then one signed byte per dimension): a quarter of the bytes to
 * seal, store and decrypt at start-up, for a cosine error far below what separates
 * neighbours. The index holds the dequantised vector, so a vector scores the same
 * before and after a restart.
 */
const QUANTISED_INT8 = 1;
/**
 * Format 2 puts the record's sorted keyed shingle set (shingles.ts) first — a u32
 * count and one float64 per shingle — then format 1's scale and bytes: the lexical
 * index reads the set even from a row of another embedder model.
 */
const WITH_SHINGLES = 2;

export function quantise(vector: Float32Array): { scale: number; q: Int8Array } {
  let max = 0;
  for (let i = 0; i < vector.length; i++) max = Math.max(max, Math.abs(vector[i]!));
  const scale = max > 0 ? max / 127 : 1;
  const q = new Int8Array(vector.length);
  for (let i = 0; i < vector.length; i++) q[i] = Math.max(-127, Math.min(127, Math.round(vector[i]! / scale)));
  return { scale: Math.fround(scale), q };
}

export function dequantise(scale: number, q: Int8Array): Float32Array {
  const out = new Float32Array(q.length);
  for (let i = 0; i < q.length; i++) out[i] = q[i]! * scale;
  return out;
}

/** The vector exactly as it will read back from its sealed form. */
export function storedForm(vector: Float32Array): Float32Array {
  const { scale, q } = quantise(vector);
  return dequantise(scale, q);
}

export function sealEmbedding(key: Uint8Array, place: EmbeddingPlace, vector: Float32Array, shingles?: Float64Array): Uint8Array {
  const { scale, q } = quantise(vector);
  const set = shingles ? encodeShingleSet(shingles) : new Uint8Array(0);
  const plaintext = new Uint8Array(1 + set.length + 4 + q.length);
  plaintext[0] = shingles ? WITH_SHINGLES : QUANTISED_INT8;
  plaintext.set(set, 1);
  new DataView(plaintext.buffer).setFloat32(1 + set.length, scale, true);
  plaintext.set(new Uint8Array(q.buffer, q.byteOffset, q.byteLength), 5 + set.length);
  try {
    return seal({ key, keyId: place.keyId, plaintext, associatedData: context(place) });
  } finally {
    plaintext.fill(0);
    set.fill(0);
    q.fill(0);
  }
}

/**
 * A sealed row moved from one key to another (a re-key): opened once under the old key,
 * sealed byte for byte under the new one — no re-embedding — and what it holds (for the
 * in-memory indexes).
 */
export function resealEmbedding(
  from: { key: Uint8Array; place: EmbeddingPlace },
  to: { key: Uint8Array; place: EmbeddingPlace },
  sealed: Uint8Array,
  dimensions: number,
): { sealed: Uint8Array; opened: OpenedRecord } {
  const plaintext = open({ key: from.key, envelope: sealed, expectedKeyId: from.place.keyId, associatedData: context(from.place) });
  try {
    return {
      sealed: seal({ key: to.key, keyId: to.place.keyId, plaintext, associatedData: context(to.place) }),
      opened: dequantised(parseRecord(plaintext, dimensions)),
    };
  } finally {
    plaintext.fill(0);
  }
}

/** What a sealed row holds: the vector (when it has `dimensions`), and the shingle set (absent from rows written before lexical indexing). */
export interface OpenedRecord {
  readonly vector: Float32Array | undefined;
  readonly shingles: Float64Array | undefined;
}

/** The same, the vector as it is stored (int8 and its scale): what the index holds, without a float32 copy between. */
export interface OpenedQuantised {
  readonly vector: QuantisedVector | undefined;
  readonly shingles: Float64Array | undefined;
}

export interface QuantisedVector {
  readonly scale: number;
  readonly q: Int8Array;
}

export function openSealedRecord(key: Uint8Array, place: EmbeddingPlace, sealed: Uint8Array, dimensions: number): OpenedRecord {
  return dequantised(openSealedQuantised(key, place, sealed, dimensions));
}

/** The record with its vector as float32 (the int8 copy zeroed). */
function dequantised({ vector, shingles }: OpenedQuantised): OpenedRecord {
  if (!vector) return { vector: undefined, shingles };
  try {
    return { vector: dequantise(vector.scale, vector.q), shingles };
  } finally {
    vector.q.fill(0);
  }
}

export function openSealedQuantised(key: Uint8Array, place: EmbeddingPlace, sealed: Uint8Array, dimensions: number): OpenedQuantised {
  const plaintext = open({ key, envelope: sealed, expectedKeyId: place.keyId, associatedData: context(place) });
  try {
    return parseRecord(plaintext, dimensions);
  } finally {
    plaintext.fill(0);
  }
}

/** A sealed row's plaintext read: the shingle set (format 2) and the vector (when it has `dimensions`); copies, the caller zeroes the plaintext. */
function parseRecord(plaintext: Uint8Array, dimensions: number): OpenedQuantised {
  let at = 1;
  let shingles: Float64Array | undefined;
  if (plaintext[0] === WITH_SHINGLES) {
    shingles = decodeShingleSet(plaintext, 1);
    if (!shingles) throw new LetheError('decrypt_failed', 'a stored shingle set is malformed');
    at += 4 + shingles.length * 8;
  } else if (plaintext[0] !== QUANTISED_INT8) throw new LetheError('decrypt_failed', 'a stored embedding has another format');
  if (plaintext.length !== at + 4 + dimensions) return { vector: undefined, shingles };
  const scale = new DataView(plaintext.buffer, plaintext.byteOffset, plaintext.byteLength).getFloat32(at, true);
  return { vector: { scale, q: new Int8Array(plaintext.slice(at + 4, at + 4 + dimensions).buffer) }, shingles };
}

export function openEmbedding(key: Uint8Array, place: EmbeddingPlace, sealed: Uint8Array, dimensions: number): Float32Array {
  const { vector } = openSealedRecord(key, place, sealed, dimensions);
  if (!vector) throw new LetheError('decrypt_failed', 'a stored embedding has the wrong dimensions');
  return vector;
}

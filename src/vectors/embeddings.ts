/**
 * Embeddings at rest: each vector — and beside it the record's keyed shingle set, what
 * the lexical index files it under — sealed under the key of the text they were
 * computed from (the subject's DEK for an entry, the version key for an artifact), with
 * the record id, key id and model as associated data. Neither is ever stored in the
 * clear, and destroying the key destroys both.
 */
import { type SQL, sql } from 'drizzle-orm';
import { encodeContext, open, seal } from '../crypto/index.js';
import { EVENTS_CHANNEL, type Executor } from '../db/client.js';
import { LetheError } from '../errors.js';
import { notify } from '../vault/events.js';
import { decodeShingleSet, encodeShingleSet } from './shingles.js';
import type { RecordType } from './vector-index.js';

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

function quantise(vector: Float32Array): { scale: number; q: Int8Array } {
  let max = 0;
  for (let i = 0; i < vector.length; i++) max = Math.max(max, Math.abs(vector[i]!));
  const scale = max > 0 ? max / 127 : 1;
  const q = new Int8Array(vector.length);
  for (let i = 0; i < vector.length; i++) q[i] = Math.max(-127, Math.min(127, Math.round(vector[i]! / scale)));
  return { scale: Math.fround(scale), q };
}

function dequantise(scale: number, q: Int8Array): Float32Array {
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
    return { sealed: seal({ key: to.key, keyId: to.place.keyId, plaintext, associatedData: context(to.place) }), opened: parseRecord(plaintext, dimensions) };
  } finally {
    plaintext.fill(0);
  }
}

/** What a sealed row holds: the vector (when it has `dimensions`), and the shingle set (absent from rows written before lexical indexing). */
export interface OpenedRecord {
  readonly vector: Float32Array | undefined;
  readonly shingles: Float64Array | undefined;
}

export function openSealedRecord(key: Uint8Array, place: EmbeddingPlace, sealed: Uint8Array, dimensions: number): OpenedRecord {
  const plaintext = open({ key, envelope: sealed, expectedKeyId: place.keyId, associatedData: context(place) });
  try {
    return parseRecord(plaintext, dimensions);
  } finally {
    plaintext.fill(0);
  }
}

/** A sealed row's plaintext read: the shingle set (format 2) and the vector (when it has `dimensions`); copies, the caller zeroes the plaintext. */
function parseRecord(plaintext: Uint8Array, dimensions: number): OpenedRecord {
  let at = 1;
  let shingles: Float64Array | undefined;
  if (plaintext[0] === WITH_SHINGLES) {
    shingles = decodeShingleSet(plaintext, 1);
    if (!shingles) throw new LetheError('decrypt_failed', 'a stored shingle set is malformed');
    at += 4 + shingles.length * 8;
  } else if (plaintext[0] !== QUANTISED_INT8) throw new LetheError('decrypt_failed', 'a stored embedding has another format');
  if (plaintext.length !== at + 4 + dimensions) return { vector: undefined, shingles };
  const scale = new DataView(plaintext.buffer, plaintext.byteOffset, plaintext.byteLength).getFloat32(at, true);
  return { vector: dequantise(scale, new Int8Array(plaintext.buffer, plaintext.byteOffset + at + 4, dimensions)), shingles };
}

export function openEmbedding(key: Uint8Array, place: EmbeddingPlace, sealed: Uint8Array, dimensions: number): Float32Array {
  const { vector } = openSealedRecord(key, place, sealed, dimensions);
  if (!vector) throw new LetheError('decrypt_failed', 'a stored embedding has the wrong dimensions');
  return vector;
}

/** A sealed embedding row ready to insert. */
export interface SealedEmbedding {
  readonly recordId: string;
  readonly recordType: RecordType;
  readonly keyId: string;
  readonly model: string;
  readonly sealed: Uint8Array;
}

/** The rows as one JSON parameter (hex bytes), for set-based inserts. */
export function embeddingsJson(rows: readonly SealedEmbedding[]): string {
  return JSON.stringify(
    rows.map((r) => ({ record_id: r.recordId, record_type: r.recordType, key_id: r.keyId, model: r.model, sealed: Buffer.from(r.sealed).toString('hex') })),
  );
}

/** Inserts or replaces sealed embeddings (one statement). */
export async function upsertEmbeddings(exec: Executor, rows: readonly SealedEmbedding[]): Promise<void> {
  if (rows.length === 0) return;
  await exec.execute(sql`insert into embeddings (record_id, record_type, key_id, model, sealed)
    select record_id, record_type, key_id, model, decode(sealed, 'hex')
      from json_to_recordset(${embeddingsJson(rows)}::json) as v(record_id text, record_type text, key_id text, model text, sealed text)
    on conflict (record_id) do update set record_type = excluded.record_type, key_id = excluded.key_id,
                                          model = excluded.model, sealed = excluded.sealed`);
}

/**
 * `emb as (insert …)`: a CTE inserting the sealed embeddings of the records that the
 * CTE `gate` returned (`entry_id`), for a caller that indexes records and their
 * embeddings in one statement (they commit together, or neither does). Pair it with
 * `notifyInsertedEmbeddings` as the statement's final select.
 */
export function insertEmbeddingsCte(rows: readonly SealedEmbedding[], gate: string): SQL {
  return sql`emb as (
    insert into embeddings (record_id, record_type, key_id, model, sealed)
    select e.record_id, e.record_type, e.key_id, e.model, decode(e.sealed, 'hex')
      from json_to_recordset(${embeddingsJson(rows)}::json)
           as e(record_id text, record_type text, key_id text, model text, sealed text)
      join ${sql.identifier(gate)} g on g.entry_id = e.record_id
    on conflict (record_id) do nothing
    returning record_id, key_id)`;
}

/** The final select after `insertEmbeddingsCte`: the inserted record ids, each announced to the other replicas. */
export const notifyInsertedEmbeddings: SQL = sql`select record_id,
    pg_notify(${EVENTS_CHANNEL}, json_build_object('t', 'embeddings', 'r', json_build_array(json_build_array(record_id, key_id)))::text)
  from emb`;

/** Records per embeddings notification (a NOTIFY payload is limited to 8,000 bytes). */
export const EMBEDDINGS_PER_NOTIFY = 100;

/** Tells other replicas about written embeddings, in as few notifications as fit. */
export async function notifyEmbeddings(exec: Executor, records: ReadonlyArray<{ recordId: string; keyId: string }>): Promise<void> {
  for (let i = 0; i < records.length; i += EMBEDDINGS_PER_NOTIFY) {
    const r = records.slice(i, i + EMBEDDINGS_PER_NOTIFY).map((x) => [x.recordId, x.keyId] as const);
    await notify(exec, { t: 'embeddings', r });
  }
}

/** The records of an `embeddings` event, checked (a notification is untrusted input). */
export function embeddingsOfEvent(event: Readonly<Record<string, unknown>>): Array<readonly [string, string]> {
  if (!Array.isArray(event.r)) return [];
  return event.r.filter((x): x is [string, string] => Array.isArray(x) && typeof x[0] === 'string' && typeof x[1] === 'string');
}

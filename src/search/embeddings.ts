/**
 * Embeddings at rest: each vector sealed under the key of the text it was computed
 * from (the subject's DEK for an entry, the version key for an artifact), with the
 * record id, key id and model as associated data. A vector is never stored in the
 * clear, and destroying the key destroys it.
 */
import { sql } from 'drizzle-orm';
import { encodeContext, open, seal } from '../crypto/index.js';
import type { Executor } from '../db/client.js';
import { LetheError } from '../errors.js';
import type { RecordType } from './vector-index.js';

export interface EmbeddingPlace {
  readonly recordId: string;
  readonly keyId: string;
  readonly model: string;
}

function context(place: EmbeddingPlace): Uint8Array {
  return encodeContext('embedding', { recordId: place.recordId, keyId: place.keyId, model: place.model });
}

export function sealEmbedding(key: Uint8Array, place: EmbeddingPlace, vector: Float32Array): Uint8Array {
  const plaintext = new Uint8Array(vector.length * 4);
  const view = new DataView(plaintext.buffer);
  for (let i = 0; i < vector.length; i++) view.setFloat32(i * 4, vector[i]!, true);
  try {
    return seal({ key, keyId: place.keyId, plaintext, associatedData: context(place) });
  } finally {
    plaintext.fill(0);
  }
}

export function openEmbedding(key: Uint8Array, place: EmbeddingPlace, sealed: Uint8Array, dimensions: number): Float32Array {
  const plaintext = open({ key, envelope: sealed, expectedKeyId: place.keyId, associatedData: context(place) });
  try {
    if (plaintext.length !== dimensions * 4) throw new LetheError('decrypt_failed', 'a stored embedding has the wrong dimensions');
    const view = new DataView(plaintext.buffer, plaintext.byteOffset, plaintext.byteLength);
    const out = new Float32Array(dimensions);
    for (let i = 0; i < dimensions; i++) out[i] = view.getFloat32(i * 4, true);
    return out;
  } finally {
    plaintext.fill(0);
  }
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

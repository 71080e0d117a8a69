/**
 * Embedding, shingling and sealing records under the key of their text: no database,
 * no indexes — the calling thread (seal.ts) and the indexer's seal workers
 * (seal-worker.ts) run the same function.
 */
import type { Embedder } from './embedder.js';
import { sealEmbedding, storedForm } from './sealed-form.js';
import { FOLD_VERSION } from './fold.js';
import type { ShingleHasher } from './shingles.js';
import type { RecordType } from './vector-slots.js';
import type { SealedEmbedding } from './embeddings.js';

/** Texts per embedder call. */
export const EMBED_CHUNK = 64;

/** A sealed row with the vector and shingle set it will read back as. */
export type Sealed = SealedEmbedding & { readonly vector: Float32Array; readonly shingles: Float64Array };

export type KeyedText = { recordId: string; recordType: RecordType; text: string; keyId: string; key: Uint8Array };

/** What sealing needs: the embedder and the keyed shingles. */
export interface Sealer {
  readonly embedder: Embedder;
  readonly shingles: ShingleHasher;
}

/** Embeds all texts in one embedder call (unless `embedded` gives their vectors), and seals each vector and shingle set under its own record's key. */
export async function sealRecords(s: Sealer, records: readonly KeyedText[], embedded?: readonly Float32Array[]): Promise<Sealed[]> {
  if (records.length === 0) return [];
  const vectors = embedded ?? (await s.embedder.embed(records.map((r) => r.text)));
  const model = s.embedder.model;
  try {
    return sealEach(s, records, vectors, model);
  } finally {
    // what it embedded itself (the caller's own vectors are the caller's to zero)
    if (!embedded) for (const v of vectors) v.fill(0);
  }
}

function sealEach(s: Sealer, records: readonly KeyedText[], vectors: readonly Float32Array[], model: string): Sealed[] {
  return records.map((r, i) => {
    const shingles = s.shingles.setOf(r.text);
    return {
      recordId: r.recordId,
      recordType: r.recordType,
      keyId: r.keyId,
      model,
      sealed: sealEmbedding(r.key, { recordId: r.recordId, keyId: r.keyId, model }, vectors[i]!, shingles),
      foldVersion: FOLD_VERSION,
      // what a restart will read back, so scores do not move across restarts
      vector: storedForm(vectors[i]!),
      shingles,
    };
  });
}

/** Sealing: texts embedded, shingled and sealed under the key of their text; a re-key's rows re-sealed under the new key as they are. */
import { sql } from 'drizzle-orm';
import { queryRows } from '../db/client.js';
import type { IndexedRecord, Sealed, SealedRow, VectorsContext } from './context.js';
import { resealEmbedding, type SealedEmbedding } from './embeddings.js';
import { type KeyedText, sealRecords } from './sealing.js';
import type { RecordType } from './vector-index.js';

/** Rows re-sealed between two turns of the event loop. */
const YIELD_EVERY = 256;

/** Embeds and shingles texts and seals each vector and shingle set under `key` (the key of its text). */
export function seal(
  c: VectorsContext,
  records: ReadonlyArray<{ recordId: string; recordType: RecordType; text: string }>,
  keyId: string,
  key: Uint8Array,
): Promise<Sealed[]> {
  return sealEach(
    c,
    records.map((r) => ({ ...r, keyId, key })),
  );
}

/** Embeds all texts in one embedder call, and seals each vector and shingle set under its own record's key. */
export function sealEach(
  c: VectorsContext,
  records: readonly KeyedText[],
  /** The records' vectors, when the caller embedded them already (one embedder call for more records than it seals at once). */
  embedded?: readonly Float32Array[],
): Promise<Sealed[]> {
  return sealRecords(c.d, records, embedded);
}

/**
 * A re-key (src/log/rekey.ts): the sealed rows stored under `from` of the records
 * `to` names, each re-sealed under its record's new key as it is — no re-embedding —
 * ready to upsert in the re-key's transaction, and opened to publish after it commits.
 */
export async function reseal(
  c: VectorsContext,
  from: { keyId: string; key: Uint8Array },
  targets: ReadonlyMap<string, { keyId: string; key: Uint8Array }>,
): Promise<Array<IndexedRecord & SealedEmbedding>> {
  const rows = await queryRows<SealedRow>(
    c.d.db,
    sql`select record_id, record_type, key_id, model, sealed, fold_version from embeddings where key_id = ${from.keyId}`,
  );
  const out: Array<IndexedRecord & SealedEmbedding> = [];
  for (const [i, row] of rows.entries()) {
    // two envelope operations a row: let requests run between chunks
    if (i > 0 && i % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
    const to = targets.get(row.record_id);
    if (!to) continue;
    const sealed = new Uint8Array(row.sealed.buffer, row.sealed.byteOffset, row.sealed.byteLength);
    const moved = resealEmbedding(
      { key: from.key, place: { recordId: row.record_id, keyId: from.keyId, model: row.model } },
      { key: to.key, place: { recordId: row.record_id, keyId: to.keyId, model: row.model } },
      sealed,
      c.d.embedder.dimensions,
    );
    // what openRow (publish.ts) would answer: the vector only when it is of this embedder's model
    const vector = row.model === c.d.embedder.model ? moved.opened.vector : undefined;
    // the same bytes under another key: still of the comparison form they were computed with
    out.push({
      recordId: row.record_id,
      recordType: row.record_type,
      keyId: to.keyId,
      model: row.model,
      sealed: moved.sealed,
      foldVersion: row.fold_version,
      vector,
      shingles: moved.opened.shingles,
    });
  }
  return out;
}

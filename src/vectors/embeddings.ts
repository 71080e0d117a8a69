/**
 * Embeddings at rest: each vector — and beside it the record's keyed shingle set, what
 * the lexical index files it under — sealed under the key of the text they were
 * computed from (the subject's DEK for an entry, the version key for an artifact), with
 * the record id, key id and model as associated data. Neither is ever stored in the
 * clear, and destroying the key destroys both. The sealed form itself (quantisation,
 * layout, seal and open) is sealed-form.ts; this module is the rows, their SQL and events.
 */
import { type SQL, sql } from 'drizzle-orm';
import { EVENTS_CHANNEL, type Executor } from '../db/client.js';
import { notify } from '../vault/events.js';
import type { RecordType } from './vector-index.js';

export {
  dequantise,
  type EmbeddingPlace,
  openEmbedding,
  type OpenedRecord,
  openSealedRecord,
  quantise,
  resealEmbedding,
  sealEmbedding,
  storedForm,
} from './sealed-form.js';

/** A sealed embedding row ready to insert. */
export interface SealedEmbedding {
  readonly recordId: string;
  readonly recordType: RecordType;
  readonly keyId: string;
  readonly model: string;
  readonly sealed: Uint8Array;
  /** The comparison form (fold.ts) its shingles and vector were computed from. */
  readonly foldVersion: number;
}

/** The rows as one JSON parameter (hex bytes), for set-based inserts. */
export function embeddingsJson(rows: readonly SealedEmbedding[]): string {
  return JSON.stringify(
    rows.map((r) => ({
      record_id: r.recordId,
      record_type: r.recordType,
      key_id: r.keyId,
      model: r.model,
      sealed: Buffer.from(r.sealed).toString('hex'),
      fold_version: r.foldVersion,
    })),
  );
}

/** Inserts or replaces sealed embeddings (one statement). */
export async function upsertEmbeddings(exec: Executor, rows: readonly SealedEmbedding[]): Promise<void> {
  if (rows.length === 0) return;
  await exec.execute(sql`insert into embeddings (record_id, record_type, key_id, model, sealed, fold_version)
    select record_id, record_type, key_id, model, decode(sealed, 'hex'), fold_version
      from json_to_recordset(${embeddingsJson(rows)}::json)
           as v(record_id text, record_type text, key_id text, model text, sealed text, fold_version integer)
    on conflict (record_id) do update set record_type = excluded.record_type, key_id = excluded.key_id,
                                          model = excluded.model, sealed = excluded.sealed, fold_version = excluded.fold_version`);
}

/**
 * `emb as (insert …)`: a CTE inserting the sealed embeddings of the records that the
 * CTE `gate` returned (`entry_id`), for a caller that indexes records and their
 * embeddings in one statement (they commit together, or neither does). Pair it with
 * `notifyInsertedEmbeddings` as the statement's final select.
 */
export function insertEmbeddingsCte(rows: readonly SealedEmbedding[], gate: string): SQL {
  return sql`emb as (
    insert into embeddings (record_id, record_type, key_id, model, sealed, fold_version)
    select e.record_id, e.record_type, e.key_id, e.model, decode(e.sealed, 'hex'), e.fold_version
      from json_to_recordset(${embeddingsJson(rows)}::json)
           as e(record_id text, record_type text, key_id text, model text, sealed text, fold_version integer)
      join ${sql.identifier(gate)} g on g.entry_id = e.record_id
    on conflict (record_id) do nothing
    returning record_id, key_id)`;
}

/** The final select after `insertEmbeddingsCte`: the inserted record ids, each announced to the other replicas (and the caller's `also` columns). */
export function notifyInsertedEmbeddings(also?: SQL): SQL {
  return sql`select record_id,
    pg_notify(${EVENTS_CHANNEL}, json_build_object('t', 'embeddings', 'r', json_build_array(json_build_array(record_id, key_id)))::text)
    ${also ? sql`, ${also}` : sql``}
  from emb`;
}

/** Records per embeddings notification (a NOTIFY payload is limited to 8,000 bytes). */
export const EMBEDDINGS_PER_NOTIFY = 100;

/**
 * Tells other replicas about written embeddings, in as few notifications as fit.
 * `rewritten`: rows computed again under the key they already had (a re-index), which a
 * replica must load even though it holds the record under that key.
 */
export async function notifyEmbeddings(
  exec: Executor,
  records: ReadonlyArray<{ recordId: string; keyId: string }>,
  options: { rewritten?: boolean } = {},
): Promise<void> {
  for (let i = 0; i < records.length; i += EMBEDDINGS_PER_NOTIFY) {
    const r = records
      .slice(i, i + EMBEDDINGS_PER_NOTIFY)
      .map((x) => (options.rewritten ? ([x.recordId, x.keyId, 1] as const) : ([x.recordId, x.keyId] as const)));
    await notify(exec, { t: 'embeddings', r });
  }
}

/** A record of an `embeddings` event: record id, key id, and whether it was rewritten under the same key (a re-index). */
export type WrittenEmbedding = readonly [recordId: string, keyId: string, rewritten?: boolean];

/** The records of an `embeddings` event, checked (a notification is untrusted input). */
export function embeddingsOfEvent(event: Readonly<Record<string, unknown>>): WrittenEmbedding[] {
  if (!Array.isArray(event.r)) return [];
  return event.r
    .filter((x): x is [string, string, ...unknown[]] => Array.isArray(x) && typeof x[0] === 'string' && typeof x[1] === 'string')
    .map((x) => (x[2] === 1 ? [x[0], x[1], true] : [x[0], x[1]]));
}

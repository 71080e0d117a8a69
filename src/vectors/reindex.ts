/**
 * The re-index of rows of an older comparison form (fold.ts FOLD_VERSION) or of another
 * embedder model than the configured one: finding and counting them, and writing them
 * again from their text under the same key (src/app/reindex.ts reads the texts), so a
 * model change re-embeds the store and never mixes two vector spaces.
 */
import { sql } from 'drizzle-orm';
import { zeroize } from '../crypto/index.js';
import { queryRows } from '../db/client.js';
import { isLetheError } from '../errors.js';
import { keyFor, type Sealed, type VectorsContext } from './context.js';
import { embeddingsJson, notifyEmbeddings } from './embeddings.js';
import { FOLD_VERSION } from './fold.js';
import { publish, publishingRecords } from './publish.js';
import { sealEach } from './seal.js';
import type { RecordType } from './vector-index.js';

/**
 * Sealed rows of live keys whose shingles and vector were computed with an older
 * comparison form than FOLD_VERSION (fold.ts) or another model, in record-id order after `after`: what a
 * re-index reads the text of again (src/app/reindex.ts).
 */
export async function staleRows(c: VectorsContext, limit: number, after?: string): Promise<Array<{ recordId: string; recordType: RecordType; keyId: string }>> {
  const rows = await queryRows<{ record_id: string; record_type: RecordType; key_id: string }>(
    c.d.db,
    sql`select record_id, record_type, key_id from embeddings e
         where (fold_version < ${FOLD_VERSION} or model <> ${c.d.embedder.model}) ${after === undefined ? sql`` : sql`and record_id > ${after}`}
           and not exists (select 1 from destruction_ledger d where d.key_id = e.key_id)
         order by record_id limit ${limit}`,
  );
  return rows.map((r) => ({ recordId: r.record_id, recordType: r.record_type, keyId: r.key_id }));
}

/** How many sealed rows of live keys are of an older comparison form or another model (0: nothing to re-index). */
export async function countStale(c: VectorsContext): Promise<number> {
  const [row] = await queryRows<{ n: string | number }>(
    c.d.db,
    sql`select count(*) as n from embeddings e where (fold_version < ${FOLD_VERSION} or model <> ${c.d.embedder.model})
          and not exists (select 1 from destruction_ledger d where d.key_id = e.key_id)`,
  );
  return Number(row?.n ?? 0);
}

/**
 * Re-indexes records from their text, read by the caller under `keyId`: embedded,
 * shingled and sealed again with this FOLD_VERSION and model, under the same key. A row is
 * written over only while it is still under that key and of an older form or another model (a re-key,
 * a destruction or a newer write meanwhile wins and is left as it is); what was
 * written is announced and published. Answers how many rows were re-indexed.
 */
export async function reindex(
  c: VectorsContext,
  records: ReadonlyArray<{ recordId: string; recordType: RecordType; keyId: string; text: string }>,
): Promise<number> {
  const byKey = new Map<string, Array<(typeof records)[number]>>();
  for (const r of records) byKey.set(r.keyId, [...(byKey.get(r.keyId) ?? []), r]);
  let written = 0;
  for (const [keyId, list] of byKey) {
    let key: Uint8Array;
    try {
      key = await keyFor(c, list[0]!.recordType, keyId);
    } catch (e) {
      if (isLetheError(e, 'key_destroyed') || isLetheError(e, 'not_found')) continue;
      throw e;
    }
    let sealed: Sealed[];
    try {
      sealed = await sealEach(
        c,
        list.map((r) => ({ ...r, key })),
      );
    } finally {
      zeroize(key);
    }
    const updated = await publishingRecords(c, sealed, async () => {
      const rows = await queryRows<{ record_id: string }>(
        c.d.db,
        sql`update embeddings e set model = v.model, sealed = decode(v.sealed, 'hex'), fold_version = v.fold_version
              from json_to_recordset(${embeddingsJson(sealed)}::json)
                   as v(record_id text, record_type text, key_id text, model text, sealed text, fold_version integer)
             where e.record_id = v.record_id and e.key_id = v.key_id and (e.fold_version < v.fold_version or e.model <> v.model)
             returning e.record_id`,
      );
      const done = new Set(rows.map((r) => r.record_id));
      const mine = sealed.filter((s) => done.has(s.recordId));
      publish(c, mine);
      await notifyEmbeddings(c.d.db, mine, { rewritten: true });
      return mine.length;
    });
    written += updated;
  }
  return written;
}

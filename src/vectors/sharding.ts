/**
 * A sharded replica's part (LETHE_INDEX_SHARDS > 1): which records it indexes — those
 * of the shards it holds, by their place (src/vault/shards.ts) — and changing that set.
 */
import { sql } from 'drizzle-orm';
import { queryRows } from '../db/client.js';
import { idArrayLiteral } from '../ids.js';
import { PLACE_SQL, placeOfArtifact, placeOfSubject, shardOf } from '../vault/shards.js';
import { type IndexedRecord, ownsPlace, type SealedRow, type VectorsContext } from './context.js';

/** Entry keys whose places a replica remembers (one per subject key; the oldest forgotten first). */
const KEY_PLACES = 100_000;

/** A record's place, when known without asking the database. */
export function placeOf(c: VectorsContext, r: Pick<IndexedRecord, 'recordId' | 'recordType' | 'keyId'>): number | undefined {
  return r.recordType === 'artifact' ? placeOfArtifact(r.recordId) : c.keyPlaces.get(r.keyId);
}

export function rememberPlace(c: VectorsContext, keyId: string, place: number): void {
  if (c.keyPlaces.has(keyId)) return;
  c.keyPlaces.set(keyId, place);
  if (c.keyPlaces.size > KEY_PLACES) c.keyPlaces.delete(c.keyPlaces.keys().next().value!);
}

/** The places of these entry keys, read from their subject hashes (a destroyed key's is absent). */
async function placesOf(c: VectorsContext, keyIds: readonly string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (let i = 0; i < keyIds.length; i += 5000) {
    const rows = await queryRows<{ key_id: string; subject_hash: Uint8Array }>(
      c.d.db,
      sql`select key_id, subject_hash from subject_keys where key_id = any(${idArrayLiteral(keyIds.slice(i, i + 5000))}::text[])`,
    );
    for (const r of rows) out.set(r.key_id, placeOfSubject(r.subject_hash));
  }
  return out;
}

/** Looks up the places of entry keys not yet known (a destroyed key's stays unknown). */
export async function lookUpPlaces(c: VectorsContext, keyIds: readonly string[]): Promise<void> {
  const unknown = [...new Set(keyIds)].filter((k) => !c.keyPlaces.has(k));
  if (unknown.length === 0) return;
  for (const [keyId, place] of await placesOf(c, unknown)) rememberPlace(c, keyId, place);
}

/** Whether this replica indexes the record: undefined when its place is not known yet. */
export function owns(c: VectorsContext, r: Pick<IndexedRecord, 'recordId' | 'recordType' | 'keyId'>): boolean | undefined {
  if (!c.shards) return true;
  const place = placeOf(c, r);
  return place === undefined ? undefined : ownsPlace(c, place);
}

/** Remembers the place of a sealed row read with its place (a sharded replica's queries select it). */
export function rememberRow(c: VectorsContext, row: Pick<SealedRow, 'key_id' | 'record_type' | 'place'>): void {
  if (row.place !== undefined && row.place !== null && row.record_type === 'entry') rememberPlace(c, row.key_id, Number(row.place));
}

/**
 * Each of `shards`' coverage on this replica: the sealed rows of live keys stored in it
 * (one statement: the shard computed from the key's subject hash or the artifact id)
 * and the records of it this replica's lexical index holds. What a sharded probe
 * certifies on only when the two agree for every shard.
 */
export async function shardCoverage(c: VectorsContext, shards: ReadonlySet<number>): Promise<Map<number, { stored: number; indexed: number }>> {
  const out = new Map([...shards].map((s) => [s, { stored: 0, indexed: 0 }]));
  const s = c.shards;
  if (!s || shards.size === 0) return out;
  const list = `{${[...shards].join(',')}}`;
  const stored = await queryRows<{ shard: number; n: string | number }>(
    c.d.db,
    sql`select (${PLACE_SQL} % ${s.count})::int as shard, count(*) as n
          from embeddings e left join subject_keys s on e.record_type = 'entry' and s.key_id = e.key_id
         where (${PLACE_SQL} % ${s.count}) = any(${list}::int[])
           and not exists (select 1 from destruction_ledger d where d.key_id = e.key_id)
         group by 1`,
  );
  for (const r of stored) out.get(r.shard)!.stored = Number(r.n);
  const lexical = c.current.lexical;
  const records: Array<{ recordId: string; recordType: 'entry' | 'artifact'; keyId: string }> = [];
  for (const id of lexical.ids()) {
    const slot = lexical.slotOf(id);
    const r = slot === undefined ? undefined : lexical.recordAt(slot);
    if (r) records.push({ recordId: r.id, recordType: r.type, keyId: r.keyId });
  }
  // places not remembered (the memory is bounded) are read for this count alone
  const unknown = [...new Set(records.filter((r) => placeOf(c, r) === undefined).map((r) => r.keyId))];
  const looked = await placesOf(c, unknown);
  for (const r of records) {
    const place = placeOf(c, r) ?? looked.get(r.keyId);
    const shard = place === undefined ? undefined : out.get(shardOf(place, s.count));
    if (shard) shard.indexed++;
  }
  return out;
}

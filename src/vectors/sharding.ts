/**
 * A sharded replica's part (LETHE_INDEX_SHARDS > 1): which records it indexes — those
 * of the shards it holds, by their place (src/vault/shards.ts) — and changing that set.
 */
import { sql } from 'drizzle-orm';
import { queryRows } from '../db/client.js';
import { idArrayLiteral } from '../ids.js';
import { placeOfArtifact, placeOfSubject, shardOf } from '../vault/shards.js';
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

/** Looks up the places of entry keys not yet known (a destroyed key's stays unknown). */
export async function lookUpPlaces(c: VectorsContext, keyIds: readonly string[]): Promise<void> {
  const unknown = [...new Set(keyIds)].filter((k) => !c.keyPlaces.has(k));
  if (unknown.length === 0) return;
  const rows = await queryRows<{ key_id: string; subject_hash: Uint8Array }>(
    c.d.db,
    sql`select key_id, subject_hash from subject_keys where key_id = any(${idArrayLiteral(unknown)}::text[])`,
  );
  for (const r of rows) rememberPlace(c, r.key_id, placeOfSubject(r.subject_hash));
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
 * How many records this replica's lexical index holds in `shards` (what a sharded
 * probe counts each shard's coverage from): a record of another shard — one a rebuild
 * has not dropped yet — or whose place is not known, is not counted.
 */
export function indexedIn(c: VectorsContext, shards: ReadonlySet<number>): number {
  const s = c.shards;
  if (!s) return c.current.lexical.size;
  const lexical = c.current.lexical;
  let n = 0;
  for (const id of lexical.ids()) {
    const slot = lexical.slotOf(id);
    const r = slot === undefined ? undefined : lexical.recordAt(slot);
    const place = r && placeOf(c, { recordId: r.id, recordType: r.type, keyId: r.keyId });
    if (place !== undefined && shards.has(shardOf(place, s.count))) n++;
  }
  return n;
}

/**
 * An artifact's sources inside the transaction that writes it: every source exists
 * (else unknown_source) and is readable (else source_erased, or erasure_in_progress
 * while its subject is fenced or the entry is being forgotten), and so is everything the presented read fences
 * cover; FOR KEY SHARE on all of their keys holds until the transaction ends, so a
 * destruction either commits first (and the write is refused) or waits (and then
 * finds the artifact through provenance). Then the provenance edges are written.
 */
import { inArray, sql } from 'drizzle-orm';
import { queryRows, type Transaction } from '../db/client.js';
import { artifacts } from '../db/schema.js';
import { isLetheError, LetheError } from '../errors.js';
import { isId } from '../ids.js';
import { assertKeysLive } from '../vault/fences.js';
import { MAX_HEIGHT } from './provenance.js';

export interface SourceRow {
  readonly sourceId: string;
  readonly sourceType: 'entry' | 'artifact';
}

/** Checks the sources and fences (see above); answers the new artifact's height and its edges. */
export async function checkSources(
  tx: Transaction,
  sources: readonly string[],
  fenceKeys: readonly string[],
): Promise<{ height: number; sourceRows: SourceRow[] }> {
  const entryIds = sources.filter((s) => isId('entry', s));
  const artifactIds = sources.filter((s) => isId('art', s));
  const entryRows = entryIds.length
    ? await queryRows<{ entry_id: string; key_id: string; forgotten_by: string | null }>(
        tx,
        // FOR SHARE: a forget marking one of them either commits first (and is seen) or waits (and finds this artifact through provenance)
        sql`select entry_id, key_id, forgotten_by from log_entries where entry_id = any(array(select json_array_elements_text(${JSON.stringify(entryIds)}::json))) for share`,
      )
    : [];
  const artifactRows = artifactIds.length ? await tx.select().from(artifacts).where(inArray(artifacts.artifactId, artifactIds)).for('key share') : [];
  const unknown = entryIds.length - entryRows.length + (artifactIds.length - artifactRows.length);
  if (unknown > 0) throw new LetheError('unknown_source', `sources: ${unknown} source(s) do not exist`);
  const forgotten = entryRows.filter((e) => e.forgotten_by !== null).length;
  if (forgotten > 0) throw new LetheError('erasure_in_progress', `sources: ${forgotten} entr${forgotten === 1 ? 'y is' : 'ies are'} being forgotten`);
  const erased = artifactRows.filter((a) => a.state !== 'live');
  if (erased.length > 0) throw new LetheError('source_erased', `sources: ${erased.length} artifact(s) were erased`);
  try {
    await assertKeysLive(tx, [...entryRows.map((e) => e.key_id), ...artifactRows.map((a) => a.keyId!)], 'sources');
  } catch (e) {
    if (isLetheError(e, 'source_erased')) throw new LetheError('source_erased', 'sources: some were erased (their keys were destroyed)');
    throw e;
  }
  await assertKeysLive(tx, fenceKeys, 'readFence');
  const height = 1 + Math.max(0, ...artifactRows.map((a) => a.height));
  if (height > MAX_HEIGHT) throw new LetheError('validation_failed', `sources: artifacts may be derived from artifacts at most ${MAX_HEIGHT} levels deep`);
  const sourceRows = [
    ...entryRows.map((e) => ({ sourceId: e.entry_id, sourceType: 'entry' as const })),
    ...artifactRows.map((a) => ({ sourceId: a.artifactId, sourceType: 'artifact' as const })),
  ];
  return { height, sourceRows };
}

/** Writes the artifact's provenance edges (one statement). */
export async function insertEdges(tx: Transaction, artifactId: string, rows: readonly SourceRow[]): Promise<void> {
  if (rows.length === 0) return;
  await tx.execute(sql`insert into provenance (artifact_id, source_id, source_type)
    select ${artifactId}, v.source_id, v.source_type
      from json_to_recordset(${JSON.stringify(rows.map((r) => ({ source_id: r.sourceId, source_type: r.sourceType })))}::json)
           as v(source_id text, source_type text)`);
}

/**
 * Re-key: a subject's surviving frames rewritten under a new DEK and the old one
 * destroyed — how one entry of a living subject is erased for real, and what erasure
 * redactions use. The old key is fenced first (no appends or leases meanwhile); the
 * new frames are stored before the switch, which commits in one transaction with the
 * old key's destruction. A failure before the switch lifts the fence and loses
 * nothing; an entry appended during the re-key makes it refuse (nothing acknowledged
 * is ever destroyed).
 */
import { asc, eq, sql } from 'drizzle-orm';
import { randomBytes, zeroize } from '../crypto/index.js';
import { queryRows } from '../db/client.js';
import { logEntries } from '../db/schema.js';
import { LetheError } from '../errors.js';
import { newId, newSegmentKey } from '../ids.js';
import { notifyEmbeddings, upsertEmbeddings } from '../vectors/embeddings.js';
import type { Vectors } from '../vectors/service.js';
import type { LogDeps } from './deps.js';
import { openFrame, sealFrame } from './frame.js';
import { encodeSegment, frameAt } from './segment.js';

export interface RekeyOptions {
  /** Entries to leave out: erased for real with the old key. */
  readonly exclude?: readonly string[];
  readonly actor: string;
  /** Recorded in the destruction ledger. */
  readonly reason?: string;
}

export interface RekeyResult {
  readonly oldKeyId: string;
  readonly newKeyId: string;
  readonly rewritten: number;
  readonly removed: number;
}

/** Re-keys the log under `oldKeyId` (active, or fenced by someone else), leaving out `exclude`. */
export async function rekeyKey(deps: LogDeps, oldKeyId: string, state: 'active' | 'fenced', options: RekeyOptions): Promise<RekeyResult> {
  const rows = await deps.db.select().from(logEntries).where(eq(logEntries.keyId, oldKeyId)).orderBy(asc(logEntries.seq));
  const exclude = new Set(options.exclude ?? []);
  const unknown = [...exclude].filter((id) => !rows.some((r) => r.entryId === id));
  if (unknown.length > 0) throw new LetheError('validation_failed', `exclude: ${unknown.length} id(s) are not entries of this subject under its live key`);
  const wasActive = state === 'active';
  if (wasActive) await deps.keys.fenceKey(oldKeyId, options.actor);
  const newKeyId = newId('key');
  const newDek = randomBytes(32);
  let oldDek: Uint8Array | undefined;
  try {
    ({ dek: oldDek } = await deps.keys.dekFor(oldKeyId));
    const survivors = rows.filter((r) => !exclude.has(r.entryId));
    const frames: Uint8Array[] = [];
    const texts: string[] = [];
    const segments = new Map<string, Uint8Array>();
    for (const row of survivors) {
      let bytes = segments.get(row.segment);
      if (!bytes) {
        bytes = await deps.objects.get(row.segment);
        segments.set(row.segment, bytes);
      }
      const payload = openFrame(oldDek, { keyId: row.keyId, entryId: row.entryId, seq: row.seq }, frameAt(bytes, { offset: row.frameOffset, length: row.frameLength }));
      frames.push(sealFrame(newDek, { keyId: newKeyId, entryId: row.entryId, seq: row.seq }, payload));
      texts.push(payload.text);
    }
    // the survivors' embeddings move to the new key (re-embedded from the text just read)
    const embedded: Awaited<ReturnType<Vectors['seal']>> = [];
    for (let i = 0; i < survivors.length; i += 256) {
      const chunk = survivors.slice(i, i + 256).map((r, j) => ({ recordId: r.entryId, recordType: 'entry' as const, text: texts[i + j]! }));
      embedded.push(...(await deps.vectors.seal(chunk, newKeyId, newDek)));
    }
    const segment = newSegmentKey();
    const { bytes, places } = encodeSegment(frames);
    if (frames.length > 0) await deps.objects.put(segment, bytes);
    const moved = JSON.stringify(survivors.map((r, i) => ({ entry_id: r.entryId, offset: places[i]!.offset, length: places[i]!.length })));
    const removed = JSON.stringify([...exclude]);
    await deps.keys.replaceKey(oldKeyId, {
      reason: options.reason ?? 'rekey',
      actor: options.actor,
      newKeyId,
      newDek,
      // a key fenced by someone else (an erasure of this subject) stays fenced under its new id
      newState: wasActive ? 'active' : 'fenced',
      migrate: async (tx) => {
        await tx.execute(sql`update log_entries as e
                                set key_id = ${newKeyId}, segment = ${segment}, frame_offset = v.offset, frame_length = v.length
                               from json_to_recordset(${moved}::json) as v(entry_id text, "offset" integer, length integer)
                              where e.entry_id = v.entry_id and e.key_id = ${oldKeyId}`);
        // The excluded entries stay indexed under the old key, which is destroyed below:
        // they answer key_destroyed from now on, and cite as erased.
        // (the old key's embedding rows went with its destruction, earlier in this transaction)
        await upsertEmbeddings(tx, embedded);
        // other replicas drop the old key's vectors and load the survivors' new ones
        await notifyEmbeddings(tx, embedded);
        // An append that started before the fence may have indexed a frame since we
        // read: destroying the key now would lose an acknowledged entry. Refuse.
        const [left] = await queryRows<{ n: string | number }>(
          tx,
          sql`select count(*) as n from log_entries
               where key_id = ${oldKeyId} and entry_id not in (select json_array_elements_text(${removed}::json))`,
        );
        if (Number(left?.n ?? 0) > 0) {
          throw new LetheError('conflict', 'an entry was appended during the re-key; run it again', { retryable: true });
        }
      },
    });
    deps.vectors.publish(embedded);
    return { oldKeyId, newKeyId, rewritten: survivors.length, removed: exclude.size };
  } catch (e) {
    if (wasActive) await deps.keys.unfenceKey(oldKeyId, options.actor).catch(() => {});
    throw e;
  } finally {
    zeroize(newDek, oldDek);
  }
}

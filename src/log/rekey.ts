/**
 * Re-key: a subject's surviving entries moved under a new subject key and the old one
 * destroyed — how entries of a living subject are forgotten for real (records-scope
 * erasures, `lethe log rekey --exclude`), and what erasure redactions use.
 *
 * Each entry's frame is sealed under a record key of its own, wrapped under the
 * subject key (frame.ts): a re-key re-wraps the survivors' record keys and re-seals
 * their embedding rows under the new key as they are — it reads and rewrites no
 * frame, and embeds nothing again. Frames written before record keys (sealed under
 * the subject key itself) are converted on the way: read, sealed under a record key
 * of their own, stored in one new segment. The left-out entries keep their record
 * keys wrapped only under the old subject key, which is destroyed: they are gone.
 *
 * The old key is fenced first (no appends or leases meanwhile); the switch commits in
 * one transaction with the old key's destruction. A failure before the switch lifts
 * the fence and loses nothing; an entry appended during the re-key makes it refuse
 * (nothing acknowledged is ever destroyed).
 */
import { asc, eq, sql } from 'drizzle-orm';
import { randomBytes, zeroize } from '../crypto/index.js';
import { queryRows, type Transaction } from '../db/client.js';
import { logEntries, type LogEntryRow } from '../db/schema.js';
import { LetheError } from '../errors.js';
import { newId, newSegmentKey } from '../ids.js';
import { notifyEmbeddings, upsertEmbeddings } from '../vectors/embeddings.js';
import type { LogDeps } from './deps.js';
import type { Indexer } from './indexer.js';

/** The log's dependencies, and its indexer (what it re-queues; what tells an unchecked entry). */
export type RekeyDeps = LogDeps & { readonly indexer: Pick<Indexer, 'isQueued' | 'requeue'> };
import { openEntry, rewrapRecordKey, sealEntry } from './frame.js';
import { encodeSegment, frameAt } from './segment.js';

/** Survivors re-wrapped between two turns of the event loop. */
const YIELD_EVERY = 256;

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
  /** Shards split off: more survivors than a key holds (src/vault/key-shards.ts). */
  readonly shardKeyIds: readonly string[];
  /** Survivors moved to the new key. */
  readonly rewritten: number;
  /** Of them, frames written before record keys, rewritten under record keys of their own. */
  readonly converted: number;
  readonly removed: number;
}

/** Re-keys the log under `oldKeyId` (active, or fenced by someone else), leaving out `exclude`. */
export async function rekeyKey(deps: RekeyDeps, oldKeyId: string, state: 'active' | 'fenced', options: RekeyOptions): Promise<RekeyResult> {
  const rows = await deps.db.select().from(logEntries).where(eq(logEntries.keyId, oldKeyId)).orderBy(asc(logEntries.seq));
  const exclude = new Set(options.exclude ?? []);
  const unknown = [...exclude].filter((id) => !rows.some((r) => r.entryId === id));
  if (unknown.length > 0) throw new LetheError('validation_failed', `exclude: ${unknown.length} id(s) are not entries of this subject under its live key`);
  const wasActive = state === 'active';
  if (wasActive) await deps.keys.fenceKey(oldKeyId, options.actor);
  const newKeyId = newId('key');
  const newDek = randomBytes(32);
  const to = { dek: newDek, keyId: newKeyId };
  let oldDek: Uint8Array | undefined;
  // an entry the indexer refused is never served: it stays under the old key and dies with it
  const refused = new Map(rows.filter((r) => r.refused !== null && !exclude.has(r.entryId)).map((r) => [r.entryId, r.refused!]));
  const candidates = rows.filter((r) => !exclude.has(r.entryId) && !refused.has(r.entryId));
  const { shards, targetOf } = splitIntoShards(candidates, deps.keys.shardEntries, to);
  try {
    ({ dek: oldDek } = await deps.keys.dekFor(oldKeyId));
    const from = { dek: oldDek, keyId: oldKeyId };
    // record keys re-wrapped under the new key (or a shard's); frames from before record keys converted
    const legacy = candidates.filter((r) => r.wrappedKey === null);
    const converted = await convertLegacy(deps, from, targetOf, legacy, refused);
    const moved: Array<{ entry_id: string; key_id: string; wrapped: string; segment: string | null; offset: number | null; length: number | null }> = [];
    for (const [i, r] of candidates.entries()) {
      // two envelope operations a survivor: let requests run between chunks
      if (i > 0 && i % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
      if (refused.has(r.entryId)) continue;
      const c = converted.get(r.entryId);
      let wrapped: Uint8Array;
      try {
        wrapped = c ? c.wrappedKey : rewrapRecordKey(from, targetOf(r.entryId), r.entryId, r.wrappedKey!);
      } catch (e) {
        // a writer-registered entry the indexer has not checked yet whose record key does not unwrap: refused now
        if (!(await deps.indexer.isQueued(r.entryId))) throw e;
        refused.set(r.entryId, 'frame_unopened');
        continue;
      }
      moved.push({
        entry_id: r.entryId,
        key_id: targetOf(r.entryId).keyId,
        wrapped: Buffer.from(wrapped).toString('hex'),
        segment: c?.segment ?? null,
        offset: c?.offset ?? null,
        length: c?.length ?? null,
      });
    }
    const survivors = candidates.filter((r) => !refused.has(r.entryId));
    // the survivors' embedding rows, re-sealed under their new key as they are
    const embedded = await deps.vectors.reseal(
      { keyId: oldKeyId, key: oldDek },
      new Map(
        survivors.map((r) => {
          const t = targetOf(r.entryId);
          return [r.entryId, { keyId: t.keyId, key: t.dek }];
        }),
      ),
    );
    // the survivors not embedded yet (still queued): queued again under the new key, in the switch (the old key's destruction drops their rows)
    const embeddedIds = new Set(embedded.map((x) => x.recordId));
    const unembedded = survivors.filter((r) => !embeddedIds.has(r.entryId)).map((r) => r.entryId);
    const removed = JSON.stringify([...exclude, ...refused.keys()]);
    const marks = JSON.stringify([...refused].map(([entry_id, reason]) => ({ entry_id, reason })));
    const carriedUnder = (keyId: string) =>
      moved.filter((m) => m.segment === null && m.key_id === keyId).map((m) => [m.entry_id, m.wrapped] as [string, string]);
    const carried = { records: carriedUnder(newKeyId), lost: moved.filter((m) => m.segment !== null).map((m) => m.entry_id) };
    // published here once switched: the survivors' own notifications load nothing meanwhile — by record and key, so
    // another replica's appends under the new key, heard between the switch and the publish, still load
    await deps.vectors.publishingRecords(
      embedded.map((r) => ({ recordId: r.recordId, keyId: r.keyId })),
      async () => {
        await deps.keys.replaceKey(oldKeyId, {
          reason: options.reason ?? 'rekey',
          actor: options.actor,
          newKeyId,
          newDek,
          // a key fenced by someone else (an erasure of this subject) stays fenced under its new id
          newState: wasActive ? 'active' : 'fenced',
          // what a restore of a backup taken before now replays: the survivors whose frames it holds (a converted frame's new segment it does not)
          carried,
          // more survivors than a shard holds (a subject from before shards, a head that grew): split into shards of their own
          shards: shards.map((x) => ({ keyId: x.keyId, dek: x.dek, records: carriedUnder(x.keyId) })),
          migrate: async (tx) => {
            await tx.execute(sql`update log_entries as e
                                  set key_id = v.key_id, wrapped_key = decode(v.wrapped, 'hex'),
                                      segment = coalesce(v.segment, e.segment),
                                      frame_offset = coalesce(v."offset", e.frame_offset),
                                      frame_length = coalesce(v.length, e.frame_length)
                                 from json_to_recordset(${JSON.stringify(moved)}::json)
                                      as v(entry_id text, key_id text, wrapped text, segment text, "offset" integer, length integer)
                                where e.entry_id = v.entry_id and e.key_id = ${oldKeyId}`);
            // The excluded entries stay indexed under the old key, which is destroyed below:
            // their record keys were wrapped under it alone. They answer key_destroyed (or
            // entry_forgotten) from now on, and cite as erased.
            // (the old key's embedding rows went with its destruction, earlier in this transaction)
            await upsertEmbeddings(tx, embedded);
            await deps.indexer.requeue(tx, unembedded);
            if (refused.size > 0) {
              await tx.execute(sql`update log_entries as e set refused = v.reason
                                   from json_to_recordset(${marks}::json) as v(entry_id text, reason text)
                                  where e.entry_id = v.entry_id and e.key_id = ${oldKeyId}`);
            }
            // other replicas drop the old key's vectors and load the survivors' new ones
            await notifyEmbeddings(tx, embedded);
            // Appends in flight when the fence went up committed under the old key since we
            // read (the key row's lock now holds any other back): moved along, never lost and
            // never a reason to start over (steady appends would starve the forget).
            await moveLate(tx, { dek: oldDek!, keyId: oldKeyId }, { dek: newDek, keyId: newKeyId }, removed, deps, carried.records);
          },
        });
        deps.vectors.publish(embedded);
      },
    );
    return { oldKeyId, newKeyId, shardKeyIds: shards.map((x) => x.keyId), rewritten: survivors.length, converted: converted.size, removed: exclude.size };
  } catch (e) {
    if (wasActive) await deps.keys.unfenceKey(oldKeyId, options.actor).catch(() => {});
    throw e;
  } finally {
    zeroize(newDek, oldDek, ...shards.map((x) => x.dek));
  }
}

/**
 * Where each survivor goes: with more than `size` of them, the oldest in shards of
 * `size` (fresh keys of their own), the rest — at most `size`, the newest — under
 * the replacement `to`, which keeps the old key's place (head or shard).
 */
function splitIntoShards(
  survivors: readonly LogEntryRow[],
  size: number,
  to: { dek: Uint8Array; keyId: string },
): { shards: Array<{ dek: Uint8Array; keyId: string }>; targetOf: (entryId: string) => { dek: Uint8Array; keyId: string } } {
  const keep = survivors.length % size || size;
  const shards: Array<{ dek: Uint8Array; keyId: string }> = [];
  const target = new Map<string, { dek: Uint8Array; keyId: string }>();
  survivors.slice(0, Math.max(0, survivors.length - keep)).forEach((r, i) => {
    if (i % size === 0) shards.push({ dek: randomBytes(32), keyId: newId('key') });
    target.set(r.entryId, shards.at(-1)!);
  });
  return { shards, targetOf: (entryId) => target.get(entryId) ?? to };
}

/**
 * Inside the switch: the entries indexed under the old key since the re-key read it
 * (appends in flight at the fence), re-wrapped under the new key and queued for
 * indexing (their embedding rows went with the old key's destruction). A frame from
 * before record keys among them (no wrapped key: it would need a new segment) makes
 * the re-key start over.
 */
async function moveLate(
  tx: Transaction,
  from: { dek: Uint8Array; keyId: string },
  to: { dek: Uint8Array; keyId: string },
  removed: string,
  deps: RekeyDeps,
  carried: Array<[string, string]>,
): Promise<void> {
  const late = await queryRows<{ entry_id: string; wrapped_key: Uint8Array | null }>(
    tx,
    sql`select entry_id, wrapped_key from log_entries
         where key_id = ${from.keyId} and entry_id not in (select json_array_elements_text(${removed}::json))`,
  );
  if (late.length === 0) return;
  if (late.some((r) => r.wrapped_key === null)) throw new LetheError('conflict', 'an entry was appended during the re-key; run it again', { retryable: true });
  const rewrapped: Array<{ entry_id: string; wrapped: string }> = [];
  const unopened: string[] = [];
  for (const r of late) {
    try {
      rewrapped.push({ entry_id: r.entry_id, wrapped: Buffer.from(rewrapRecordKey(from, to, r.entry_id, new Uint8Array(r.wrapped_key!))).toString('hex') });
    } catch (e) {
      // a writer-registered entry the indexer has not checked yet whose record key does not unwrap: refused now, it dies with the old key
      if (!(await deps.indexer.isQueued(r.entry_id))) throw e;
      unopened.push(r.entry_id);
    }
  }
  if (unopened.length > 0) {
    await tx.execute(sql`update log_entries set refused = 'frame_unopened'
                          where key_id = ${from.keyId} and entry_id in (select json_array_elements_text(${JSON.stringify(unopened)}::json))`);
  }
  await tx.execute(sql`update log_entries as e set key_id = ${to.keyId}, wrapped_key = decode(v.wrapped, 'hex')
                         from json_to_recordset(${JSON.stringify(rewrapped)}::json) as v(entry_id text, wrapped text)
                        where e.entry_id = v.entry_id and e.key_id = ${from.keyId}`);
  await deps.indexer.requeue(
    tx,
    rewrapped.map((r) => r.entry_id),
  );
  for (const r of rewrapped) carried.push([r.entry_id, r.wrapped]);
}

/**
 * Frames sealed under the subject key itself (before record keys): read, sealed under
 * a record key of their own wrapped under the new subject key, stored in one new
 * segment. Their places and wrapped keys, by entry id.
 */
async function convertLegacy(
  deps: RekeyDeps,
  from: { dek: Uint8Array; keyId: string },
  toOf: (entryId: string) => { dek: Uint8Array; keyId: string },
  rows: readonly LogEntryRow[],
  refused: Map<string, string>,
): Promise<Map<string, { wrappedKey: Uint8Array; segment: string; offset: number; length: number }>> {
  const out = new Map<string, { wrappedKey: Uint8Array; segment: string; offset: number; length: number }>();
  if (rows.length === 0) return out;
  const envelopes: Uint8Array[] = [];
  const wrapped: Uint8Array[] = [];
  const kept: LogEntryRow[] = [];
  const segments = new Map<string, Uint8Array>();
  for (const row of rows) {
    let bytes = segments.get(row.segment);
    if (!bytes) {
      bytes = await deps.objects.get(row.segment);
      segments.set(row.segment, bytes);
    }
    let payload: ReturnType<typeof openEntry>;
    try {
      payload = openEntry(
        from.dek,
        { keyId: row.keyId, entryId: row.entryId, seq: row.seq },
        null,
        frameAt(bytes, { offset: row.frameOffset, length: row.frameLength }),
      );
    } catch (e) {
      // a writer-registered frame the indexer has not checked yet that does not open: refused now (it dies with the old key)
      if (!(await deps.indexer.isQueued(row.entryId))) throw e;
      refused.set(row.entryId, 'frame_unopened');
      continue;
    }
    const to = toOf(row.entryId);
    const sealed = sealEntry(to.dek, { keyId: to.keyId, entryId: row.entryId, seq: row.seq }, payload);
    envelopes.push(sealed.envelope);
    wrapped.push(sealed.wrappedKey);
    kept.push(row);
  }
  if (kept.length === 0) return out;
  const segment = newSegmentKey();
  const { bytes, places } = encodeSegment(envelopes);
  await deps.objects.put(segment, bytes);
  kept.forEach((row, i) => {
    out.set(row.entryId, { wrappedKey: wrapped[i]!, segment, offset: places[i]!.offset, length: places[i]!.length });
  });
  return out;
}

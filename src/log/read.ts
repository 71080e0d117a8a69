/**
 * Reading the log: a subject's entries in append order (pages keyset on seq), many
 * entries by id (one key unwrap per key, read again under a re-key's new key), one
 * entry. Frames are read by range from their segment and held to the entry schema.
 */
import { and, asc, eq, isNull, sql } from 'drizzle-orm';
import { type Database, preparedPer } from '../db/client.js';
import { zeroize } from '../crypto/index.js';
import { logEntries, type LogEntryRow, subjectKeys } from '../db/schema.js';
import { isLetheError, LetheError } from '../errors.js';
import { mapLimit } from '../concurrency.js';
import type { LogContext } from './context.js';
import { type FramePayload, openEntry } from './frame.js';
import { FramePayloadSchema, payloadProblem } from './payload.js';
import { frameFromRange, frameKey, frameRange } from './segment.js';

/** What a refused (quarantined) entry answers: it is not served. */
const REFUSED = 'no such entry: its frame was refused when it was indexed (it did not open under the key it names, or its payload broke the entry schema)';
const READ_CONCURRENCY = 8;

export interface Entry extends FramePayload {
  readonly entryId: string;
  /** The subject key it was read under (what a read fence of it covers). */
  readonly keyId: string;
  readonly seq: number;
  readonly createdAt: Date;
}

/**
 * The subject's readable entries and the keys they were read under (for a read fence):
 * its head's and its shards', in sequence order. `page` (the HTTP list's pages): only
 * the entries after seq `afterSeq`, at most `limit` of them; without it, all of them.
 * Forgotten entries are never read here.
 */
export async function read(
  c: LogContext,
  subject: string,
  page: { afterSeq?: number | undefined; limit?: number | undefined } = {},
): Promise<{ entries: Entry[]; keyIds: string[] }> {
  const status = await c.keys.subjectStatus(subject);
  if (!status.key) {
    if (status.erased) throw new LetheError('subject_erased', 'the subject was erased and has no new key');
    throw new LetheError('not_found', 'no such subject');
  }
  const keyIds = new Set<string>([status.key.keyId]);
  const entries: Entry[] = [];
  const deks = new Map<string, Uint8Array>();
  try {
    // keyset on seq (fixed per entry, kept by a re-key, unique across a subject's keys): a page never repeats or skips an entry (README, "Pages")
    for (let afterSeq = page.afterSeq, moves = 0; ; ) {
      const after = afterSeq === undefined ? undefined : sql`${logEntries.seq} > ${afterSeq}`;
      const query = c.db
        .select()
        .from(logEntries)
        .where(
          and(
            eq(logEntries.subjectHash, status.subjectHash),
            // the subject's live keys (head and shards) in this statement's snapshot: a re-key that moved entries meanwhile is seen whole
            sql`${logEntries.keyId} in (select key_id from subject_keys where subject_hash = ${status.subjectHash})`,
            isNull(logEntries.forgottenBy),
            isNull(logEntries.refused),
            after,
          ),
        )
        .orderBy(asc(logEntries.seq));
      const wanted = page.limit === undefined ? undefined : page.limit - entries.length;
      const rows = await (wanted === undefined ? query : query.limit(wanted));
      if (rows.length === 0) break;
      if (!(await loadDeks(c, rows, deks))) {
        // a key of the page was re-keyed since it was selected (a forget of a shard-mate): its entries moved, the page is read again
        if (++moves >= MOVED_READS) throw new LetheError('unavailable', "the subject's keys kept changing during the read; try again", { retryable: true });
        continue;
      }
      for (const row of rows) keyIds.add(row.keyId);
      // ranged reads of just the subject's frames, a few at a time, in append order
      const envelopes = await mapLimit(rows, READ_CONCURRENCY, (row) => fetchUnchecked(c, row));
      for (const [i, row] of rows.entries()) {
        const envelope = envelopes[i];
        const entry = envelope && (await served(c, deks.get(row.keyId)!, row, envelope));
        if (entry) entries.push(entry);
      }
      // a page short of an entry left out (not yet indexed, its frame refused): the rest of the page is read on
      if (wanted === undefined || rows.length < wanted || entries.length >= page.limit!) break;
      afterSeq = rows.at(-1)!.seq;
    }
    return { entries, keyIds: [...keyIds] };
  } finally {
    zeroize(...deks.values());
  }
}

/**
 * The readable entries among `ids` (entries whose key was destroyed, that are being
 * forgotten, or that do not exist, are left out; `forgottenBy`: only the entries that
 * erasure forgets), one key unwrap per key. An entry whose key was replaced
 * while we read (a re-key moved it to a new key) is read again under its new key,
 * not mistaken for an erased one.
 */
export function readMany(c: LogContext, ids: readonly string[], options: { forgottenBy?: string } = {}): Promise<Map<string, Entry>> {
  return readJoined(c, [...new Set(ids)], undefined, options);
}

/** `readMany` of live entries the caller selected itself, with their keys (`selectWithKeys`): one statement fewer. */
export function readSelected(c: LogContext, selected: readonly EntryWithKey[]): Promise<Map<string, Entry>> {
  return readJoined(
    c,
    selected.map((s) => s.row.entryId),
    selected,
    {},
  );
}

async function readJoined(
  c: LogContext,
  ids: readonly string[],
  selected: readonly EntryWithKey[] | undefined,
  options: { forgottenBy?: string },
): Promise<Map<string, Entry>> {
  const out = new Map<string, Entry>();
  let pending = ids;
  let seenKeys = new Map<string, string>();
  const query = readManyQuery(c.db);
  for (let pass = 0; pass < 3 && pending.length > 0; pass++) {
    // a forgotten entry is read by no one but the erasure forgetting it (its fingerprints)
    const rows = pass === 0 && selected ? selected : await query.execute({ ids: pending, forgottenBy: options.forgottenBy ?? null });
    // on a second pass, only rows that moved to another key are worth another try
    const joined = rows.filter(({ row }) => pass === 0 || seenKeys.get(row.entryId) !== row.keyId);
    const byKey = new Map<string, LogEntryRow[]>();
    for (const { row } of joined) byKey.set(row.keyId, [...(byKey.get(row.keyId) ?? []), row]);
    const retry: string[] = [];
    const keys = new Map<string, string>();
    const deks = await c.keys.deksOfRows(joined.flatMap(({ key }) => (key ? [key] : [])));
    try {
      for (const [keyId, list] of byKey) {
        const dek = deks.get(keyId);
        if (!dek) {
          for (const row of list) {
            retry.push(row.entryId);
            keys.set(row.entryId, keyId);
          }
          continue;
        }
        const envelopes = await mapLimit(list, READ_CONCURRENCY, (row) => fetchUnchecked(c, row));
        for (const [i, row] of list.entries()) {
          const envelope = envelopes[i];
          const entry = envelope && (await served(c, dek, row, envelope));
          if (entry) out.set(row.entryId, entry);
        }
      }
    } finally {
      for (const dek of deks.values()) zeroize(dek);
    }
    pending = retry;
    seenKeys = keys;
  }
  return out;
}

/** readMany's query, prepared (parsed and planned once per connection): entries with their keys' wrapped DEKs. */
const readManyQuery = preparedPer((db) => prepareReadMany(db));

/** Entries with their keys' wrapped DEKs (null: the key is gone): what readMany opens, selected by its callers' own prepared queries too. */
export function selectWithKeys(db: Database) {
  return db
    .select({
      row: logEntries,
      key: { keyId: subjectKeys.keyId, subjectHash: subjectKeys.subjectHash, epoch: subjectKeys.epoch, wrappedDek: subjectKeys.wrappedDek },
    })
    .from(logEntries)
    .leftJoin(subjectKeys, eq(subjectKeys.keyId, logEntries.keyId));
}

export type EntryWithKey = Awaited<ReturnType<ReturnType<typeof selectWithKeys>['execute']>>[number];

function prepareReadMany(db: Database) {
  return selectWithKeys(db)
    .where(
      and(
        sql`${logEntries.entryId} = any(${sql.placeholder('ids')})`,
        sql`${logEntries.forgottenBy} is not distinct from ${sql.placeholder('forgottenBy')}`,
        isNull(logEntries.refused),
      ),
    )
    .prepare('log-read-many');
}

/** The DEKs of the rows' keys into `deks`; false when one of them is gone (destroyed since the rows were selected). */
async function loadDeks(c: LogContext, rows: readonly LogEntryRow[], deks: Map<string, Uint8Array>): Promise<boolean> {
  for (const row of rows) {
    if (deks.has(row.keyId)) continue;
    try {
      deks.set(row.keyId, (await c.keys.dekFor(row.keyId)).dek);
    } catch (e) {
      if (isLetheError(e, 'key_destroyed') || isLetheError(e, 'not_found')) return false;
      throw e;
    }
  }
  return true;
}

/** One entry by id; an entry a re-key moved while it was read is read again under its new key, not answered as destroyed. */
export async function get(c: LogContext, entryId: string): Promise<Entry> {
  for (let attempt = 1; ; attempt++) {
    const [row] = await c.db.select().from(logEntries).where(eq(logEntries.entryId, entryId));
    if (!row) throw new LetheError('not_found', 'no such entry');
    if (row.forgottenBy !== null) throw new LetheError('entry_forgotten', `the entry is forgotten (erasure ${row.forgottenBy})`);
    if (row.refused !== null) throw new LetheError('not_found', REFUSED);
    let dek: Uint8Array;
    try {
      ({ dek } = await c.keys.dekFor(row.keyId));
    } catch (e) {
      if (!isLetheError(e, 'not_found') && !isLetheError(e, 'key_destroyed')) throw e;
      if (attempt < MOVED_READS && (await movedSince(c, row))) continue;
      throw new LetheError('key_destroyed', "the entry's key was destroyed");
    }
    return await openOne(c, dek, row);
  }
}

/** Reads again when an entry's key was destroyed under it: a re-key (a forget of a shard-mate) moves the entries it keeps. */
const MOVED_READS = 4;

/** True when the entry is under another key now than `row` says. */
async function movedSince(c: LogContext, row: LogEntryRow): Promise<boolean> {
  const [now] = await c.db.select({ keyId: logEntries.keyId }).from(logEntries).where(eq(logEntries.entryId, row.entryId));
  return now !== undefined && now.keyId !== row.keyId;
}

async function openOne(c: LogContext, dek: Uint8Array, row: LogEntryRow): Promise<Entry> {
  try {
    const entry = await served(c, dek, row, await fetchFrame(c, row));
    if (!entry) throw new LetheError('not_found', REFUSED);
    return entry;
  } finally {
    zeroize(dek);
  }
}

export async function fetchFrame(c: LogContext, row: LogEntryRow): Promise<Uint8Array> {
  const place = { offset: row.frameOffset, length: row.frameLength };
  const key = frameKey(row.segment, place);
  const cached = c.frames.get(key);
  if (cached) return cached;
  const range = frameRange(place);
  const frame = frameFromRange(await c.objects.getRange(row.segment, range.offset, range.length), place);
  c.frames.set(key, frame);
  return frame;
}

/**
 * fetchFrame, for an entry the indexer may not have checked yet: a writer registered
 * its place, and one that does not fall on a frame of its segment is left out
 * (undefined) while the entry is queued — the indexer refuses it — rather than failing
 * the read or search around it.
 */
async function fetchUnchecked(c: LogContext, row: LogEntryRow): Promise<Uint8Array | undefined> {
  try {
    return await fetchFrame(c, row);
  } catch (e) {
    if (isLetheError(e, 'segment_malformed') && (await c.indexer.isQueued(row.entryId))) return undefined;
    throw e;
  }
}

/**
 * The entry as served: its frame opened and its payload held to the entry schema.
 * An entry still queued for the indexer was never checked (a writer registered it):
 * one that does not open or breaks the schema is left out (undefined) — the indexer
 * refuses it. Any other that fails is an invariant broken, and throws.
 */
export async function served(c: LogContext, dek: Uint8Array, row: LogEntryRow, envelope: Uint8Array): Promise<Entry | undefined> {
  let failure: unknown;
  try {
    const payload = openEntry(dek, { keyId: row.keyId, entryId: row.entryId, seq: row.seq }, row.wrappedKey, envelope);
    const problem = payloadProblem(FramePayloadSchema, payload);
    if (!problem)
      return {
        entryId: row.entryId,
        keyId: row.keyId,
        seq: row.seq,
        createdAt: row.createdAt,
        text: payload.text,
        kind: payload.kind,
        metadata: payload.metadata,
      };
    failure = new LetheError('internal', `entry ${row.entryId}: the frame's ${problem.slice(0, problem.indexOf(':'))} breaks the entry schema`);
  } catch (e) {
    failure = e;
  }
  if (await c.indexer.isQueued(row.entryId)) return undefined;
  throw failure;
}

/**
 * Registration of segments a writer sealed and uploaded itself (the writer client):
 * each entry must name its subject's live, active key and a sequence number reserved
 * under it, and fit the stored segment; entries of a key destroyed or fenced
 * meanwhile are refused (their frames are unreadable or about to be). The index rows
 * and one row per entry in the indexing queue commit in one statement, and the
 * registration answers: it never fetches the segment. The indexer (indexer.ts) opens
 * each frame later — through the record key the writer wrapped under the subject key
 * (frame.ts) — refuses (quarantines) one that does not open under the key it names
 * or holds a payload the entry schema refuses (payload.ts), and embeds the rest.
 * Idempotent per entry id; an id indexed elsewhere is a conflict.
 */
import { sql } from 'drizzle-orm';
import { type Executor, queryRows, type Transaction } from '../db/client.js';
import { LetheError } from '../errors.js';
import { SEGMENT_KEY_PATTERN } from '../ids.js';
import type { LogDeps } from './deps.js';
import type { Claimed } from './indexer-types.js';
import { itemHashes } from './items.js';
import type { StoreItem } from './payload.js';

export interface RegisteredEntry {
  readonly entryId: string;
  readonly subject: string;
  readonly keyId: string;
  readonly seq: number;
  readonly offset: number;
  readonly length: number;
  /**
   * The entry's record key wrapped under the key it names (frame.ts), base64url. Absent:
   * a frame sealed under the subject key itself, as writers did before record keys.
   */
  readonly wrappedKey?: string | undefined;
  /** The store item the entry holds (its namespace and key), indexed as keyed hashes as an append's is (items.ts). */
  readonly item?: StoreItem | undefined;
}

export interface RegistrationResult {
  readonly entryId: string;
  /**
   * `subject_erased`: the key is gone and its subject was erased for good (no key is
   * created for it until an admin reinstates it); `key_destroyed`: the key is gone
   * otherwise (re-keyed, destroyed by hand, never existed).
   */
  readonly status: 'registered' | 'key_destroyed' | 'subject_erased' | 'erasure_in_progress';
}

/**
 * Indexes frames a writer sealed and uploaded itself, and queues them for the
 * indexer. Each entry must name its subject's live, active key and a sequence number
 * reserved under it, and fit the stored segment; entries of a key destroyed or fenced
 * meanwhile are refused (their frames are unreadable or about to be). Idempotent per
 * entry id: an entry already indexed at the very place named (segment, offset,
 * length, key, seq, subject) answers `registered` again; one indexed elsewhere is a
 * `conflict` — the id is taken — and nothing of the request is registered. A refusal
 * registers nothing. Answers the statuses and how many entries were queued.
 */
export async function register(
  deps: LogDeps,
  segment: string,
  entries: readonly RegisteredEntry[],
  /** The registering token's principal: it may forget and supersede these entries. */
  writtenBy?: string,
): Promise<{ results: RegistrationResult[]; queued: number }> {
  if (!SEGMENT_KEY_PATTERN.test(segment)) throw new LetheError('validation_failed', 'segment must be log/seg_<22 base64url characters>');
  const ids = new Set<string>();
  for (const e of entries) {
    if (ids.has(e.entryId)) throw new LetheError('validation_failed', `entries: ${e.entryId} is named twice`);
    ids.add(e.entryId);
  }
  const stored = await deps.objects.head(segment);
  if (!stored) throw new LetheError('validation_failed', 'segment: no such object in the store (upload it first)');
  const rows = entries.map((e) => {
    if (e.offset < 16 || e.length < 1 || e.offset + e.length > stored.size) {
      throw new LetheError('validation_failed', `entries: ${e.entryId} does not fit the stored segment`);
    }
    const subjectHash = deps.keys.subjectHash(e.subject);
    const item = e.item ? itemHashes(deps.items, subjectHash, e.item) : undefined;
    return {
      ...e,
      subjectHash: Buffer.from(subjectHash).toString('hex'),
      itemHash: item ? Buffer.from(item.itemHash).toString('hex') : null,
      namespaceHash: item ? Buffer.from(item.namespaceHash).toString('hex') : null,
    };
  });
  // a retry of a registration that was committed: those entries answer as they did
  const again = await alreadyPlaced(deps.db, segment, rows);
  const fresh = rows.filter((r) => !again.has(r.entryId));
  const answered = new Map<string, RegistrationResult['status']>([...again].map((id) => [id, 'registered' as const]));
  let queued = 0;
  if (fresh.length > 0) {
    const { statuses, inserted } = await deps.db.transaction((tx) => indexFresh(tx, segment, fresh, writtenBy));
    queued = inserted.size;
    for (const [id, status] of statuses) answered.set(id, status);
    await tellErasedSubjects(deps, fresh, answered);
  }
  return { results: entries.map((e) => ({ entryId: e.entryId, status: answered.get(e.entryId)! })), queued };
}

type Row = RegisteredEntry & { readonly subjectHash: string; readonly itemHash: string | null; readonly namespaceHash: string | null };

/**
 * Entries answered key_destroyed whose subject gets no key any more — the vault's
 * creation guards refuse it as subject_erased (an erasure tombstoned it) — answer
 * subject_erased: the writer learns the person is gone, not that a key rotated.
 */
async function tellErasedSubjects(deps: LogDeps, rows: readonly Row[], answered: Map<string, RegistrationResult['status']>): Promise<void> {
  const gone = rows.filter((r) => answered.get(r.entryId) === 'key_destroyed');
  if (gone.length === 0) return;
  const refusals = await deps.keys.creationRefusals(gone.map((r) => Buffer.from(r.subjectHash, 'hex')));
  for (const r of gone) if (refusals.get(r.subjectHash)?.code === 'subject_erased') answered.set(r.entryId, 'subject_erased');
}

/** An indexed entry's place: the queue's claimed row, and its subject. */
interface IndexedPlace extends Claimed {
  subject_hash: Uint8Array;
}

/**
 * The ids among `rows` already indexed at the place they name. An id indexed at
 * another place is a conflict: the entry id is taken. The same frame (segment, offset,
 * length, seq, subject) now indexed under another key than the one named, the named
 * key destroyed, is the entry a re-key moved (src/log/rekey.ts: its record key
 * re-wrapped under the subject's new key, its frame untouched): a retry of its
 * registration answers `registered` like any other.
 */
async function alreadyPlaced(exec: Executor, segment: string, rows: readonly Row[]): Promise<Set<string>> {
  const existing = await queryRows<IndexedPlace>(
    exec,
    sql`select entry_id, subject_hash, key_id, seq, segment, frame_offset, frame_length, wrapped_key from log_entries
         where entry_id in (select value from json_array_elements_text(${JSON.stringify(rows.map((r) => r.entryId))}::json))`,
  );
  const byId = new Map(rows.map((r) => [r.entryId, r]));
  const same = new Set<string>();
  const taken: string[] = [];
  const moved: Array<{ entryId: string; named: string }> = [];
  for (const x of existing) {
    const r = byId.get(x.entry_id)!;
    const place =
      x.segment === segment &&
      Number(x.frame_offset) === r.offset &&
      Number(x.frame_length) === r.length &&
      Number(x.seq) === r.seq &&
      Buffer.from(x.subject_hash).toString('hex') === r.subjectHash;
    const keyed = x.key_id === r.keyId && (x.wrapped_key === null ? null : Buffer.from(x.wrapped_key).toString('base64url')) === (r.wrappedKey ?? null);
    if (place && keyed) same.add(x.entry_id);
    else if (place && x.key_id !== r.keyId) moved.push({ entryId: x.entry_id, named: r.keyId });
    else taken.push(x.entry_id);
  }
  if (moved.length > 0) {
    const destroyed = new Set(
      (
        await queryRows<{ key_id: string }>(
          exec,
          sql`select key_id from destruction_ledger where key_id in (select value from json_array_elements_text(${JSON.stringify([...new Set(moved.map((m) => m.named))])}::json))`,
        )
      ).map((d) => d.key_id),
    );
    for (const m of moved) {
      if (destroyed.has(m.named)) same.add(m.entryId);
      else taken.push(m.entryId);
    }
  }
  if (taken.length > 0) {
    throw new LetheError(
      'conflict',
      `entries: ${taken.slice(0, 5).join(', ')}${taken.length > 5 ? ', …' : ''} already indexed at another place (entry id taken); nothing was registered`,
    );
  }
  return same;
}

/**
 * Indexes the entries not indexed yet, each with its row in the indexing queue, in one
 * statement of `tx`. An entry another registration indexed meanwhile (it raced this
 * one) answers as a retry does; an entry of another subject's key or of a sequence
 * number never reserved refuses the whole request.
 */
async function indexFresh(
  tx: Transaction,
  segment: string,
  rows: readonly Row[],
  writtenBy: string | undefined,
): Promise<{ statuses: Map<string, RegistrationResult['status']>; inserted: Set<string> }> {
  const json = JSON.stringify(
    rows.map((r) => ({
      entry_id: r.entryId,
      subject_hash: r.subjectHash,
      key_id: r.keyId,
      seq: r.seq,
      offset: r.offset,
      length: r.length,
      wrapped: r.wrappedKey === undefined ? null : Buffer.from(r.wrappedKey, 'base64url').toString('hex'),
      item_hash: r.itemHash,
      namespace_hash: r.namespaceHash,
    })),
  );
  const result = await queryRows<{ entry_id: string; status: string }>(
    tx,
    sql`with v as (
          select * from json_to_recordset(${json}::json)
            as v(entry_id text, subject_hash text, key_id text, seq integer, "offset" integer, length integer, wrapped text, item_hash text, namespace_hash text)),
        keys as (
          select key_id, subject_hash, state, next_seq, base_seq from subject_keys
           where key_id in (select key_id from v) order by key_id for key share),
        ok as (
          -- a number this key reserved: since it became head (a rolled head's range is its own), before its next
          select v.* from v join keys k on k.key_id = v.key_id
           where k.state = 'active' and k.subject_hash = decode(v.subject_hash, 'hex') and v.seq >= greatest(1, k.base_seq) and v.seq < k.next_seq),
        ins as (
          insert into log_entries (entry_id, subject_hash, key_id, seq, segment, frame_offset, frame_length, created_at, wrapped_key, written_by,
                                   item_hash, namespace_hash)
          select entry_id, decode(subject_hash, 'hex'), key_id, seq, ${segment}, "offset", length, now(), decode(wrapped, 'hex'), ${writtenBy ?? null},
                 decode(item_hash, 'hex'), decode(namespace_hash, 'hex') from ok
          on conflict (entry_id) do nothing
          returning entry_id),
        queued as (
          insert into index_queue (entry_id, enqueued_at)
          select entry_id, now() from ins)
        select v.entry_id,
               case when exists (select 1 from ins where ins.entry_id = v.entry_id) then 'registered'
                    when exists (select 1 from ok where ok.entry_id = v.entry_id) then 'raced'
                    when k.key_id is null then 'key_destroyed'
                    when k.state = 'fenced' then 'erasure_in_progress'
                    else 'invalid' end as status
          from v left join keys k on k.key_id = v.key_id`,
  );
  const invalid = result.filter((r) => r.status === 'invalid');
  if (invalid.length > 0) {
    throw new LetheError('validation_failed', `entries: ${invalid.length} entr(y/ies) name a key of another subject or a sequence number never reserved`);
  }
  const raced = new Set(result.filter((r) => r.status === 'raced').map((r) => r.entry_id));
  // committed by the racing registration before our insert gave up: the same place, or a conflict (rolls back)
  if (
    raced.size > 0 &&
    (
      await alreadyPlaced(
        tx,
        segment,
        rows.filter((r) => raced.has(r.entryId)),
      )
    ).size !== raced.size
  ) {
    throw new LetheError('unavailable', 'entries: a concurrent registration of the same entry ids did not settle; try again');
  }
  const statuses = new Map<string, RegistrationResult['status']>(
    result.map((r) => [r.entry_id, r.status === 'raced' ? 'registered' : (r.status as RegistrationResult['status'])]),
  );
  return { statuses, inserted: new Set(result.filter((r) => r.status === 'registered').map((r) => r.entry_id)) };
}

/**
 * Appends through the service: the entry sealed under its subject's DEK, its frame
 * stored in a segment object, then indexed in PostgreSQL — acknowledged only after
 * both; with an idempotency key, stored once however often it is retried
 * (idempotency.ts); sequence numbers reserved for writers that seal locally. A write
 * that meets a forget's re-key goes again under the new key.
 */
import { type SQL, sql } from 'drizzle-orm';
import { zeroize } from '../crypto/index.js';
import { type Executor, queryPrepared, type Transaction } from '../db/client.js';
import { isLetheError, LetheError } from '../errors.js';
import { newId } from '../ids.js';
import type { Sealed } from '../vectors/service.js';
import { insertEmbeddingsCte, notifyInsertedEmbeddings } from '../vectors/embeddings.js';
import { MAX_KEY_MOVES } from '../vault/keys.js';
import type { LogContext } from './context.js';
import { sealEntry } from './frame.js';
import { type AppendOnce, claimCte, IDEMPOTENCY_KEY_PATTERN, IDEMPOTENCY_KEY_RULE, type RecordedAppend } from './idempotency.js';
import { type ItemHashes, itemHashes, lookupItem } from './items.js';
import { MAX_ENTRY_TEXT_BYTES, type StoreItem } from './payload.js';
import type { Entry } from './read.js';
import { recordDigest, replayRecorded } from './replay.js';
import { frameKey } from './segment.js';

export const MAX_RESERVATION = 10_000;

export interface AppendInput {
  readonly text: string;
  readonly kind?: string | undefined;
  readonly metadata?: Record<string, unknown> | undefined;
  /** The store item the entry holds, indexed as keyed hashes (items.ts). */
  readonly item?: StoreItem | undefined;
}

function checkTextSize(text: string): void {
  if (Buffer.byteLength(text, 'utf8') > MAX_ENTRY_TEXT_BYTES) {
    throw new LetheError('payload_too_large', `text is limited to ${MAX_ENTRY_TEXT_BYTES} bytes`);
  }
}

/** An append without an idempotency key. */
export async function append(
  c: LogContext,
  subject: string,
  input: AppendInput,
  actor: string,
  origin: EntryOrigin = {},
): Promise<{ entryId: string; keyId: string; seq: number }> {
  return (await acrossRekeys(c, subject, () => store(c, subject, input, actor, undefined, origin))).appended;
}

/** How long a write keeps going again after forgets' re-keys (back to back while forgets keep arriving) before it answers 409. */
const ACROSS_REKEYS_MS = 10_000;

/**
 * `write` again after a forget's re-key fenced or replaced the subject's key under
 * it (it recorded nothing), as often as re-keys come within ACROSS_REKEYS_MS: no
 * write fails because of a forget. An erasure of the whole subject still refuses at
 * once (awaitRekey answers false for its fence).
 */
export async function acrossRekeys<T>(c: LogContext, subject: string, write: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + ACROSS_REKEYS_MS;
  for (;;) {
    try {
      return await write();
    } catch (e) {
      const left = deadline - Date.now();
      if (left <= 0 || !isLetheError(e, 'erasure_in_progress')) throw e;
      if (!(await c.keys.awaitRekey(c.keys.subjectHash(subject), left))) throw e;
    }
  }
}

/**
 * An append with an idempotency key (idempotency.ts): the first request with the
 * key stores the entry and records its result in the statement that indexes it; a
 * retry with the same key and body answers that result (`replayed`) and stores
 * nothing, also when it raced the first (the loser's frame is deleted again); the
 * same key with another body is `idempotency_key_reused`. A retry whose entry was
 * erased or forgotten since is `key_destroyed` (a kept entry a forget's re-key moved
 * answers as before: replay.ts).
 */
export async function appendOnce(
  c: LogContext,
  subject: string,
  input: AppendInput,
  actor: string,
  once: AppendOnce,
  origin: EntryOrigin = {},
): Promise<{ appended: RecordedAppend; replayed: boolean }> {
  const earlier = await recordedFor(c, subject, input, once);
  if (earlier) return { appended: earlier, replayed: true };
  return acrossRekeys(c, subject, () => store(c, subject, input, actor, once, origin));
}

/** The recorded result of an earlier append with `once`'s key, if any (the key and text checked first). */
async function recordedFor(c: LogContext, subject: string, input: AppendInput, once: AppendOnce): Promise<RecordedAppend | undefined> {
  if (!IDEMPOTENCY_KEY_PATTERN.test(once.key)) throw new LetheError('validation_failed', `Idempotency-Key must be ${IDEMPOTENCY_KEY_RULE}`);
  checkTextSize(input.text);
  await c.purge.maybe(c.db);
  return replayRecorded(c, c.keys.subjectHash(subject), once);
}

/**
 * The first version of an item (`If-None-Match: *`): when the item has live entries,
 * nothing is stored and they are the answer (newest first), so a store's put is one
 * call whether it creates or finds what to supersede. A retry of an append that
 * stored answers it first (`once`). Checked before sealing, so as strong as a lookup
 * then an append: two first versions racing may both land (a store reads the newer;
 * its next put supersedes both).
 */
export async function appendItem(
  c: LogContext,
  subject: string,
  input: AppendInput & { readonly item: StoreItem },
  actor: string,
  once: AppendOnce | undefined,
  origin: EntryOrigin = {},
): Promise<{ appended: RecordedAppend; replayed: boolean } | { existing: Entry[] }> {
  const earlier = once ? await recordedFor(c, subject, input, once) : undefined;
  if (earlier) return { appended: earlier, replayed: true };
  const existing = await lookupItem(c, subject, input.item);
  if (existing.length > 0) return { existing };
  return acrossRekeys(c, subject, () => store(c, subject, input, actor, once, origin));
}

/** What a write adds to its entry's index row: who wrote it (a principal), and the entry it supersedes. */
export interface EntryOrigin {
  readonly writtenBy?: string | undefined;
  readonly supersedes?: string | undefined;
}

/** An entry sealed, embedded and its frame stored, not indexed yet: `insertEntry` commits it, `discardEntry` drops it. */
export interface PreparedEntry {
  readonly appended: RecordedAppend;
  readonly subjectHash: Uint8Array;
  readonly dek: Uint8Array;
  readonly segment: string;
  readonly place: { readonly offset: number; readonly length: number };
  /** Concurrent appends' frames share the segment (segment-batch.ts): true once all of them were given up. */
  readonly giveUpFrame: () => boolean;
  readonly wrappedKey: Uint8Array;
  readonly embedding: Sealed;
  readonly item: ItemHashes | undefined;
}

/** Seals `input` under the subject's key with a sequence number reserved, embeds it and stores its frame. The caller inserts or discards it. */
export async function prepareEntry(c: LogContext, subject: string, input: AppendInput, actor: string): Promise<PreparedEntry> {
  checkTextSize(input.text);
  const item = input.item ? itemHashes(c.items, c.keys.subjectHash(subject), input.item) : undefined;
  const { keyId, dek, subjectHash, firstSeq: seq } = await reserveSeqs(c, subject, 1, actor);
  try {
    const entryId = newId('entry');
    const sealed = sealEntry(dek, { keyId, entryId, seq }, { text: input.text, kind: input.kind ?? null, metadata: input.metadata ?? null });
    const [embedding] = await c.vectors.seal([{ recordId: entryId, recordType: 'entry', text: input.text }], keyId, dek);
    const { segment, place, giveUp } = await c.segments.store(sealed.envelope);
    c.frames.set(frameKey(segment, place), sealed.envelope);
    return {
      appended: { entryId, keyId, seq },
      subjectHash,
      dek,
      segment,
      place,
      giveUpFrame: giveUp,
      wrappedKey: sealed.wrappedKey,
      embedding: embedding!,
      item,
    };
  } catch (e) {
    zeroize(dek);
    throw e;
  }
}

/**
 * The prepared entry's index row and sealed embedding (and, with `once`, its
 * idempotency record) in one statement on `db` — a transaction of the caller's, or
 * the pool. False when nothing was inserted: the key was destroyed meanwhile, or
 * another request claimed `once` first.
 */
export async function insertEntry(db: Executor, p: PreparedEntry, once: AppendOnce | undefined, origin: EntryOrigin = {}): Promise<boolean> {
  return (await insertRows(db, p, once, origin)).length > 0;
}

/**
 * A supersession's successor inserted and the entry it supersedes marked forgotten by
 * `erasureId`, in one statement (the key row's share lock taken before the old entry's
 * row: the order a re-key takes them in). `inserted: false`: the key was destroyed
 * meanwhile; `forgot: false`: another erasure took the old entry first — the caller
 * rolls back.
 */
export async function insertSuccessor(tx: Transaction, p: PreparedEntry, origin: EntryOrigin & { supersedes: string }, erasureId: string) {
  const forget = sql`upd as (
    update log_entries set forgotten_by = ${erasureId}
     where entry_id = ${origin.supersedes} and subject_hash = decode(${Buffer.from(p.subjectHash).toString('hex')}, 'hex') and forgotten_by is null
       and exists (select 1 from ins)
    returning entry_id),`;
  const rows = await insertRows(tx, p, undefined, origin, forget);
  return { inserted: rows.length > 0, forgot: rows.some((r) => Number(r.forgot) > 0) };
}

async function insertRows(db: Executor, p: PreparedEntry, once: AppendOnce | undefined, origin: EntryOrigin, forget?: SQL) {
  const { entryId, keyId, seq } = p.appended;
  // with an idempotency key, the index insert is gated on claiming it (req); without,
  // on the key row still existing — a shared lock either way
  const claim = once ? sql`${claimCte(p.subjectHash, once.key, recordDigest(p.dek, keyId, entryId, p.wrappedKey, once.body), p.appended)},` : sql``;
  const gate = once ? sql`from req` : sql`where exists (select 1 from subject_keys where key_id = ${keyId} for key share)`;
  // prepared: postgres.js parses and plans each of its few texts once per connection, and sends no describe first
  return queryPrepared<{ record_id: string; forgot?: number | string }>(
    db,
    'append-insert',
    sql`with ${claim} ins as (
          insert into log_entries (entry_id, subject_hash, key_id, seq, segment, frame_offset, frame_length, created_at, wrapped_key, written_by, supersedes,
                                   item_hash, namespace_hash)
          select ${entryId}, decode(${Buffer.from(p.subjectHash).toString('hex')}, 'hex'), ${keyId}, ${seq}, ${p.segment},
                 ${p.place.offset}, ${p.place.length}, now(), decode(${Buffer.from(p.wrappedKey).toString('hex')}, 'hex'),
                 ${origin.writtenBy ?? null}, ${origin.supersedes ?? null}, ${hexOrNull(p.item?.itemHash)}, ${hexOrNull(p.item?.namespaceHash)}
           ${gate}
          returning entry_id),
        ${forget ?? sql``}
        ${insertEmbeddingsCte([p.embedding], 'ins')}
        ${notifyInsertedEmbeddings(forget ? sql`(select count(*) from upd) as forgot` : undefined)}`,
  );
}

const hexOrNull = (b: Uint8Array | undefined) => (b ? sql`decode(${Buffer.from(b).toString('hex')}, 'hex')` : sql`null`);

/**
 * A prepared entry that was not inserted: its key zeroed, its segment deleted once no
 * append in it was recorded. Beside a recorded one the frame stays, indexed by nothing
 * and unreadable (its record key is wrapped in no stored row); compaction leaves it
 * out when it rewrites that segment.
 */
export async function discardEntry(c: LogContext, p: PreparedEntry): Promise<void> {
  zeroize(p.dek);
  if (p.giveUpFrame()) await c.objects.delete(p.segment).catch(() => undefined);
}

/** The prepared entry was inserted and committed: searchable here now. */
export function settleEntry(c: LogContext, p: PreparedEntry): RecordedAppend {
  zeroize(p.dek);
  c.vectors.publish([{ ...p.embedding, vector: p.embedding.vector }]);
  return p.appended;
}

export async function store(
  c: LogContext,
  subject: string,
  input: AppendInput,
  actor: string,
  once: AppendOnce | undefined,
  origin: EntryOrigin = {},
): Promise<{ appended: RecordedAppend; replayed: boolean }> {
  const p = await prepareEntry(c, subject, input, actor);
  let inserted: boolean;
  try {
    // published here as soon as it commits: its own notification, should it come first, loads nothing
    inserted = await c.vectors.publishingRecords([{ recordId: p.appended.entryId, keyId: p.appended.keyId }], async () => {
      const done = await insertEntry(c.db, p, once, origin);
      if (done) settleEntry(c, p);
      return done;
    });
  } catch (e) {
    // the insert may have committed before the connection failed: the frame stays (fsck settles an orphan)
    zeroize(p.dek);
    throw e;
  }
  if (inserted) return { appended: p.appended, replayed: false };
  try {
    // a concurrent request with the same key committed first: answer its result (or
    // refuse, when its body differed); either way our frame is indexed by nothing
    const winner = once ? await replayRecorded(c, p.subjectHash, once) : undefined;
    if (winner) return { appended: winner, replayed: true };
  } finally {
    await discardEntry(c, p);
  }
  // destroyed between encryption and indexing (FOR KEY SHARE waited for any re-key
  // or destruction holding the row): the stored frame is already unreadable
  throw new LetheError('erasure_in_progress', 'the subject key was destroyed during the append; nothing was recorded');
}

/**
 * Reserves up to `count` sequence numbers (no more than the head key has room for:
 * key-shards.ts) under the subject's live key for a writer
 * that encrypts locally (the frame's associated data binds its sequence number, so
 * the writer needs it before sealing). Gaps left by a writer that dies are fine:
 * sequence numbers are ordered, not dense.
 */
export async function reserve(c: LogContext, subject: string, count: number, actor: string): Promise<{ keyId: string; firstSeq: number; count: number }> {
  if (!Number.isSafeInteger(count) || count < 1 || count > MAX_RESERVATION) {
    throw new LetheError('validation_failed', `count must be 1 to ${MAX_RESERVATION}`);
  }
  const { keyId, dek, firstSeq, count: granted } = await acrossRekeys(c, subject, () => reserveSeqs(c, subject, count, actor));
  zeroize(dek);
  return { keyId, firstSeq, count: granted };
}

/**
 * The subject's key and DEK (the caller zeroes it) with `count` sequence numbers
 * reserved under it. A cached key that was destroyed elsewhere is dropped and the
 * subject's current key used instead; a fenced key means an erasure is running.
 */
export async function reserveSeqs(c: LogContext, subject: string, count: number, actor: string) {
  // a head rolled into a shard meanwhile (src/vault/key-shards.ts) is a move: followed up to MAX_KEY_MOVES times
  for (let attempt = 0; attempt < 2 + MAX_KEY_MOVES; attempt++) {
    const key = await c.keys.writingKey(subject, actor);
    const reserved = await c.keys.reserveSeqs(key.keyId, count);
    if (reserved !== undefined) return { ...key, firstSeq: reserved.first, count: reserved.count };
    zeroize(key.dek);
    const current = await c.keys.findKey(subject);
    if (current?.keyId === key.keyId)
      throw new LetheError(
        'erasure_in_progress',
        'the subject key is fenced: the subject is being erased, or re-keyed for a moment while some of its entries are forgotten; no new entries are accepted until then',
      );
    c.keys.invalidate(key.keyId);
  }
  throw new LetheError('unavailable', 'the subject key changed during the append; try again');
}

/**
 * The episodic log through the service: the service encrypts each entry under its
 * subject's DEK, stores the frame in a segment object, and indexes it in PostgreSQL.
 * An append is acknowledged only after its segment is stored and its index row
 * committed; an object-store failure answers unavailable and indexes nothing. An
 * append with an idempotency key is stored once however often it is retried
 * (idempotency.ts).
 * Writers that seal locally register their segments (registration.ts); re-keying a
 * subject's log is rekey.ts.
 */
import { and, asc, eq, inArray, isNull, sql } from 'drizzle-orm';
import { zeroize } from '../crypto/index.js';
import { type Database, queryRows, type Transaction } from '../db/client.js';
import { logEntries, type LogEntryRow } from '../db/schema.js';
import { LetheError, isLetheError } from '../errors.js';
import { newId, newSegmentKey } from '../ids.js';
import type { ObjectStore } from '../storage/store.js';
import type { KeyService } from '../vault/keys.js';
import { insertEmbeddingsCte, notifyInsertedEmbeddings } from '../vectors/embeddings.js';
import type { Vectors } from '../vectors/service.js';
import type { LogDeps } from './deps.js';
import { compact, type CompactReport, fsck, type FsckOptions, type FsckReport } from './maintenance.js';
import { rekeyKey, type RekeyOptions, type RekeyResult } from './rekey.js';
import { register, type RegisteredEntry, type RegistrationResult } from './registration.js';
import { Indexer, type IndexerOptions, type QueueStatus } from './indexer.js';
import { type FramePayload, openEntry, sealEntry } from './frame.js';
import {
  type AppendOnce,
  claimCte,
  findRecorded,
  IDEMPOTENCY_KEY_PATTERN,
  IDEMPOTENCY_KEY_RULE,
  LazyPurge,
  type RecordedAppend,
  replay,
  requestDigest,
} from './idempotency.js';
import { FramePayloadSchema, MAX_ENTRY_TEXT_BYTES, payloadProblem } from './payload.js';
import { encodeSegment, frameFromRange, frameRange } from './segment.js';
import { mapLimit } from '../concurrency.js';

export { MAX_ENTRY_TEXT_BYTES };
export const MAX_RESERVATION = 10_000;
/** What a refused (quarantined) entry answers: it is not served. */
const REFUSED = 'no such entry: its frame was refused when it was indexed (it did not open under the key it names, or its payload broke the entry schema)';
const READ_CONCURRENCY = 8;

function checkTextSize(text: string): void {
  if (Buffer.byteLength(text, 'utf8') > MAX_ENTRY_TEXT_BYTES) {
    throw new LetheError('payload_too_large', `text is limited to ${MAX_ENTRY_TEXT_BYTES} bytes`);
  }
}

export interface AppendInput {
  readonly text: string;
  readonly kind?: string | undefined;
  readonly metadata?: Record<string, unknown> | undefined;
}

export interface Entry extends FramePayload {
  readonly entryId: string;
  /** The subject key it was read under (what a read fence of it covers). */
  readonly keyId: string;
  readonly seq: number;
  readonly createdAt: Date;
}

export class LogService {
  readonly #deps: LogDeps;
  readonly #db: Database;
  readonly #keys: KeyService;
  readonly #objects: ObjectStore;
  readonly #vectors: Vectors;
  readonly #purge = new LazyPurge();
  /** Drains the indexing queue: writer-registered entries made searchable off the acknowledgement path (indexer.ts). */
  readonly indexer: Indexer;

  constructor(deps: LogDeps, indexing: IndexerOptions = {}) {
    this.#deps = deps;
    this.#db = deps.db;
    this.#keys = deps.keys;
    this.#objects = deps.objects;
    this.#vectors = deps.vectors;
    this.indexer = new Indexer(deps, indexing);
    if (deps.metrics) deps.metrics.searchQueueSource = () => this.indexer.queueStatus();
  }

  /** Entries waiting to be indexed, and the age of the oldest (what `lethe_search_lag_seconds` answers). */
  queueStatus(): Promise<QueueStatus> {
    return this.indexer.queueStatus();
  }

  /**
   * Resolves once every entry queued now (of the subject, when given) is indexed or
   * refused — indexing them itself when this replica's worker does not run;
   * `unavailable` after `timeoutMs` (default 10 s). What a caller that must search its
   * own writes at once waits for (tests, tools).
   */
  async drained(options: { timeoutMs?: number; subjectHash?: Uint8Array } = {}): Promise<void> {
    const left = await this.indexer.waitIndexed({ ...options, drain: true });
    if (left > 0) throw new LetheError('unavailable', `${left} registered entr${left === 1 ? 'y is' : 'ies are'} not indexed yet: the indexing queue did not drain in time`);
  }

  async append(subject: string, input: AppendInput, actor: string): Promise<{ entryId: string; keyId: string; seq: number }> {
    return (await this.#acrossRekeys(subject, () => this.#store(subject, input, actor, undefined))).appended;
  }

  /**
   * `write` again after a forget's re-key fenced or replaced the subject's key under
   * it (it recorded nothing): no write fails because of a forget. An erasure of the
   * whole subject still refuses at once.
   */
  async #acrossRekeys<T>(subject: string, write: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await write();
      } catch (e) {
        if (attempt >= 2 || !isLetheError(e, 'erasure_in_progress')) throw e;
        if (!(await this.#keys.awaitRekey(this.#keys.subjectHash(subject)))) throw e;
      }
    }
  }

  /**
   * An append with an idempotency key (idempotency.ts): the first request with the
   * key stores the entry and records its result in the statement that indexes it; a
   * retry with the same key and body answers that result (`replayed`) and stores
   * nothing, also when it raced the first (the loser's frame is deleted again); the
   * same key with another body is `idempotency_key_reused`. A retry whose recorded
   * key was destroyed since (erased, re-keyed) is `key_destroyed`.
   */
  async appendOnce(subject: string, input: AppendInput, actor: string, once: AppendOnce): Promise<{ appended: RecordedAppend; replayed: boolean }> {
    if (!IDEMPOTENCY_KEY_PATTERN.test(once.key)) throw new LetheError('validation_failed', `Idempotency-Key must be ${IDEMPOTENCY_KEY_RULE}`);
    checkTextSize(input.text);
    await this.#purge.maybe(this.#db);
    const subjectHash = this.#keys.subjectHash(subject);
    const earlier = await this.#replayRecorded(subjectHash, once);
    if (earlier) return { appended: earlier, replayed: true };
    return this.#acrossRekeys(subject, () => this.#store(subject, input, actor, once));
  }

  /** The recorded answer to `once`, if (subject, key) was recorded within the window. */
  async #replayRecorded(subjectHash: Uint8Array, once: AppendOnce): Promise<RecordedAppend | undefined> {
    const recorded = await findRecorded(this.#db, subjectHash, once.key);
    if (!recorded) return undefined;
    let dek: Uint8Array;
    try {
      ({ dek } = await this.#keys.dekFor(recorded.keyId));
    } catch (e) {
      if (isLetheError(e, 'key_destroyed') || isLetheError(e, 'not_found')) {
        throw new LetheError('key_destroyed', 'the key this Idempotency-Key\'s append was stored under was destroyed since (erased or re-keyed)');
      }
      throw e;
    }
    try {
      return replay(recorded, requestDigest(dek, once.body));
    } finally {
      zeroize(dek);
    }
  }

  async #store(
    subject: string,
    input: AppendInput,
    actor: string,
    once: AppendOnce | undefined,
  ): Promise<{ appended: RecordedAppend; replayed: boolean }> {
    checkTextSize(input.text);
    const { keyId, dek, subjectHash, firstSeq: seq } = await this.#reserveSeqs(subject, 1, actor);
    try {
      const entryId = newId('entry');
      const sealed = sealEntry(dek, { keyId, entryId, seq }, { text: input.text, kind: input.kind ?? null, metadata: input.metadata ?? null });
      const { bytes, places } = encodeSegment([sealed.envelope]);
      const segment = newSegmentKey();
      const [embedding] = await this.#vectors.seal([{ recordId: entryId, recordType: 'entry', text: input.text }], keyId, dek);
      await this.#objects.put(segment, bytes);
      const place = places[0]!;
      const appended = { entryId, keyId, seq };
      // with an idempotency key, the index insert is gated on claiming it (req); without,
      // on the key row still existing — a shared lock either way
      const claim = once ? sql`${claimCte(subjectHash, once.key, requestDigest(dek, once.body), appended)},` : sql``;
      const gate = once ? sql`from req` : sql`where exists (select 1 from subject_keys where key_id = ${keyId} for key share)`;
      // the index row, the sealed embedding (and the idempotency record) commit together, or none does
      const inserted = await queryRows<{ record_id: string }>(
        this.#db,
        sql`with ${claim} ins as (
              insert into log_entries (entry_id, subject_hash, key_id, seq, segment, frame_offset, frame_length, created_at, wrapped_key)
              select ${entryId}, decode(${Buffer.from(subjectHash).toString('hex')}, 'hex'), ${keyId}, ${seq}, ${segment},
                     ${place.offset}, ${place.length}, now(), decode(${Buffer.from(sealed.wrappedKey).toString('hex')}, 'hex')
               ${gate}
              returning entry_id),
            ${insertEmbeddingsCte([embedding!], 'ins')}
            ${notifyInsertedEmbeddings}`,
      );
      if (inserted.length === 0) {
        if (once) {
          // a concurrent request with the same key committed first: answer its result (or
          // refuse, when its body differed); either way our frame is indexed by nothing
          try {
            const winner = await this.#replayRecorded(subjectHash, once);
            if (winner) return { appended: winner, replayed: true };
          } finally {
            await this.#objects.delete(segment).catch(() => undefined);
          }
        }
        // destroyed between encryption and indexing (FOR KEY SHARE waited for any re-key
        // or destruction holding the row): the stored frame is already unreadable
        throw new LetheError('erasure_in_progress', 'the subject key was destroyed during the append; nothing was recorded');
      }
      this.#vectors.publish([{ ...embedding!, vector: embedding!.vector }]);
      return { appended, replayed: false };
    } finally {
      zeroize(dek);
    }
  }

  /**
   * Reserves `count` sequence numbers under the subject's live key for a writer
   * that encrypts locally (the frame's associated data binds its sequence number, so
   * the writer needs it before sealing). Gaps left by a writer that dies are fine:
   * sequence numbers are ordered, not dense.
   */
  async reserve(subject: string, count: number, actor: string): Promise<{ keyId: string; firstSeq: number; count: number }> {
    if (!Number.isSafeInteger(count) || count < 1 || count > MAX_RESERVATION) {
      throw new LetheError('validation_failed', `count must be 1 to ${MAX_RESERVATION}`);
    }
    const { keyId, dek, firstSeq } = await this.#acrossRekeys(subject, () => this.#reserveSeqs(subject, count, actor));
    zeroize(dek);
    return { keyId, firstSeq, count };
  }

  /**
   * The subject's key and DEK (the caller zeroes it) with `count` sequence numbers
   * reserved under it. A cached key that was destroyed elsewhere is dropped and the
   * subject's current key used instead; a fenced key means an erasure is running.
   */
  async #reserveSeqs(subject: string, count: number, actor: string) {
    for (let attempt = 0; attempt < 2; attempt++) {
      const key = await this.#keys.writingKey(subject, actor);
      const firstSeq = await this.#keys.reserveSeqs(key.keyId, count);
      if (firstSeq !== undefined) return { ...key, firstSeq };
      zeroize(key.dek);
      const current = await this.#keys.findKey(subject);
      if (current?.keyId === key.keyId) throw new LetheError('erasure_in_progress', 'the subject key is fenced: the subject is being erased, or re-keyed for a moment while some of its entries are forgotten; no new entries are accepted until then');
      this.#keys.invalidate(key.keyId);
    }
    throw new LetheError('unavailable', 'the subject key changed during the append; try again');
  }

  /**
   * Indexes frames a writer sealed and uploaded itself (registration.ts). Idempotent
   * per entry id.
   */
  async register(segment: string, entries: readonly RegisteredEntry[]): Promise<RegistrationResult[]> {
    const { results, queued } = await register(this.#deps, segment, entries);
    if (queued > 0) this.indexer.poke();
    return results;
  }

  /**
   * Inside a key destruction's transaction (registered with KeyDestructions.within):
   * the destroyed keys' queued entries are never indexed (indexer.ts).
   */
  dropQueuedUnder(tx: Transaction, keyIds: readonly string[]): Promise<void> {
    return this.indexer.dropQueuedUnder(tx, keyIds);
  }

  /** The subject's readable entries (under its live key) in append order. */
  async list(subject: string): Promise<Entry[]> {
    return (await this.read(subject)).entries;
  }

  /**
   * The subject's readable entries and the key they were read under (for a read fence).
   * `page` (the HTTP list's pages): only the entries after seq `afterSeq`, at most
   * `limit` of them; without it, all of them. Forgotten entries are never read here.
   */
  async read(subject: string, page: { afterSeq?: number | undefined; limit?: number | undefined } = {}): Promise<{ entries: Entry[]; keyId: string }> {
    const status = await this.#keys.subjectStatus(subject);
    if (!status.key) {
      if (status.erased) throw new LetheError('subject_erased', 'the subject was erased and has no new key');
      throw new LetheError('not_found', 'no such subject');
    }
    const keyId = status.key.keyId;
    const entries: Entry[] = [];
    let dek: Uint8Array | undefined;
    try {
      // keyset on seq (fixed per entry, kept by a re-key): a page never repeats or skips an entry (README, "Pages")
      for (let afterSeq = page.afterSeq; ; ) {
        const after = afterSeq === undefined ? undefined : sql`${logEntries.seq} > ${afterSeq}`;
        const query = this.#db
          .select()
          .from(logEntries)
          .where(and(eq(logEntries.keyId, keyId), isNull(logEntries.forgottenBy), isNull(logEntries.refused), after))
          .orderBy(asc(logEntries.seq));
        const wanted = page.limit === undefined ? undefined : page.limit - entries.length;
        const rows = await (wanted === undefined ? query : query.limit(wanted));
        if (rows.length === 0) break;
        dek ??= (await this.#keys.dekFor(keyId)).dek;
        // ranged reads of just the subject's frames, a few at a time, in append order
        const envelopes = await mapLimit(rows, READ_CONCURRENCY, (row) => this.#fetchFrame(row));
        for (const [i, row] of rows.entries()) {
          const entry = await this.#served(dek, row, envelopes[i]!);
          if (entry) entries.push(entry);
        }
        // a page short of an entry left out (not yet indexed, its frame refused): the rest of the page is read on
        if (wanted === undefined || rows.length < wanted || entries.length >= page.limit!) break;
        afterSeq = rows.at(-1)!.seq;
      }
      return { entries, keyId };
    } finally {
      if (dek) zeroize(dek);
    }
  }

  /**
   * The readable entries among `ids` (entries whose key was destroyed, that are being
   * forgotten, or that do not exist, are left out; `forgottenBy`: only the entries that
   * erasure forgets), one key unwrap per key. An entry whose key was replaced
   * while we read (a re-key moved it to a new key) is read again under its new key,
   * not mistaken for an erased one.
   */
  async readMany(ids: readonly string[], options: { forgottenBy?: string } = {}): Promise<Map<string, Entry>> {
    const out = new Map<string, Entry>();
    let pending = [...new Set(ids)];
    let seenKeys = new Map<string, string>();
    // a forgotten entry is read by no one but the erasure forgetting it (its fingerprints)
    const visible = options.forgottenBy === undefined ? isNull(logEntries.forgottenBy) : eq(logEntries.forgottenBy, options.forgottenBy);
    for (let pass = 0; pass < 3 && pending.length > 0; pass++) {
      const rows = (await this.#db.select().from(logEntries).where(and(inArray(logEntries.entryId, pending), visible, isNull(logEntries.refused)))).filter(
        // on a second pass, only rows that moved to another key are worth another try
        (row) => pass === 0 || seenKeys.get(row.entryId) !== row.keyId,
      );
      const byKey = new Map<string, LogEntryRow[]>();
      for (const row of rows) byKey.set(row.keyId, [...(byKey.get(row.keyId) ?? []), row]);
      const retry: string[] = [];
      const keys = new Map<string, string>();
      const deks = await this.#keys.deksFor([...byKey.keys()]);
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
          const envelopes = await mapLimit(list, READ_CONCURRENCY, (row) => this.#fetchFrame(row));
          for (const [i, row] of list.entries()) {
            const entry = await this.#served(dek, row, envelopes[i]!);
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

  /** The ids of the entries indexed under a key, in append order. */
  async entryIdsOf(keyId: string): Promise<string[]> {
    const rows = await this.#db.select({ id: logEntries.entryId }).from(logEntries).where(eq(logEntries.keyId, keyId)).orderBy(asc(logEntries.seq));
    return rows.map((r) => r.id);
  }

  /**
   * Where each of the given entries is indexed: its subject (keyed hash), key, and the
   * records-scope erasure forgetting it, if any (unknown ids are absent).
   */
  async locate(ids: readonly string[]): Promise<Array<{ entryId: string; subjectHash: Uint8Array; keyId: string; forgottenBy: string | null }>> {
    const unique = [...new Set(ids)];
    if (unique.length === 0) return [];
    return this.#db
      .select({ entryId: logEntries.entryId, subjectHash: logEntries.subjectHash, keyId: logEntries.keyId, forgottenBy: logEntries.forgottenBy })
      .from(logEntries)
      .where(inArray(logEntries.entryId, unique));
  }

  /**
   * Inside a records-scope erasure's request transaction: from its commit on, the
   * entries are read by no one but that erasure (lists, reads, search and the probe
   * skip them; GET answers entry_forgotten) until the re-key that ends it destroys the
   * only key their record keys are wrapped under. Refuses (conflict) when any of them
   * is already being forgotten or is not indexed under the subject.
   */
  async markForgotten(tx: Transaction, erasureId: string, subjectHash: Uint8Array, ids: readonly string[]): Promise<void> {
    const marked = await tx
      .update(logEntries)
      .set({ forgottenBy: erasureId })
      .where(and(inArray(logEntries.entryId, [...new Set(ids)]), eq(logEntries.subjectHash, subjectHash), isNull(logEntries.forgottenBy)))
      .returning({ entryId: logEntries.entryId });
    if (marked.length !== new Set(ids).size) {
      throw new LetheError('conflict', 'an entry of the request changed meanwhile (it is being forgotten by another erasure); nothing was marked', { retryable: true });
    }
  }

  /** Whether lethe ever indexed an entry of the subject (an erasure of a subject never seen is refused). */
  async hasEntries(subjectHash: Uint8Array): Promise<boolean> {
    const [row] = await queryRows<{ one: number }>(this.#db, sql`select 1 as one from log_entries where subject_hash = ${subjectHash} limit 1`);
    return row !== undefined;
  }

  async get(entryId: string): Promise<Entry> {
    const [row] = await this.#db.select().from(logEntries).where(eq(logEntries.entryId, entryId));
    if (!row) throw new LetheError('not_found', 'no such entry');
    if (row.forgottenBy !== null) throw new LetheError('entry_forgotten', `the entry is forgotten (erasure ${row.forgottenBy})`);
    if (row.refused !== null) throw new LetheError('not_found', REFUSED);
    let dek: Uint8Array;
    try {
      ({ dek } = await this.#keys.dekFor(row.keyId));
    } catch (e) {
      if (isLetheError(e, 'not_found')) throw new LetheError('key_destroyed', 'the entry\'s key was destroyed');
      throw e;
    }
    try {
      const entry = await this.#served(dek, row, await this.#fetchFrame(row));
      if (!entry) throw new LetheError('not_found', REFUSED);
      return entry;
    } finally {
      zeroize(dek);
    }
  }

  async #fetchFrame(row: LogEntryRow): Promise<Uint8Array> {
    const place = { offset: row.frameOffset, length: row.frameLength };
    const range = frameRange(place);
    return frameFromRange(await this.#objects.getRange(row.segment, range.offset, range.length), place);
  }

  /**
   * Rewrites the subject's surviving frames under a new DEK and destroys the old
   * one: the way one entry of a living subject is erased for real, and what erasure
   * redactions use. The old key is fenced first (no appends or leases meanwhile); the
   * new frames are stored before the switch, which commits in one transaction with
   * the old key's destruction. A failure before the switch lifts the fence and loses
   * nothing.
   */
  async rekeySubject(subject: string, options: RekeyOptions): Promise<RekeyResult> {
    const status = await this.#keys.subjectStatus(subject);
    if (!status.key) throw new LetheError(status.erased ? 'subject_erased' : 'not_found', 'the subject has no live key');
    return this.rekeyKey(status.key.keyId, status.key.state, options);
  }

  /**
   * rekeySubject for a subject known only by its live key (the erasure engine's
   * redactions: lethe never holds the other subjects' ids, only their keys).
   */
  rekeyKey(oldKeyId: string, state: 'active' | 'fenced', options: RekeyOptions): Promise<RekeyResult> {
    return rekeyKey({ ...this.#deps, indexer: this.indexer }, oldKeyId, state, options);
  }

  /** `lethe log fsck`: the object store and the index agree (maintenance.ts). */
  fsck(options: FsckOptions = {}): Promise<FsckReport> {
    return fsck(this.#deps, options);
  }

  /** `lethe log compact`: segments rewritten without the frames of destroyed keys (maintenance.ts). */
  compact(): Promise<CompactReport> {
    return compact(this.#deps);
  }

  /**
   * The entry as served: its frame opened and its payload held to the entry schema.
   * An entry still queued for the indexer was never checked (a writer registered it):
   * one that does not open or breaks the schema is left out (undefined) — the indexer
   * refuses it. Any other that fails is an invariant broken, and throws.
   */
  async #served(dek: Uint8Array, row: LogEntryRow, envelope: Uint8Array): Promise<Entry | undefined> {
    let failure: unknown;
    try {
      const payload = openEntry(dek, { keyId: row.keyId, entryId: row.entryId, seq: row.seq }, row.wrappedKey, envelope);
      const problem = payloadProblem(FramePayloadSchema, payload);
      if (!problem) return { entryId: row.entryId, keyId: row.keyId, seq: row.seq, createdAt: row.createdAt, text: payload.text, kind: payload.kind, metadata: payload.metadata };
      failure = new LetheError('internal', `entry ${row.entryId}: the frame's ${problem.slice(0, problem.indexOf(':'))} breaks the entry schema`);
    } catch (e) {
      failure = e;
    }
    if (await this.indexer.isQueued(row.entryId)) return undefined;
    throw failure;
  }
}

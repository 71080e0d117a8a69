/**
 * The episodic log through the service: the service encrypts each entry under its
 * subject's DEK, stores the frame in a segment object, and indexes it in PostgreSQL.
 * An append is acknowledged only after its segment is stored and its index row
 * committed; an object-store failure answers unavailable and indexes nothing.
 */
import { asc, eq, inArray, sql } from 'drizzle-orm';
import { randomBytes, zeroize } from '../crypto/index.js';
import { type Database, queryRows } from '../db/client.js';
import { logEntries, type LogEntryRow } from '../db/schema.js';
import { LetheError, isLetheError } from '../errors.js';
import { newId, newSegmentKey, SEGMENT_KEY_PATTERN } from '../ids.js';
import type { ObjectStore } from '../storage/store.js';
import type { KeyService } from '../vault/keys.js';
import { insertEmbeddingsCte, notifyEmbeddings, notifyInsertedEmbeddings, upsertEmbeddings } from '../vectors/embeddings.js';
import type { Vectors } from '../vectors/service.js';
import { type FramePayload, openFrame, sealFrame } from './frame.js';
import { encodeSegment, frameAt, frameFromRange, frameRange } from './segment.js';

export const MAX_ENTRY_TEXT_BYTES = 64 * 1024;
export const MAX_RESERVATION = 10_000;
const READ_CONCURRENCY = 8;

/** `fn` over `items` with at most `limit` calls in flight; results in input order. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
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
  readonly #db: Database;
  readonly #keys: KeyService;
  readonly #objects: ObjectStore;
  readonly #vectors: Vectors;

  constructor(deps: { db: Database; keys: KeyService; objects: ObjectStore; vectors: Vectors }) {
    this.#db = deps.db;
    this.#keys = deps.keys;
    this.#objects = deps.objects;
    this.#vectors = deps.vectors;
  }

  async append(subject: string, input: AppendInput, actor: string): Promise<{ entryId: string; keyId: string; seq: number }> {
    if (Buffer.byteLength(input.text, 'utf8') > MAX_ENTRY_TEXT_BYTES) {
      throw new LetheError('payload_too_large', `text is limited to ${MAX_ENTRY_TEXT_BYTES} bytes`);
    }
    const { keyId, dek, subjectHash, firstSeq: seq } = await this.#reserveSeqs(subject, 1, actor);
    try {
      const entryId = newId('entry');
      const frame = sealFrame(dek, { keyId, entryId, seq }, { text: input.text, kind: input.kind ?? null, metadata: input.metadata ?? null });
      const { bytes, places } = encodeSegment([frame]);
      const segment = newSegmentKey();
      const [embedding] = await this.#vectors.seal([{ recordId: entryId, recordType: 'entry', text: input.text }], keyId, dek);
      await this.#objects.put(segment, bytes);
      const place = places[0]!;
      // the index row and the sealed embedding commit together, or neither does
      const inserted = await queryRows<{ record_id: string }>(
        this.#db,
        sql`with ins as (
              insert into log_entries (entry_id, subject_hash, key_id, seq, segment, frame_offset, frame_length, created_at)
              select ${entryId}, decode(${Buffer.from(subjectHash).toString('hex')}, 'hex'), ${keyId}, ${seq}, ${segment},
                     ${place.offset}, ${place.length}, now()
               where exists (select 1 from subject_keys where key_id = ${keyId} for key share)
              returning entry_id),
            ${insertEmbeddingsCte([embedding!], 'ins')}
            ${notifyInsertedEmbeddings}`,
      );
      if (inserted.length === 0) {
        // destroyed between encryption and indexing (FOR KEY SHARE waited for any re-key
        // or destruction holding the row): the stored frame is already unreadable
        throw new LetheError('erasure_in_progress', 'the subject key was destroyed during the append; nothing was recorded');
      }
      this.#vectors.publish([{ ...embedding!, vector: embedding!.vector }]);
      return { entryId, keyId, seq };
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
    const { keyId, dek, firstSeq } = await this.#reserveSeqs(subject, count, actor);
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
      if (current?.keyId === key.keyId) throw new LetheError('erasure_in_progress', 'the subject is being erased; no new entries are accepted');
      this.#keys.invalidate(key.keyId);
    }
    throw new LetheError('unavailable', 'the subject key changed during the append; try again');
  }

  /**
   * Indexes frames a writer sealed and uploaded itself. Each entry must name its
   * subject's live, active key and a sequence number reserved under it, and fit the
   * stored segment; entries of a key destroyed or fenced meanwhile are refused
   * (their frames are unreadable or about to be). Idempotent per entry id.
   */
  async register(
    segment: string,
    entries: ReadonlyArray<{ entryId: string; subject: string; keyId: string; seq: number; offset: number; length: number }>,
  ): Promise<Array<{ entryId: string; status: 'registered' | 'key_destroyed' | 'erasure_in_progress' }>> {
    if (!SEGMENT_KEY_PATTERN.test(segment)) throw new LetheError('validation_failed', 'segment must be log/seg_<22 base64url characters>');
    const stored = await this.#objects.head(segment);
    if (!stored) throw new LetheError('validation_failed', 'segment: no such object in the store (upload it first)');
    const rows = entries.map((e) => {
      if (e.offset < 16 || e.length < 1 || e.offset + e.length > stored.size) {
        throw new LetheError('validation_failed', `entries: ${e.entryId} does not fit the stored segment`);
      }
      return { ...e, subjectHash: Buffer.from(this.#keys.subjectHash(e.subject)).toString('hex') };
    });
    const json = JSON.stringify(
      rows.map((r) => ({ entry_id: r.entryId, subject_hash: r.subjectHash, key_id: r.keyId, seq: r.seq, offset: r.offset, length: r.length })),
    );
    const sealed = await this.#embedRegistered(segment, entries);
    const result = await queryRows<{ entry_id: string; status: string }>(
      this.#db,
      sql`with v as (
            select * from json_to_recordset(${json}::json)
              as v(entry_id text, subject_hash text, key_id text, seq integer, "offset" integer, length integer)),
          keys as (
            select key_id, subject_hash, state, next_seq from subject_keys
             where key_id in (select key_id from v) for key share),
          ok as (
            select v.* from v join keys k on k.key_id = v.key_id
             where k.state = 'active' and k.subject_hash = decode(v.subject_hash, 'hex') and v.seq >= 1 and v.seq < k.next_seq),
          ins as (
            insert into log_entries (entry_id, subject_hash, key_id, seq, segment, frame_offset, frame_length, created_at)
            select entry_id, decode(subject_hash, 'hex'), key_id, seq, ${segment}, "offset", length, now() from ok
            on conflict (entry_id) do nothing
            returning entry_id),
          ${insertEmbeddingsCte(sealed, 'ins')}
          select v.entry_id,
                 case when exists (select 1 from ok where ok.entry_id = v.entry_id) then 'registered'
                      when k.key_id is null then 'key_destroyed'
                      when k.state = 'fenced' then 'erasure_in_progress'
                      else 'invalid' end as status
            from v left join keys k on k.key_id = v.key_id`,
    );
    const invalid = result.filter((r) => r.status === 'invalid');
    if (invalid.length > 0) {
      throw new LetheError('validation_failed', `entries: ${invalid.length} entr(y/ies) name a key of another subject or a sequence number never reserved`);
    }
    const registered = new Set(result.filter((r) => r.status === 'registered').map((r) => r.entry_id));
    const published = sealed.filter((e) => registered.has(e.recordId));
    this.#vectors.publish(published);
    await notifyEmbeddings(this.#db, published);
    return result.map((r) => ({ entryId: r.entry_id, status: r.status as 'registered' | 'key_destroyed' | 'erasure_in_progress' }));
  }

  /**
   * Opens the frames a writer registers (the service holds their keys) and embeds
   * them: a frame that does not open under the key it names is refused, and the
   * entry's embedding is sealed under the same key. Entries of keys already gone are
   * left to the registration statement to answer.
   */
  async #embedRegistered(segment: string, entries: ReadonlyArray<{ entryId: string; keyId: string; seq: number; offset: number; length: number }>) {
    const bytes = await this.#objects.get(segment);
    const byKey = new Map<string, typeof entries[number][]>();
    for (const e of entries) {
      const list = byKey.get(e.keyId) ?? [];
      list.push(e);
      byKey.set(e.keyId, list);
    }
    const deks = await this.#keys.deksFor([...byKey.keys()]);
    try {
      const records: Array<{ recordId: string; recordType: 'entry'; text: string; keyId: string; key: Uint8Array }> = [];
      for (const [keyId, list] of byKey) {
        const dek = deks.get(keyId);
        if (!dek) continue; // destroyed: the registration statement answers key_destroyed
        for (const e of list) {
          let text: string;
          try {
            text = openFrame(dek, { keyId, entryId: e.entryId, seq: e.seq }, frameAt(bytes, { offset: e.offset, length: e.length })).text;
          } catch {
            throw new LetheError('validation_failed', `entries: ${e.entryId} does not open under the key it names at the place it names`);
          }
          records.push({ recordId: e.entryId, recordType: 'entry', text, keyId, key: dek });
        }
      }
      // one embedder call for the whole segment
      return await this.#vectors.sealEach(records);
    } finally {
      for (const dek of deks.values()) zeroize(dek);
    }
  }

  /** The subject's readable entries (under its live key) in append order. */
  async list(subject: string): Promise<Entry[]> {
    return (await this.read(subject)).entries;
  }

  /** The subject's readable entries and the key they were read under (for a read fence). */
  async read(subject: string): Promise<{ entries: Entry[]; keyId: string }> {
    const status = await this.#keys.subjectStatus(subject);
    if (!status.key) {
      if (status.erased) throw new LetheError('subject_erased', 'the subject was erased and has no new key');
      throw new LetheError('not_found', 'no such subject');
    }
    const rows = await this.#db
      .select()
      .from(logEntries)
      .where(eq(logEntries.keyId, status.key.keyId))
      .orderBy(asc(logEntries.seq));
    const keyId = status.key.keyId;
    if (rows.length === 0) return { entries: [], keyId };
    const { dek } = await this.#keys.dekFor(keyId);
    try {
      // ranged reads of just the subject's frames, a few at a time, in append order
      const envelopes = await mapLimit(rows, READ_CONCURRENCY, (row) => this.#fetchFrame(row));
      return { entries: rows.map((row, i) => this.#open(dek, row, envelopes[i]!)), keyId };
    } finally {
      zeroize(dek);
    }
  }

  /**
   * The readable entries among `ids` (entries whose key was destroyed, or that do not
   * exist, are left out), one key unwrap per key. An entry whose key was replaced
   * while we read (a re-key moved it to a new key) is read again under its new key,
   * not mistaken for an erased one.
   */
  async readMany(ids: readonly string[]): Promise<Map<string, Entry>> {
    const out = new Map<string, Entry>();
    let pending = [...new Set(ids)];
    let seenKeys = new Map<string, string>();
    for (let pass = 0; pass < 3 && pending.length > 0; pass++) {
      const rows = (await this.#db.select().from(logEntries).where(inArray(logEntries.entryId, pending))).filter(
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
          list.forEach((row, i) => out.set(row.entryId, this.#open(dek, row, envelopes[i]!)));
        }
      } finally {
        for (const dek of deks.values()) zeroize(dek);
      }
      pending = retry;
      seenKeys = keys;
    }
    return out;
  }

  /** How many entries are indexed under a key (readable or not). */
  async countByKey(keyId: string): Promise<number> {
    const [row] = await queryRows<{ n: string | number }>(this.#db, sql`select count(*) as n from log_entries where key_id = ${keyId}`);
    return Number(row?.n ?? 0);
  }

  /** How many of the subject's entries are still readable (indexed under a live key of the subject). */
  async countReadable(subjectHash: Uint8Array): Promise<number> {
    const [row] = await queryRows<{ n: string | number }>(
      this.#db,
      sql`select count(*) as n from log_entries e join subject_keys k on k.key_id = e.key_id where e.subject_hash = ${subjectHash}`,
    );
    return Number(row?.n ?? 0);
  }

  /** The ids of the entries indexed under a key, in append order. */
  async entryIdsOf(keyId: string): Promise<string[]> {
    const rows = await this.#db.select({ id: logEntries.entryId }).from(logEntries).where(eq(logEntries.keyId, keyId)).orderBy(asc(logEntries.seq));
    return rows.map((r) => r.id);
  }

  /** Where each of the given entries is indexed: its subject (keyed hash) and key (unknown ids are absent). */
  async locate(ids: readonly string[]): Promise<Array<{ entryId: string; subjectHash: Uint8Array; keyId: string }>> {
    const unique = [...new Set(ids)];
    if (unique.length === 0) return [];
    return this.#db
      .select({ entryId: logEntries.entryId, subjectHash: logEntries.subjectHash, keyId: logEntries.keyId })
      .from(logEntries)
      .where(inArray(logEntries.entryId, unique));
  }

  /** Whether lethe ever indexed an entry of the subject (an erasure of a subject never seen is refused). */
  async hasEntries(subjectHash: Uint8Array): Promise<boolean> {
    const [row] = await queryRows<{ one: number }>(this.#db, sql`select 1 as one from log_entries where subject_hash = ${subjectHash} limit 1`);
    return row !== undefined;
  }

  async get(entryId: string): Promise<Entry> {
    const [row] = await this.#db.select().from(logEntries).where(eq(logEntries.entryId, entryId));
    if (!row) throw new LetheError('not_found', 'no such entry');
    let dek: Uint8Array;
    try {
      ({ dek } = await this.#keys.dekFor(row.keyId));
    } catch (e) {
      if (isLetheError(e, 'not_found')) throw new LetheError('key_destroyed', 'the entry\'s key was destroyed');
      throw e;
    }
    try {
      return this.#open(dek, row, await this.#fetchFrame(row));
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
  async rekeySubject(
    subject: string,
    options: { exclude?: readonly string[]; actor: string; reason?: string },
  ): Promise<{ oldKeyId: string; newKeyId: string; rewritten: number; removed: number }> {
    const status = await this.#keys.subjectStatus(subject);
    if (!status.key) throw new LetheError(status.erased ? 'subject_erased' : 'not_found', 'the subject has no live key');
    return this.rekeyKey(status.key.keyId, status.key.state, options);
  }

  /**
   * rekeySubject for a subject known only by its live key (the erasure engine's
   * redactions: lethe never holds the other subjects' ids, only their keys).
   */
  async rekeyKey(
    oldKeyId: string,
    state: 'active' | 'fenced',
    options: { exclude?: readonly string[]; actor: string; reason?: string },
  ): Promise<{ oldKeyId: string; newKeyId: string; rewritten: number; removed: number }> {
    const rows = await this.#db.select().from(logEntries).where(eq(logEntries.keyId, oldKeyId)).orderBy(asc(logEntries.seq));
    const exclude = new Set(options.exclude ?? []);
    const unknown = [...exclude].filter((id) => !rows.some((r) => r.entryId === id));
    if (unknown.length > 0) throw new LetheError('validation_failed', `exclude: ${unknown.length} id(s) are not entries of this subject under its live key`);
    const wasActive = state === 'active';
    if (wasActive) await this.#keys.fenceKey(oldKeyId, options.actor);
    const newKeyId = newId('key');
    const newDek = randomBytes(32);
    let oldDek: Uint8Array | undefined;
    try {
      ({ dek: oldDek } = await this.#keys.dekFor(oldKeyId));
      const survivors = rows.filter((r) => !exclude.has(r.entryId));
      const frames: Uint8Array[] = [];
      const texts: string[] = [];
      const segments = new Map<string, Uint8Array>();
      for (const row of survivors) {
        let bytes = segments.get(row.segment);
        if (!bytes) {
          bytes = await this.#objects.get(row.segment);
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
        embedded.push(...(await this.#vectors.seal(chunk, newKeyId, newDek)));
      }
      const segment = newSegmentKey();
      const { bytes, places } = encodeSegment(frames);
      if (frames.length > 0) await this.#objects.put(segment, bytes);
      const moved = JSON.stringify(survivors.map((r, i) => ({ entry_id: r.entryId, offset: places[i]!.offset, length: places[i]!.length })));
      const removed = JSON.stringify([...exclude]);
      await this.#keys.replaceKey(oldKeyId, {
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
      this.#vectors.publish(embedded);
      return { oldKeyId, newKeyId, rewritten: survivors.length, removed: exclude.size };
    } catch (e) {
      if (wasActive) await this.#keys.unfenceKey(oldKeyId, options.actor).catch(() => {});
      throw e;
    } finally {
      zeroize(newDek, oldDek);
    }
  }

  #open(dek: Uint8Array, row: LogEntryRow, envelope: Uint8Array): Entry {
    const payload = openFrame(dek, { keyId: row.keyId, entryId: row.entryId, seq: row.seq }, envelope);
    return { entryId: row.entryId, keyId: row.keyId, seq: row.seq, createdAt: row.createdAt, text: payload.text, kind: payload.kind, metadata: payload.metadata };
  }
}

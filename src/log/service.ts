/**
 * The episodic log through the service — the façade over append.ts (appends,
 * idempotent appends, reservations), read.ts (lists and reads), lookups.ts (what the
 * erasure engine asks of the index), registration.ts (segments writers sealed
 * themselves), rekey.ts, maintenance.ts and the indexer (indexer.ts).
 * An append is acknowledged only after its segment is stored and its index row
 * committed; an object-store failure answers unavailable and indexes nothing.
 */
import { SealedCache } from '../storage/sealed-cache.js';
import type { Executor, Transaction } from '../db/client.js';
import { LetheError } from '../errors.js';
import {
  acrossRekeys,
  append,
  type AppendInput,
  appendItem,
  appendOnce,
  discardEntry,
  type EntryOrigin,
  insertEntry,
  insertSuccessor,
  type PreparedEntry,
  prepareEntry,
  reserve,
  settleEntry,
} from './append.js';
import type { LogContext } from './context.js';
import type { LogDeps } from './deps.js';
import { type AppendOnce, LazyPurge, type RecordedAppend } from './idempotency.js';
import { SegmentBatcher } from './segment-batch.js';
import { Indexer, type IndexerOptions, type QueueStatus } from './indexer.js';
import { entryIdsOf, forgottenUnder, hasEntries, type LocatedEntry, locate, lockSuperseded, markForgotten, successorsOf } from './lookups.js';
import { compact, type CompactReport, fsck, type FsckOptions, type FsckReport } from './maintenance.js';
import { type FoundItem, type ItemSearch, listItems, rankItems } from './item-search.js';
import { lookupItem, namespaceEntries } from './items.js';
import { MAX_ENTRY_TEXT_BYTES, type StoreItem } from './payload.js';
import { type Entry, get, read, readMany } from './read.js';
import { rekeyKey, type RekeyOptions, type RekeyResult } from './rekey.js';
import { register, type RegisteredEntry, type RegistrationResult } from './registration.js';

export { MAX_ENTRY_TEXT_BYTES };
export { type AppendInput, MAX_RESERVATION } from './append.js';
export type { Entry } from './read.js';

export class LogService {
  readonly #c: LogContext;
  /** Drains the indexing queue: writer-registered entries made searchable off the acknowledgement path (indexer.ts). */
  readonly indexer: Indexer;

  constructor(deps: LogDeps, indexing: IndexerOptions = {}) {
    // the frames the indexer opens are those searches find next: it fills the cache reads consult
    const frames = new SealedCache();
    this.indexer = new Indexer({ ...deps, frames }, indexing);
    this.#c = { ...deps, indexer: this.indexer, purge: new LazyPurge(), frames, segments: new SegmentBatcher(deps.objects) };
    if (deps.metrics) deps.metrics.searchQueueSource = () => this.indexer.queueStatus();
  }

  /** Entries waiting to be indexed, and the age of the oldest (what `lethe_search_lag_seconds` answers). */
  queueStatus(): Promise<QueueStatus> {
    return this.indexer.queueStatus();
  }

  /**
   * Resolves once every entry queued now (of the subject, when given) is indexed or
   * refused, and what this replica's worker committed is in its own index — indexing
   * them itself when this replica's worker does not run;
   * `unavailable` after `timeoutMs` (default 10 s). What a caller that must search its
   * own writes at once waits for (tests, tools).
   */
  async drained(options: { timeoutMs?: number; subjectHash?: Uint8Array } = {}): Promise<void> {
    const left = await this.indexer.waitIndexed({ ...options, drain: true });
    if (left > 0)
      throw new LetheError(
        'unavailable',
        `${left} registered entr${left === 1 ? 'y is' : 'ies are'} not indexed yet: the indexing queue did not drain in time`,
      );
  }

  append = (subject: string, input: AppendInput, actor: string, origin?: EntryOrigin): Promise<{ entryId: string; keyId: string; seq: number }> =>
    append(this.#c, subject, input, actor, origin);
  /** An append with an idempotency key (idempotency.ts): a retry with the same key and body answers the first's result. */
  appendOnce = (
    subject: string,
    input: AppendInput,
    actor: string,
    once: AppendOnce,
    origin?: EntryOrigin,
  ): Promise<{ appended: RecordedAppend; replayed: boolean }> => appendOnce(this.#c, subject, input, actor, once, origin);
  /** An item's first version, or its live entries when it has some (`If-None-Match: *`): append.ts `appendItem`. */
  appendItem = (subject: string, input: AppendInput & { readonly item: StoreItem }, actor: string, once: AppendOnce | undefined, origin?: EntryOrigin) =>
    appendItem(this.#c, subject, input, actor, once, origin);
  /** An entry sealed and its frame stored, to be inserted in a transaction of the caller's (a supersession's): then settled, or discarded. */
  prepareEntry = (subject: string, input: AppendInput, actor: string): Promise<PreparedEntry> =>
    acrossRekeys(this.#c, subject, () => prepareEntry(this.#c, subject, input, actor));
  insertEntry = (tx: Executor, p: PreparedEntry, origin: EntryOrigin): Promise<boolean> => insertEntry(tx, p, undefined, origin);
  insertSuccessor = (tx: Transaction, p: PreparedEntry, origin: EntryOrigin & { supersedes: string }, erasureId: string) =>
    insertSuccessor(tx, p, origin, erasureId);
  settleEntry = (p: PreparedEntry): RecordedAppend => settleEntry(this.#c, p);
  /** Runs `fn`, which commits these entries and settles them: their own notifications load nothing meanwhile (Vectors.publishingRecords). */
  publishingEntries = <T>(entries: readonly PreparedEntry[], fn: () => Promise<T>): Promise<T> =>
    this.#c.vectors.publishingRecords(
      entries.map((p) => ({ recordId: p.appended.entryId, keyId: p.appended.keyId })),
      fn,
    );
  discardEntry = (p: PreparedEntry): Promise<void> => discardEntry(this.#c, p);
  successorsOf = (ids: readonly string[]): Promise<string[]> => successorsOf(this.#c, ids);
  /** The entries under a key other records-scope erasures are forgetting, by erasure (a re-key may take them along). */
  forgottenUnder = (keyId: string, except: string): Promise<Map<string, string[]>> => forgottenUnder(this.#c, keyId, except);
  /** Reserves `count` sequence numbers under the subject's live key for a writer that seals locally. */
  reserve = (subject: string, count: number, actor: string): Promise<{ keyId: string; firstSeq: number; count: number }> =>
    reserve(this.#c, subject, count, actor);

  /** Indexes frames a writer sealed and uploaded itself (registration.ts). Idempotent per entry id. */
  async register(segment: string, entries: readonly RegisteredEntry[], writtenBy?: string): Promise<RegistrationResult[]> {
    const { results, queued } = await register(this.#c, segment, entries, writtenBy);
    if (queued > 0) this.indexer.poke();
    return results;
  }

  /** Inside a key destruction's transaction: the destroyed keys' queued entries are never indexed (indexer.ts). */
  dropQueuedUnder(tx: Transaction, keyIds: readonly string[]): Promise<void> {
    return this.indexer.dropQueuedUnder(tx, keyIds);
  }

  /** The subject's readable entries (under its live key) in append order. */
  async list(subject: string): Promise<Entry[]> {
    return (await read(this.#c, subject)).entries;
  }

  read = (subject: string, page: { afterSeq?: number | undefined; limit?: number | undefined } = {}): Promise<{ entries: Entry[]; keyIds: string[] }> =>
    read(this.#c, subject, page);
  readMany = (ids: readonly string[], options: { forgottenBy?: string } = {}): Promise<Map<string, Entry>> => readMany(this.#c, ids, options);
  get = (entryId: string): Promise<Entry> => get(this.#c, entryId);
  entryIdsOf = (subjectHash: Uint8Array): Promise<string[]> => entryIdsOf(this.#c, subjectHash);
  locate = (ids: readonly string[]): Promise<LocatedEntry[]> => locate(this.#c, ids);
  lockSuperseded = (tx: Transaction, keyIds: readonly string[], entryIds: readonly string[]): Promise<void> => lockSuperseded(tx, keyIds, entryIds);
  markForgotten = (tx: Transaction, erasureId: string, subjectHash: Uint8Array, ids: readonly string[]): Promise<void> =>
    markForgotten(this.#c, tx, erasureId, subjectHash, ids);
  hasEntries = (subjectHash: Uint8Array): Promise<boolean> => hasEntries(this.#c, subjectHash);
  /** A store item's live entries for the subject, newest first (items.ts). */
  lookupItem = (subject: string, item: StoreItem): Promise<Entry[]> => lookupItem(this.#c, subject, item);
  /** One live entry of each store namespace in use (items.ts). */
  /** The subject's live store items, newest first, filtered and paged on the service (item-search.ts). */
  listItems = (subject: string, search: ItemSearch): Promise<FoundItem[]> => listItems(this.#c, subject, search);
  /** The store items of a search's ranked hits, best first, filtered and paged (item-search.ts). */
  rankItems = (subject: string, ranked: ReadonlyArray<{ entryId: string; score: number }>, search: ItemSearch): Promise<FoundItem[]> =>
    rankItems(this.#c, subject, ranked, search);
  namespaceEntries = (options: { subject?: string | undefined; limit: number; offset: number }): Promise<Entry[]> => namespaceEntries(this.#c, options);

  /**
   * Rewrites the subject's surviving entries under new DEKs and destroys the old ones
   * (rekey.ts), every key of it — its head and its shards, one after the other
   * (`lethe log rekey`: after a leaked lease, no key it could have held is left). The
   * answer is the head's re-key with the others' counts added. A failure before a
   * key's switch lifts its fence and loses nothing; the keys switched before it stay
   * switched.
   */
  async rekeySubject(subject: string, options: RekeyOptions): Promise<RekeyResult> {
    const status = await this.#c.keys.subjectStatus(subject);
    if (!status.key) throw new LetheError(status.erased ? 'subject_erased' : 'not_found', 'the subject has no live key');
    const keys = await this.#c.keys.keysOf(status.subjectHash);
    const exclude = [...new Set(options.exclude ?? [])];
    const under = new Map((await locate(this.#c, exclude)).map((e) => [e.entryId, e.keyId]));
    const unknown = exclude.filter((id) => !keys.some((k) => k.keyId === under.get(id)));
    if (unknown.length > 0) throw new LetheError('validation_failed', `exclude: ${unknown.length} id(s) are not entries of this subject under its live keys`);
    let total: RekeyResult | undefined;
    for (const k of keys) {
      const r = await this.rekeyKey(k.keyId, k.state, { ...options, exclude: exclude.filter((id) => under.get(id) === k.keyId) });
      total = total
        ? {
            ...total,
            shardKeyIds: [...total.shardKeyIds, ...r.shardKeyIds],
            rewritten: total.rewritten + r.rewritten,
            converted: total.converted + r.converted,
            removed: total.removed + r.removed,
          }
        : r;
    }
    return total!;
  }

  /** rekeySubject for a subject known only by its live key (redactions: lethe never holds other subjects' ids). */
  rekeyKey(oldKeyId: string, state: 'active' | 'fenced', options: RekeyOptions): Promise<RekeyResult> {
    return rekeyKey(this.#c, oldKeyId, state, options);
  }

  /** `lethe log fsck`: the object store and the index agree (maintenance.ts). */
  fsck(options: FsckOptions = {}): Promise<FsckReport> {
    return fsck(this.#c, options);
  }

  /** `lethe log compact`: segments rewritten without the frames of destroyed keys (maintenance.ts). */
  compact(): Promise<CompactReport> {
    return compact(this.#c);
  }
}

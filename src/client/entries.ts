/** `lethe.entries`: the episodic log through the service (it seals): appends, updates, forgets, reads, item lookups. */
import type { Entry, Superseded, SupersededMany } from '../wire/log.js';
import { ServiceError } from './http.js';
import { newIdempotencyKey, type RetryOptions, retryPolicy, withRetries } from './retry.js';
import { followPages, type ListOptions, type PageOptions, query, type RoleCalls, seg, withCursor } from './roles.js';
import type { ItemSearchOptions } from './search-options.js';
import type { RequestedErasure } from './erasures.js';

export interface EntryRead extends Entry {
  /** Pass it when writing what you derived from this read (`artifacts.create`). */
  readonly readFence: string;
}

export interface EntryPage {
  readonly entries: Entry[];
  /** Covers the entries of this page. */
  readonly readFence: string;
  readonly nextCursor: string | null;
}

/** Namespaces asked for per request. */
const NAMESPACE_PAGE = 1000;

export interface NewEntry {
  readonly text: string;
  readonly kind?: string;
  readonly metadata?: Record<string, unknown>;
  /** The store item the entry holds: the service indexes it as keyed hashes (`entries.lookup`, `entries.namespaceEntries`). */
  readonly item?: { readonly namespace: readonly string[]; readonly key: string };
}

export interface AppendResult {
  readonly entryId: string;
  readonly keyId: string;
  readonly seq: number;
  /** True when an `idempotencyKey` retry answered an earlier append's result (nothing stored). */
  readonly replayed: boolean;
}

/** The episodic log: appends through the service (it seals), reads, lists. */
export class Entries {
  readonly #calls: RoleCalls;
  readonly #retry: Required<RetryOptions>;

  constructor(calls: RoleCalls, retry: RetryOptions = {}) {
    this.#calls = calls;
    this.#retry = retryPolicy(retry);
  }

  /**
   * Appends through the service, which seals the entry under the subject's key. Every
   * append carries an `Idempotency-Key` (`idempotencyKey`, else a fresh one) and is
   * retried with it while the service refuses it for a moment (a retryable 409: a
   * forget re-keying the subject; `retry` option of the facade): one success, one
   * stored entry. A retry with the same key and entry stores nothing and answers the
   * first result (`replayed`). An erased subject is refused at once (410
   * `subject_erased`). To keep plaintext off the network, use `lethe.writer()` instead.
   */
  append(subject: string, entry: NewEntry, options: { readonly idempotencyKey?: string } = {}): Promise<AppendResult> {
    return this.#append(subject, entry, { 'idempotency-key': options.idempotencyKey ?? newIdempotencyKey() });
  }

  async #append(subject: string, entry: NewEntry, headers: Record<string, string>): Promise<AppendResult> {
    const res = await withRetries(this.#retry, () => this.#calls.request('writer', 'POST', `/v1/subjects/${seg(subject)}/entries`, { body: entry, headers }));
    const { entryId, keyId, seq } = (await res.json()) as AppendResult;
    return { entryId, keyId, seq, replayed: res.headers.get('idempotent-replayed') === 'true' };
  }

  /**
   * Appends `entry` as the first version of its `item` (`If-None-Match: *`): when the item
   * already has live entries, nothing is stored and they are the answer (newest first, as
   * `lookup` gives them) — a store's put is one call whether it creates or supersedes.
   * Idempotent and retried as `append`.
   */
  async appendItem(
    subject: string,
    entry: NewEntry & { readonly item: NonNullable<NewEntry['item']> },
    options: { readonly idempotencyKey?: string } = {},
  ): Promise<{ readonly appended: AppendResult } | { readonly existing: Entry[] }> {
    try {
      return { appended: await this.#append(subject, entry, { 'idempotency-key': options.idempotencyKey ?? newIdempotencyKey(), 'if-none-match': '*' }) };
    } catch (e) {
      const existing = e instanceof ServiceError && e.code === 'item_exists' ? (e.problem as { entries?: unknown }).entries : undefined;
      if (!Array.isArray(existing)) throw e;
      return { existing: existing as Entry[] };
    }
  }

  /**
   * Updates a memory: `entry` is appended as the successor of `entryId` and the old one
   * forgotten, in one transaction (the old version's erasure does not count the
   * successor). Writer role: only entries this token wrote (eraser: any). Retried while
   * the subject is re-keyed for a moment; 409 `conflict` when the entry was already
   * forgotten or superseded — supersede its current version.
   */
  async supersede(subject: string, entryId: string, entry: NewEntry): Promise<Superseded> {
    const res = await withRetries(this.#retry, () =>
      this.#calls.request('writer', 'POST', `/v1/subjects/${seg(subject)}/entries/${seg(entryId)}/supersede`, { body: entry }),
    );
    return (await res.json()) as Superseded;
  }

  /** Updates a memory held in several entries: `entries` replace `entryIds` in one transaction, or nothing does. Retried like `supersede`. */
  async supersedeAll(subject: string, entryIds: readonly string[], entries: readonly NewEntry[]): Promise<SupersededMany> {
    const res = await withRetries(this.#retry, () =>
      this.#calls.request('writer', 'POST', `/v1/subjects/${seg(subject)}/supersede`, { body: { entryIds, entries } }),
    );
    return (await res.json()) as SupersededMany;
  }

  /** Forgets an entry this writer token wrote (a records-scope erasure; `lethe.forget` takes any, with the eraser token). */
  async forget(entryId: string): Promise<RequestedErasure> {
    const res = await this.#calls.request('writer', 'DELETE', `/v1/entries/${seg(entryId)}`);
    const accepted = (await res.json()) as { erasureId: string; status: RequestedErasure['status'] };
    return { ...accepted, created: res.status === 202 };
  }

  /** One entry, with a read fence (410 key_destroyed or entry_forgotten once erased). */
  get(entryId: string): Promise<EntryRead> {
    return this.#calls.json<EntryRead>('writer', 'GET', `/v1/entries/${seg(entryId)}`);
  }

  /** One page of the subject's entries, in append order. */
  page(subject: string, options: PageOptions = {}): Promise<EntryPage> {
    return this.#calls.json<EntryPage>('writer', 'GET', `/v1/subjects/${seg(subject)}/entries${query({ limit: options.limit, cursor: options.cursor })}`);
  }

  /** Every page of the subject's entries, following `nextCursor` (each page with its read fence). */
  pages(subject: string, options: ListOptions = {}): AsyncGenerator<EntryPage> {
    return followPages((cursor) => this.page(subject, withCursor(options, cursor)));
  }

  /** A store item's live entries (those appended with that `item`), newest first: one lookup on the service, whatever the subject holds. */
  async lookup(subject: string, namespace: readonly string[], key: string): Promise<Entry[]> {
    return (await this.#calls.json<{ entries: Entry[] }>('writer', 'POST', `/v1/subjects/${seg(subject)}/items/lookup`, { body: { namespace, key } })).entries;
  }

  /** A subject's store items filtered and paged on the service: ranked by `query` (`score`: the best entry's), else newest first. */
  async searchItems(subject: string, options: ItemSearchOptions = {}): Promise<Array<{ entries: Entry[]; score?: number }>> {
    return (
      await this.#calls.json<{ items: Array<{ entries: Entry[]; score?: number }> }>('writer', 'POST', `/v1/subjects/${seg(subject)}/items/search`, {
        body: options,
      })
    ).items;
  }

  /** One live entry of each store namespace in use — of `subject`, or of every subject — page after page. */
  async *namespaceEntries(options: { readonly subject?: string } = {}): AsyncGenerator<Entry> {
    for (let offset = 0; ; offset += NAMESPACE_PAGE) {
      const { entries } = await this.#calls.json<{ entries: Entry[] }>(
        'writer',
        'GET',
        `/v1/items/namespaces${query({ subject: options.subject, limit: NAMESPACE_PAGE, offset })}`,
      );
      yield* entries;
      if (entries.length < NAMESPACE_PAGE) return;
    }
  }

  /** Every entry of the subject, page after page: `for await (const e of lethe.entries.list('user:42'))`. */
  async *list(subject: string, options: ListOptions = {}): AsyncGenerator<Entry> {
    for await (const page of this.pages(subject, options)) yield* page.entries;
  }
}

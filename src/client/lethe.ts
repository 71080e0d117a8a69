/**
 * `Lethe`: the whole API of a lethe service in one object, over `ServiceClient`
 * (http.ts): entries (service appends, reads, lists followed page by page), scoped
 * search, derived artifacts with read fences, erasures (a subject, or single memories),
 * certificates (downloaded and verified against the vault's keys), subject keys and
 * their leases, reinstating an erased subject, backups, and `writer()` for the writer
 * that seals locally (writer.ts).
 *
 * ```ts
 * const lethe = new Lethe({ baseUrl: 'http://127.0.0.1:8787', token });
 * const { entryId } = await lethe.entries.append('user:42', { text: 'prefers window seats' });
 * const { hits } = await lethe.search('window seat', { subject: 'user:42' });
 * const { erasureId } = await lethe.erase('user:42');
 * const erasure = await lethe.erasures.wait(erasureId);
 * ```
 *
 * Each call goes out with the token of the role its route needs (`tokens`), else
 * `token`, else `tokens.admin`; errors are LetheErrors (`ServiceError` with the
 * service's code, status and detail; `UnreachableError`), never carrying the token.
 */
import type { ErasureRequest } from '../erasure/request.js';
import type { ObjectStore } from '../storage/store.js';
import { Certificates } from './certificates.js';
import { Erasures, type RecordsErasureRequest, type RequestedErasure } from './erasures.js';
import type { Provenance, Regeneration, SearchHit, SearchResult } from '../wire/artifacts.js';
import type { Backup } from '../wire/backups.js';
import type { Entry, Superseded, SupersededMany } from '../wire/log.js';
import { newIdempotencyKey, type RetryOptions, retryPolicy, withRetries } from './retry.js';
import { followPages, type PageOptions, query, RoleCalls, type RoleTokens, seg } from './roles.js';
import { Subjects } from './subjects.js';
import { LetheWriter, type WriterOptions } from './writer.js';

import type { Fetch, TlsOptions } from './http.js';

export { KEY_BATCH_MAX_SUBJECTS, type KeyBatch, type KeyBatchItem, type KeyLease, Subjects } from './subjects.js';

export interface LetheOptions {
  /** The service, e.g. http://127.0.0.1:8787 */
  readonly baseUrl: string;
  /** A bearer token for every call (an admin token may call every route). */
  readonly token?: string;
  /** Tokens per role, for the routes of that role (writer, eraser, backup, admin); `token` fills the gaps. */
  readonly tokens?: RoleTokens;
  /** Give up on a call after this long (default 30 s; event streams excepted). */
  readonly timeoutMs?: number;
  /** An HTTPS service's CA, and a client certificate when it requires one (needs the `undici` package). */
  readonly tls?: TlsOptions;
  /** What sends the requests instead of node:http(s) (and of `tls`'s undici fetch): e.g. the service's own app, in process. */
  readonly fetch?: Fetch;
  /**
   * How appends, leases and key creations retry a retryable 409 (the subject's key fenced
   * for a moment while a forget re-keys it): default 6 attempts, 100 ms doubling to at
   * most 2 s (retry.ts). Writers made by `writer()` use it too unless given their own.
   */
  readonly retry?: RetryOptions;
}

/** An entry as the service reads it back (the wire type: src/http/wire/log.ts). */
export type { Entry };

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

export type { ItemSearchOptions, SearchMode, SearchOptions, SearchScope } from './search-options.js';
import type { ItemSearchOptions, SearchOptions, SearchScope } from './search-options.js';

/** A search hit and a search's answer (the wire types: src/wire/artifacts.ts). */
export type { SearchHit, SearchResult };

export interface NewArtifact {
  readonly kind: 'summary' | 'fact' | 'digest';
  readonly text: string;
  /** The entries and artifacts it was derived from (at least one). */
  readonly sources: readonly string[];
  readonly generator?: string;
  /** The read fences of the reads it was made from: refused if anything read was erased meanwhile. */
  readonly readFences?: readonly string[];
}

export interface Artifact {
  readonly artifactId: string;
  readonly kind: string;
  readonly version: number;
  readonly text: string;
  readonly sources: string[];
  readonly generator: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly readFence: string;
}

/** An artifact as `GET /v1/artifacts` lists it: what it is, never its text (`get` reads that, with its read fence). */
export interface ArtifactListed {
  readonly artifactId: string;
  readonly kind: string;
  readonly version: number;
  readonly generator: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface ArtifactPage {
  readonly artifacts: ArtifactListed[];
  readonly nextCursor: string | null;
}

/** An artifact's provenance closure and what a regeneration rewrote (the wire types: src/wire/artifacts.ts). */
export type { Provenance, Regeneration };

/** A backup as GET /v1/backups lists it (the wire type: src/wire/backups.ts). */
export type { Backup };

export interface BackupPage {
  readonly backups: Backup[];
  readonly nextCursor: string | null;
}

type ListOptions = Omit<PageOptions, 'cursor'>;
const withCursor = <O extends object>(options: O, cursor: string | undefined): O & { cursor?: string } => ({
  ...options,
  ...(cursor !== undefined ? { cursor } : {}),
});

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
  async append(subject: string, entry: NewEntry, options: { readonly idempotencyKey?: string } = {}): Promise<AppendResult> {
    const key = options.idempotencyKey ?? newIdempotencyKey();
    const res = await withRetries(this.#retry, () =>
      this.#calls.request('writer', 'POST', `/v1/subjects/${seg(subject)}/entries`, { body: entry, headers: { 'idempotency-key': key } }),
    );
    const { entryId, keyId, seq } = (await res.json()) as AppendResult;
    return { entryId, keyId, seq, replayed: res.headers.get('idempotent-replayed') === 'true' };
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

/** Derived artifacts: they name their sources, and are regenerated when a source is erased. */
export class Artifacts {
  readonly #calls: RoleCalls;

  constructor(calls: RoleCalls) {
    this.#calls = calls;
  }

  /** Writes an artifact with its provenance; refused when a source is unknown, erased, or being erased, or a read fence was crossed. */
  create(artifact: NewArtifact): Promise<{ artifactId: string; version: number; subjects: number }> {
    return this.#calls.json('writer', 'POST', '/v1/artifacts', { body: artifact });
  }

  /** The current version, with a read fence (410 artifact_erased when no source survived). */
  get(artifactId: string): Promise<Artifact> {
    return this.#calls.json<Artifact>('writer', 'GET', `/v1/artifacts/${seg(artifactId)}`);
  }

  page(options: PageOptions = {}): Promise<ArtifactPage> {
    return this.#calls.json<ArtifactPage>('writer', 'GET', `/v1/artifacts${query({ limit: options.limit, cursor: options.cursor })}`);
  }

  pages(options: ListOptions = {}): AsyncGenerator<ArtifactPage> {
    return followPages((cursor) => this.page(withCursor(options, cursor)));
  }

  async *list(options: ListOptions = {}): AsyncGenerator<ArtifactListed> {
    for await (const page of this.pages(options)) yield* page.artifacts;
  }

  /** The transitive closure of its sources and how many subjects it reaches. */
  provenance(artifactId: string): Promise<Provenance> {
    return this.#calls.json<Provenance>('writer', 'GET', `/v1/artifacts/${seg(artifactId)}/provenance`);
  }

  /** Rewrites it (and everything above it) from the surviving sources, without `excluding`. */
  regenerate(artifactId: string, options: { readonly excluding?: readonly string[] } = {}): Promise<Regeneration> {
    return this.#calls.json<Regeneration>('writer', 'POST', `/v1/artifacts/${seg(artifactId)}/regenerate`, {
      body: options.excluding ? { excluding: options.excluding } : {},
    });
  }

  /** Records that these records went into a training corpus (an erasure of their subject becomes class C). */
  recordTrainingExposure(exposure: {
    readonly corpus: string;
    readonly model?: string;
    readonly ids: readonly string[];
  }): Promise<{ exposureId: string; records: number; subjects: number }> {
    return this.#calls.json('writer', 'POST', '/v1/training-exposures', { body: exposure });
  }
}

/** Backups (backup role). */
export class Backups {
  readonly #calls: RoleCalls;

  constructor(calls: RoleCalls) {
    this.#calls = calls;
  }

  /** Takes a backup (incremental) and answers once it is stored. */
  run(): Promise<{ backupId: string; objects: number; keys: number }> {
    return this.#calls.json('backup', 'POST', '/v1/backups', { timeoutMs: 3_600_000 });
  }

  page(options: PageOptions = {}): Promise<BackupPage> {
    return this.#calls.json<BackupPage>('backup', 'GET', `/v1/backups${query({ limit: options.limit, cursor: options.cursor })}`);
  }

  pages(options: ListOptions = {}): AsyncGenerator<BackupPage> {
    return followPages((cursor) => this.page(withCursor(options, cursor)));
  }

  async *list(options: ListOptions = {}): AsyncGenerator<Backup> {
    for await (const page of this.pages(options)) yield* page.backups;
  }

  /** The current version of a backup's manifest. */
  manifest(backupId: string): Promise<Record<string, unknown>> {
    return this.#calls.json('backup', 'GET', `/v1/backups/${seg(backupId)}/manifest`);
  }
}

export class Lethe {
  readonly baseUrl: string;
  readonly entries: Entries;
  readonly artifacts: Artifacts;
  readonly erasures: Erasures;
  readonly certificates: Certificates;
  readonly subjects: Subjects;
  readonly backups: Backups;
  readonly #calls: RoleCalls;
  readonly #retry: RetryOptions | undefined;

  constructor(options: LetheOptions) {
    this.#calls = new RoleCalls(options);
    this.#retry = options.retry;
    this.baseUrl = this.#calls.baseUrl;
    this.entries = new Entries(this.#calls, options.retry);
    this.artifacts = new Artifacts(this.#calls);
    this.erasures = new Erasures(this.#calls);
    this.certificates = new Certificates(this.#calls);
    this.subjects = new Subjects(this.#calls, options.retry);
    this.backups = new Backups(this.#calls);
  }

  /**
   * The nearest entries and artifacts of the named subjects (`{ subject }`,
   * `{ subjects }`) or, for an admin token, of everyone (`{ allSubjects: true }`);
   * ranked by `mode`: hybrid (the default), vector or lexical; kept to memories of
   * `since`..`until` (ISO dates: of createdAt, or of the metadata field `timeField`).
   */
  search(text: string, scope: SearchScope & SearchOptions): Promise<SearchResult> {
    return this.#calls.json<SearchResult>('writer', 'POST', '/v1/search', { body: { query: text, ...scope } });
  }

  /** Erases a subject (`lethe.erase('user:42')`, or with a reason, legal basis …), or some of its entries (`{ subject, entryIds }`). */
  erase(request: string | ErasureRequest | RecordsErasureRequest): Promise<RequestedErasure> {
    return this.erasures.request(typeof request === 'string' ? { subject: request } : request);
  }

  /** Forgets one memory (`DELETE /v1/entries/{entryId}`). */
  forget(entryId: string): Promise<RequestedErasure> {
    return this.erasures.forget(entryId);
  }

  /** A writer that seals entries in this process under leased keys and uploads them to `store` (the service's bucket). */
  writer(options: Omit<WriterOptions, 'baseUrl' | 'token'> & { readonly store: ObjectStore }): LetheWriter {
    return new LetheWriter({
      ...(this.#retry ? { retry: this.#retry } : {}),
      ...options,
      baseUrl: this.baseUrl,
      token: this.#calls.tokenFor('writer'),
      ...(this.#calls.tls ? { tls: this.#calls.tls } : {}),
    });
  }
}

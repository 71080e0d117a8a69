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
import type { Entry } from '../wire/log.js';
import type { RetryOptions } from './retry.js';
import { Entries } from './entries.js';
import { followPages, type ListOptions, type PageOptions, query, RoleCalls, type RoleTokens, seg, withCursor } from './roles.js';
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
export { type AppendResult, Entries, type EntryPage, type EntryRead, type NewEntry } from './entries.js';

export type { ItemSearchOptions, SearchMode, SearchOptions, SearchScope } from './search-options.js';
import type { SearchOptions, SearchScope } from './search-options.js';

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

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
import { fromBase64Url } from '../crypto/index.js';
import type { ErasureRequest } from '../erasure/request.js';
import type { ObjectStore } from '../storage/store.js';
import { Certificates } from './certificates.js';
import { Erasures, type RecordsErasureRequest, type RequestedErasure } from './erasures.js';
import { LetheError } from '../errors.js';
import type { Provenance, Regeneration, SearchHit, SearchResult } from '../wire/artifacts.js';
import type { Backup } from '../wire/backups.js';
import type { KeyLeaseAnswer, KeyValidity, KeyValidityState, SubjectKey } from '../wire/keys.js';
import type { Entry } from '../wire/log.js';
import { followPages, type PageOptions, query, RoleCalls, type RoleTokens, seg } from './roles.js';
import { LetheWriter, type WriterOptions } from './writer.js';
import type { TlsOptions } from './http.js';

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

export interface NewEntry {
  readonly text: string;
  readonly kind?: string;
  readonly metadata?: Record<string, unknown>;
}

export interface AppendResult {
  readonly entryId: string;
  readonly keyId: string;
  readonly seq: number;
  /** True when an `idempotencyKey` retry answered an earlier append's result (nothing stored). */
  readonly replayed: boolean;
}

/** Whose records a search may return: exactly one of the three. */
export type SearchScope = { readonly subject: string } | { readonly subjects: readonly string[] } | { readonly allSubjects: true };

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

/** A lease as the wire has it (src/wire/keys.ts), its DEK decoded. */
export type KeyLease = Readonly<Omit<KeyLeaseAnswer, 'dek'>> & {
  /** The 32-byte DEK: zero it when done (`zeroize`). */
  readonly dek: Uint8Array;
};

/** What POST /v1/keys/batch answers for one subject (`ensureKeys`), in the order asked. */
export type KeyBatchItem =
  | { readonly subject: string; readonly status: 'created' | 'existing'; readonly keyId: string; readonly createdAt: string }
  | {
      readonly subject: string;
      readonly status: 'refused';
      /** Why: 410 `subject_erased`, 409 `erasure_in_progress` (an erasure open, or the key fenced). */
      readonly problem: { readonly code: string; readonly status: number; readonly title: string; readonly detail: string; readonly type: string };
    };

export interface KeyBatch {
  readonly created: number;
  readonly existing: number;
  readonly refused: number;
  readonly keys: readonly KeyBatchItem[];
}

/** At most this many subjects in one POST /v1/keys/batch (`ensureKeys` sends more in several). */
export const KEY_BATCH_MAX_SUBJECTS = 10_000;

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

  constructor(calls: RoleCalls) {
    this.#calls = calls;
  }

  /**
   * Appends through the service, which seals the entry under the subject's key. With
   * an `idempotencyKey`, a retry with the same key and entry stores nothing and
   * answers the first result (`replayed`). To keep plaintext off the network, use
   * `lethe.writer()` instead.
   */
  async append(subject: string, entry: NewEntry, options: { readonly idempotencyKey?: string } = {}): Promise<AppendResult> {
    const res = await this.#calls.request('writer', 'POST', `/v1/subjects/${seg(subject)}/entries`, {
      body: entry,
      ...(options.idempotencyKey !== undefined ? { headers: { 'idempotency-key': options.idempotencyKey } } : {}),
    });
    const { entryId, keyId, seq } = (await res.json()) as AppendResult;
    return { entryId, keyId, seq, replayed: res.headers.get('idempotent-replayed') === 'true' };
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

/** Subject keys, their leases, and reinstating a subject after its erasure. */
export class Subjects {
  readonly #calls: RoleCalls;

  constructor(calls: RoleCalls) {
    this.#calls = calls;
  }

  /** Creates the subject's key, or answers the live one. */
  ensureKey(subject: string): Promise<SubjectKey> {
    return this.#calls.json('writer', 'PUT', `/v1/subjects/${seg(subject)}/key`);
  }

  /**
   * Creates keys for many subjects at once (imports): POST /v1/keys/batch, 10,000
   * subjects per request (more are sent in several requests, one after the other).
   * Idempotent: a subject with a live key answers it (`existing`); a refused subject
   * (erased, or being erased) answers its problem without failing the others. Subjects
   * must be distinct. Answers key ids, never DEKs.
   */
  async ensureKeys(subjects: readonly string[]): Promise<KeyBatch> {
    if (subjects.length === 0) throw new LetheError('validation_failed', 'subjects: at least one subject');
    const out = { created: 0, existing: 0, refused: 0, keys: [] as KeyBatchItem[] };
    for (let at = 0; at < subjects.length; at += KEY_BATCH_MAX_SUBJECTS) {
      const part = await this.#calls.json<KeyBatch>('writer', 'POST', '/v1/keys/batch', {
        body: { subjects: subjects.slice(at, at + KEY_BATCH_MAX_SUBJECTS) },
      });
      out.created += part.created;
      out.existing += part.existing;
      out.refused += part.refused;
      out.keys.push(...part.keys);
    }
    return out;
  }

  /** Leases the subject's DEK (the writer does this itself): zero `dek` when done, and release the lease. */
  async lease(subject: string): Promise<KeyLease> {
    const body = await this.#calls.json<KeyLeaseAnswer>('writer', 'POST', `/v1/subjects/${seg(subject)}/key/lease`);
    const dek = fromBase64Url(body.dek);
    if (!dek || dek.length !== 32) throw new LetheError('internal', 'the service returned a malformed lease');
    return { keyId: body.keyId, leaseId: body.leaseId, expiresAt: body.expiresAt, dek };
  }

  /** Ends a lease before it expires (idempotent), so an erasure need not wait for it. */
  releaseLease(subject: string, leaseId: string): Promise<void> {
    return this.#calls.delete('writer', `/v1/subjects/${seg(subject)}/key/lease/${seg(leaseId)}`);
  }

  /** Admin: lets an erased subject be written again (audited); 409 conflict when it is not erased. */
  reinstate(subject: string, reason: string): Promise<{ subject: string; reinstated: true }> {
    return this.#calls.json('admin', 'POST', `/v1/subjects/${seg(subject)}/reinstate`, { body: { reason } });
  }

  /** Backup role: the state of each key id (active, destruction_pending, destroyed, unknown). */
  async validity(keyIds: readonly string[]): Promise<Record<string, KeyValidityState>> {
    return (await this.#calls.json<KeyValidity>('backup', 'POST', '/v1/keys/validity', { body: { keyIds } })).keys;
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

  constructor(options: LetheOptions) {
    this.#calls = new RoleCalls(options);
    this.baseUrl = this.#calls.baseUrl;
    this.entries = new Entries(this.#calls);
    this.artifacts = new Artifacts(this.#calls);
    this.erasures = new Erasures(this.#calls);
    this.certificates = new Certificates(this.#calls);
    this.subjects = new Subjects(this.#calls);
    this.backups = new Backups(this.#calls);
  }

  /**
   * The nearest entries and artifacts of the named subjects (`{ subject }`,
   * `{ subjects }`) or, for an admin token, of everyone (`{ allSubjects: true }`).
   */
  search(text: string, scope: SearchScope & { readonly k?: number }): Promise<SearchResult> {
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
    return new LetheWriter({ ...options, baseUrl: this.baseUrl, token: this.#calls.tokenFor('writer'), ...(this.#calls.tls ? { tls: this.#calls.tls } : {}) });
  }
}

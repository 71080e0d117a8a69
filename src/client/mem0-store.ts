/**
 * Mem0's vector store on lethe (`mem0ai/oss`'s `VectorStore` interface, matched by shape:
 * the client does not depend on mem0ai). Each memory is one entry of its person's subject:
 * its text is the entry's text, and Mem0's payload and embedding travel in the entry's
 * sealed metadata (`mem0`), so they die with the subject's key. The entry names the store
 * item `['mem0', collection]` / Mem0's id, so one lookup finds it.
 *
 * lethe indexes memories per subject and never across people, so a memory's id names its
 * subject: `<subject>/<Mem0's uuid>` (`createLetheMemory` hands these ids out). Search ranks
 * the subject's memories of the collection by cosine against Mem0's query vector, each
 * stored as int8 with its scale (a 1536-dimension vector in about 2 KiB of the 16 KiB of
 * metadata an entry may carry).
 */
import { LetheError } from '../errors.js';
import { IDEMPOTENCY_KEY_PATTERN, SUBJECT_ID_PATTERN } from '../ids.js';
import { MAX_METADATA_BYTES } from '../log/payload.js';
import type { Entry } from '../wire/log.js';
import { ServiceError } from './http.js';
import type { Lethe } from './lethe.js';
import { type Mem0Filters, passesMem0Filters } from './mem0-filters.js';

/** Who a memory is about, as Mem0 scopes it. */
export interface Mem0Scope {
  readonly user_id?: string;
  readonly agent_id?: string;
  readonly run_id?: string;
}

/** What a Mem0 vector store answers (mem0ai's `VectorStoreResult`). */
export interface Mem0VectorResult {
  id: string;
  payload: Record<string, unknown>;
  score?: number;
}

/** The store's configuration: Mem0's `vectorStore.config` with provider 'lethe'. */
export interface LetheVectorStoreConfig {
  /** The lethe client (writer token: appends, reads, supersedes, forgets what it wrote). */
  readonly client: Lethe;
  readonly collectionName?: string;
  readonly dimension?: number;
  /** The subject a memory of this scope belongs to; by default its user_id, which Mem0 calls userId. */
  readonly subjectOf?: (scope: Mem0Scope) => string;
}

/** The item namespace of a collection's memories. */
const NAMESPACE = 'mem0';
/** Payload fields not stored: the text is the entry's own; its lemmatized copy serves only a keyword search, which this store does not offer. */
const NOT_STORED = new Set(['data', 'textLemmatized']);

/** What an entry's metadata holds for Mem0. */
interface Stored {
  readonly collection: string;
  readonly id: string;
  readonly payload: Record<string, unknown>;
  readonly vector: { readonly int8: string; readonly scale: number };
}

/** The default subject: the memory's user_id, which must be a lethe subject id. */
export function userSubject(scope: Mem0Scope): string {
  if (scope.user_id === undefined)
    throw new LetheError('validation_failed', "lethe keeps a person's memories under their own key: give userId (or configure subjectOf for agentId/runId)");
  return scope.user_id;
}

/** `<subject>/<Mem0's id>`: the id Mem0's users see. */
export function memoryId(subject: string, key: string): string {
  return `${subject}/${key}`;
}

/** A memory id's subject and Mem0 key. */
export function parseMemoryId(id: string): { subject: string; key: string } {
  const slash = id.lastIndexOf('/');
  const subject = id.slice(0, slash);
  if (slash <= 0 || slash === id.length - 1 || !SUBJECT_ID_PATTERN.test(subject))
    throw new LetheError('validation_failed', `"${id.slice(0, 80)}" is not a lethe memory id (<subject>/<id>, as createLetheMemory's add answers)`);
  return { subject, key: id.slice(slash + 1) };
}

/** int8 with its scale: the stored form of an embedding. */
function quantize(vector: readonly number[]): Stored['vector'] {
  let max = 0;
  for (const x of vector) max = Math.max(max, Math.abs(x));
  const scale = max === 0 ? 1 : max / 127;
  const q = Int8Array.from(vector, (x) => Math.round(x / scale));
  return { int8: Buffer.from(q.buffer).toString('base64'), scale };
}

function cosine(query: readonly number[], stored: Stored['vector']): number {
  const q = new Int8Array(Buffer.from(stored.int8, 'base64'));
  if (q.length !== query.length) return 0;
  let dot = 0;
  let qq = 0;
  let ss = 0;
  for (let i = 0; i < q.length; i++) {
    const s = q[i]! * stored.scale;
    dot += query[i]! * s;
    qq += query[i]! * query[i]!;
    ss += s * s;
  }
  return qq === 0 || ss === 0 ? 0 : dot / Math.sqrt(qq * ss);
}

/** A subject lethe never saw, or no longer readable (erased, its key destroyed): nothing of it is there. */
function gone(e: unknown): boolean {
  return e instanceof ServiceError && (e.code === 'subject_erased' || e.code === 'key_destroyed' || (e.code === 'not_found' && e.status === 404));
}

/** Mem0's entity store (`<collection>_entities`): its records link the memories they were extracted from. */
const isEntityCollection = (collection: string) => collection.endsWith('_entities');

export class LetheVectorStore {
  readonly #lethe: Lethe;
  readonly #collection: string;
  readonly #dimension: number | undefined;
  readonly #subjectOf: (scope: Mem0Scope) => string;
  /** The erasure each forgotten memory's delete started, by memory id. */
  readonly #erasures = new Map<string, string>();
  #userId = 'anonymous';

  constructor(config: LetheVectorStoreConfig) {
    if (typeof config.client?.entries?.append !== 'function')
      throw new LetheError('validation_failed', "Mem0's lethe vector store needs the lethe client as vectorStore.config.client");
    this.#lethe = config.client;
    this.#collection = config.collectionName ?? 'memories';
    this.#dimension = config.dimension;
    this.#subjectOf = config.subjectOf ?? userSubject;
  }

  /** The erasure that forgot this memory (after `delete`). */
  erasureOf(id: string): string | undefined {
    return this.#erasures.get(id);
  }

  async initialize(): Promise<void> {}

  async insert(vectors: number[][], ids: string[], payloads: Record<string, unknown>[]): Promise<void> {
    if (ids.length !== vectors.length || payloads.length !== vectors.length)
      throw new LetheError('validation_failed', 'insert: one id and one payload per vector');
    for (let i = 0; i < vectors.length; i++) {
      const subject = this.#subject(payloads[i]!);
      const key = ids[i]!.includes('/') ? parseMemoryId(ids[i]!).key : ids[i]!;
      // Mem0 retries a failed batch one record at a time: a retried record is stored once
      const retry = `mem0:${key}`;
      await this.#lethe.entries.append(
        subject,
        this.#entry(subject, key, vectors[i]!, payloads[i]!),
        IDEMPOTENCY_KEY_PATTERN.test(retry) ? { idempotencyKey: retry } : {},
      );
    }
  }

  async search(query: number[], topK = 5, filters?: Mem0Filters): Promise<Mem0VectorResult[]> {
    this.#checkDimension(query);
    const subject = this.#subject(filters ?? {});
    const ranked = (await this.#memories(subject, filters)).map(({ stored, result }) => ({ ...result, score: cosine(query, stored.vector) }));
    return ranked.sort((a, b) => b.score - a.score).slice(0, topK);
  }

  /** Mem0's keyword boost: not offered (lethe's scores are not BM25's scale Mem0 normalizes). */
  async keywordSearch(): Promise<null> {
    return null;
  }

  async get(vectorId: string): Promise<Mem0VectorResult | null> {
    const found = await this.#live(vectorId);
    return found[0] ? this.#result(found[0].subject, found[0].entry, found[0].stored) : null;
  }

  async update(vectorId: string, vector: number[], payload: Record<string, unknown>): Promise<void> {
    const { subject, key } = parseMemoryId(vectorId);
    const [current] = await this.#live(vectorId);
    if (!current) throw new LetheError('not_found', `no memory ${vectorId}`);
    await this.#lethe.entries.supersede(subject, current.entry.entryId, this.#entry(subject, key, vector, payload));
  }

  /** Forgets the memory: a records-scope erasure of its entries (with the writer's token: the memories it wrote). */
  async delete(vectorId: string): Promise<void> {
    for (const { entry } of await this.#live(vectorId)) {
      const { erasureId } = await this.#lethe.entries.forget(entry.entryId);
      this.#erasures.set(vectorId, erasureId);
    }
  }

  async deleteCol(): Promise<void> {
    throw new LetheError(
      'validation_failed',
      "lethe erases one person at a time, with a certificate: use deleteAll({ userId }) (Mem0's reset() would drop everyone's memories)",
    );
  }

  async list(filters?: Mem0Filters, topK = 100): Promise<[Mem0VectorResult[], number]> {
    const all = await this.#memories(this.#subject(filters ?? {}), filters);
    return [all.slice(0, topK).map((m) => m.result), all.length];
  }

  async getUserId(): Promise<string> {
    return this.#userId;
  }

  async setUserId(userId: string): Promise<void> {
    this.#userId = userId;
  }

  #subject(scope: Mem0Scope | Mem0Filters): string {
    const subject = this.#subjectOf(scope as Mem0Scope);
    if (!SUBJECT_ID_PATTERN.test(subject))
      throw new LetheError(
        'validation_failed',
        `"${subject.slice(0, 80)}" is not a lethe subject id (1-200 of A-Z a-z 0-9 . _ : @ + -): map it with subjectOf`,
      );
    return subject;
  }

  #checkDimension(vector: readonly number[]): void {
    if (this.#dimension !== undefined && vector.length !== this.#dimension)
      throw new LetheError('validation_failed', `a ${vector.length}-dimension vector in a ${this.#dimension}-dimension collection`);
  }

  #entry(subject: string, key: string, vector: number[], payload: Record<string, unknown>) {
    this.#checkDimension(vector);
    if (typeof payload.data !== 'string' || payload.data === '') throw new LetheError('validation_failed', 'a memory needs its text (payload.data)');
    const kept = Object.fromEntries(Object.entries(payload).filter(([k, v]) => !NOT_STORED.has(k) && v !== undefined));
    // an entity's links name memories of its own subject: kept as Mem0's bare ids (the subject is the entry's)
    if (isEntityCollection(this.#collection) && Array.isArray(kept.linkedMemoryIds))
      kept.linkedMemoryIds = kept.linkedMemoryIds.map((id) => (String(id).startsWith(`${subject}/`) ? String(id).slice(subject.length + 1) : id));
    const stored: Stored = { collection: this.#collection, id: key, payload: kept, vector: quantize(vector) };
    const metadata = { mem0: stored };
    const bytes = Buffer.byteLength(JSON.stringify(metadata));
    if (bytes > MAX_METADATA_BYTES) {
      const vectorBytes = stored.vector.int8.length;
      throw new LetheError(
        'validation_failed',
        `memory ${memoryId(subject, key)} does not fit one lethe entry: Mem0's payload and its ${vector.length}-dimension vector take ${bytes} bytes of metadata (the vector ${vectorBytes}), at most ${MAX_METADATA_BYTES}: keep less metadata with it`,
      );
    }
    return { text: payload.data, kind: NAMESPACE, metadata, item: { namespace: [NAMESPACE, this.#collection], key } };
  }

  #result(subject: string, entry: Entry, stored: Stored): Mem0VectorResult {
    const payload: Record<string, unknown> = { ...stored.payload, data: entry.text };
    if (isEntityCollection(this.#collection) && Array.isArray(payload.linkedMemoryIds))
      payload.linkedMemoryIds = payload.linkedMemoryIds.map((id) => (String(id).includes('/') ? id : memoryId(subject, String(id))));
    return { id: memoryId(subject, stored.id), payload };
  }

  /** The collection's memories of the subject passing the filters, oldest first. */
  async #memories(subject: string, filters: Mem0Filters | undefined): Promise<Array<{ stored: Stored; result: Mem0VectorResult }>> {
    const out: Array<{ stored: Stored; result: Mem0VectorResult }> = [];
    try {
      for await (const entry of this.#lethe.entries.list(subject)) {
        const stored = this.#stored(entry);
        if (!stored) continue;
        const result = this.#result(subject, entry, stored);
        if (passesMem0Filters(result.payload, filters)) out.push({ stored, result });
      }
    } catch (e) {
      if (!gone(e)) throw e;
    }
    return out;
  }

  /** The memory's live entries, newest first (one, but for a racing update's). */
  async #live(vectorId: string): Promise<Array<{ subject: string; entry: Entry; stored: Stored }>> {
    const { subject, key } = parseMemoryId(vectorId);
    let entries: Entry[];
    try {
      entries = await this.#lethe.entries.lookup(subject, [NAMESPACE, this.#collection], key);
    } catch (e) {
      if (gone(e)) return [];
      throw e;
    }
    return entries.flatMap((entry) => {
      const stored = this.#stored(entry);
      return stored && stored.id === key ? [{ subject, entry, stored }] : [];
    });
  }

  #stored(entry: Entry): Stored | undefined {
    const m = entry.metadata?.mem0 as Stored | undefined;
    return m && m.collection === this.#collection && typeof m.id === 'string' && typeof m.vector?.int8 === 'string' ? m : undefined;
  }
}

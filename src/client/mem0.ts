/**
 * `@lethe/client/mem0`: Mem0's open-source `Memory` (`mem0ai/oss`) with lethe as its vector
 * store, so a Mem0 user keeps Mem0's API and gains a key per person and certificates:
 *
 *   import * as mem0 from 'mem0ai/oss';
 *   const memory = createLetheMemory(mem0, { lethe, config: { embedder, llm } });
 *
 * - `add(…, { userId })` stores each memory in that user's subject (mem0-store.ts), and
 *   answers ids that name it: `<subject>/<uuid>`; `search`, `getAll` are scoped to the user.
 * - `delete(id)` forgets the memory (a records-scope erasure, with a certificate): its
 *   answer adds the `erasureId`. `update(id, …)` supersedes it (the old text forgotten).
 * - `deleteAll({ userId })` is the user's erasure (eraser token): key destroyed, backups,
 *   derived data and probes handled by lethe, a signed certificate at the end; the answer
 *   adds `erasureId` and `status`. Narrowed by agentId or runId, each memory is forgotten.
 * - Mem0's history store is off: it would keep every past text in clear (SQLite) where no
 *   forget reaches it; `history(id)` answers []. `reset()` is refused: lethe erases one
 *   person at a time. Mem0's usage events (which name memory ids) are not sent.
 * - `subjectOf` maps a scope to its subject; deleteAll({ userId }) erases `subjectOf({ user_id })`,
 *   so it must map a user_id alone to that user's subject (agentId and runId may only narrow).
 *
 * The client does not depend on mem0ai: the caller passes its module (tested with 3.3.1).
 */
import { LetheError } from '../errors.js';
import { ServiceError } from './http.js';
import type { Lethe } from './lethe.js';
import { type LetheVectorStoreConfig, LetheVectorStore, type Mem0Scope, memoryId, userSubject } from './mem0-store.js';

export { type LetheVectorStoreConfig, LetheVectorStore, type Mem0Scope, type Mem0VectorResult, memoryId, parseMemoryId } from './mem0-store.js';

/** What this adapter uses of a Mem0 `Memory`. */
export interface Mem0MemoryLike {
  add(messages: never, config: Mem0AddOptions): Promise<{ results: ReadonlyArray<{ id: string }> }>;
  delete(memoryId: string): Promise<{ message: string }>;
  deleteAll(config: Mem0DeleteAllOptions): Promise<{ message: string }>;
  reset(): Promise<void>;
}

export interface Mem0AddOptions {
  readonly userId?: string;
  readonly agentId?: string;
  readonly runId?: string;
  readonly filters?: Mem0Scope & Record<string, unknown>;
  readonly [option: string]: unknown;
}

export interface Mem0DeleteAllOptions {
  readonly userId?: string;
  readonly agentId?: string;
  readonly runId?: string;
}

/** The parts of the `mem0ai/oss` module this adapter needs. */
export interface Mem0Module<M extends Mem0MemoryLike> {
  readonly Memory: new (config: never) => M;
  readonly VectorStoreFactory: { create(provider: string, config: Record<string, unknown>): unknown };
}

export interface LetheMemoryOptions {
  /** The lethe client: a writer token for memories, an eraser token for deleteAll. */
  readonly lethe: Lethe;
  /** Mem0's `collectionName` (default 'memories'): an item namespace in each subject. */
  readonly collectionName?: string;
  /** The embedding's dimension (else Mem0 probes its embedder). */
  readonly dimension?: number;
  /** The subject of a memory's scope (default: its userId, a lethe subject id such as user:42). */
  readonly subjectOf?: (scope: Mem0Scope) => string;
  /** Why a deleteAll erases (kept with the erasure; never personal data). */
  readonly eraseReason?: string;
  /** The rest of Mem0's configuration: embedder, llm, reranker, customInstructions, version. */
  readonly config?: Record<string, unknown>;
}

/** A Mem0 Memory on lethe: delete and deleteAll also answer the erasure they started. */
export type LetheMemory<M extends Mem0MemoryLike> = Omit<M, 'delete' | 'deleteAll'> & {
  delete(memoryId: string): Promise<{ message: string; erasureId?: string }>;
  deleteAll(config: Mem0DeleteAllOptions): Promise<{ message: string; erasureId?: string; status?: string }>;
};

const PROVIDER = 'lethe';
const REGISTERED = Symbol.for('lethe.mem0.vectorStore');
/** Mem0's own configuration keys this adapter sets, refused from the caller. */
const OWN_KEYS = ['vectorStore', 'historyStore', 'historyDbPath', 'disableHistory'];

/** Teaches Mem0's vector store factory the provider 'lethe' (once per module). */
function registerProvider(factory: Mem0Module<Mem0MemoryLike>['VectorStoreFactory']): void {
  const marked = factory as typeof factory & { [REGISTERED]?: true };
  if (marked[REGISTERED]) return;
  const create = factory.create.bind(factory);
  factory.create = (provider, config) =>
    provider.toLowerCase() === PROVIDER ? new LetheVectorStore(config as unknown as LetheVectorStoreConfig) : create(provider, config);
  marked[REGISTERED] = true;
}

/** Mem0's `Memory`, configured with lethe as its vector store and no history store. */
export function createLetheMemory<M extends Mem0MemoryLike>(mem0: Mem0Module<M>, options: LetheMemoryOptions): LetheMemory<M> {
  const config = options.config ?? {};
  const own = OWN_KEYS.filter((k) => k in config);
  if (own.length > 0)
    throw new LetheError(
      'validation_failed',
      `createLetheMemory sets ${own.join(', ')} itself (lethe is the vector store; Mem0's history would keep past texts in clear)`,
    );
  registerProvider(mem0.VectorStoreFactory);
  const subjectOf = options.subjectOf ?? userSubject;
  const configured = {
    ...config,
    vectorStore: {
      provider: PROVIDER,
      config: {
        client: options.lethe,
        collectionName: options.collectionName ?? 'memories',
        ...(options.dimension !== undefined ? { dimension: options.dimension } : {}),
        subjectOf,
      },
    },
    disableHistory: true,
  };
  const memory = new mem0.Memory(configured as never);
  const store = () => (memory as unknown as { vectorStore: LetheVectorStore }).vectorStore;

  const add = memory.add.bind(memory);
  const remove = memory.delete.bind(memory);
  const removeAll = memory.deleteAll.bind(memory);
  Object.assign(memory, {
    // Mem0's usage events name memory ids, and these name their subject: none is sent
    async _captureEvent() {},
    // Mem0 answers its own uuid for what it just added: the id its users keep names the subject
    async add(messages: never, addOptions: Mem0AddOptions) {
      const answer = await add(messages, addOptions);
      const trim = (v: unknown) => (typeof v === 'string' ? v.trim() : undefined);
      const scope = { ...(addOptions.filters ?? {}) } as Record<string, unknown>;
      for (const [field, option] of [
        ['user_id', addOptions.userId],
        ['agent_id', addOptions.agentId],
        ['run_id', addOptions.runId],
      ] as const) {
        const value = trim(option ?? scope[field]);
        if (value === undefined) delete scope[field];
        else scope[field] = value;
      }
      const subject = subjectOf(scope as Mem0Scope);
      const results = answer.results.map((r) => (r.id.includes('/') ? r : { ...r, id: memoryId(subject, r.id) }));
      // with inference Mem0 logs a record it failed to store and answers it added anyway: say so
      if (addOptions.infer !== false) {
        for (const r of answer.results) {
          if (r.id.includes('/') || (await store().get(memoryId(subject, r.id)))) continue;
          throw new LetheError('unavailable', `Mem0 answered it added memory ${memoryId(subject, r.id)}, but lethe holds no such memory (Mem0 logged why)`);
        }
      }
      return { ...answer, results };
    },
    async delete(id: string) {
      const answer = await remove(id);
      const erasureId = store().erasureOf(id);
      return { ...answer, ...(erasureId !== undefined ? { erasureId } : {}) };
    },
    async deleteAll(all: Mem0DeleteAllOptions) {
      if (all.userId === undefined || all.agentId !== undefined || all.runId !== undefined) return removeAll(all);
      const subject = subjectOf({ user_id: all.userId.trim() });
      try {
        const { erasureId, status } = await options.lethe.erase({ subject, ...(options.eraseReason !== undefined ? { reason: options.eraseReason } : {}) });
        return { message: 'Memories deleted successfully!', erasureId, status };
      } catch (e) {
        // a user lethe never saw has nothing to erase
        if (e instanceof ServiceError && e.status === 404 && e.code === 'not_found') return { message: 'Memories deleted successfully!' };
        throw e;
      }
    },
    async reset() {
      throw new LetheError(
        'validation_failed',
        "lethe erases one person at a time, with a certificate: use deleteAll({ userId }) (reset() would drop everyone's memories)",
      );
    },
  });
  return memory as unknown as LetheMemory<M>;
}

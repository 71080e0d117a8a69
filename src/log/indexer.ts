/**
 * The indexer: makes writer-registered entries searchable off the acknowledgement path.
 *
 * A registration (registration.ts) commits each entry's index row and a row in the
 * durable queue (`index_queue`) in one statement and answers; it never fetches the
 * segment. Workers in every replica drain the queue:
 *
 *   claim    up to BATCH rows, oldest first, with FOR UPDATE SKIP LOCKED, for
 *            CLAIM_SECONDS (a token of its own in `claimed_by`); a claim that lapses —
 *            its worker died or hung — is taken again by any replica;
 *   open     each segment fetched once, each frame opened under the key its row names
 *            (the record key unwrapped under the subject DEK) and held to the entry
 *            schema (payload.ts): a frame that does not open, or whose payload the
 *            schema refuses, is refused — quarantined (`log_entries.refused`), counted
 *            (`lethe_log_entries_refused_total`), logged by entry id and reason, never
 *            with plaintext — and never indexed nor served;
 *   embed    one embedder call per EMBED_CHUNK entries, keyed shingles, the record sealed
 *            under the entry's subject key (src/vectors);
 *   commit   one transaction: the claimed queue rows deleted — only while this claim
 *            still holds them and the entry is still under the key it was sealed with,
 *            that key taking a shared lock (a destruction is ordered against it) — and
 *            the sealed embeddings of exactly those rows inserted, with the replicas'
 *            notification; refused entries marked; what is left of the claim (the key
 *            moved by a re-key meanwhile) released to be taken again;
 *   publish  the committed records into this replica's indexes.
 *
 * Idempotent: a batch that dies anywhere before its commit leaves its rows queued (a
 * failed batch releases its claim — at once twice, then after a doubling backoff —, a dead worker's claim lapses) and the next claim
 * does the work again; the commit inserts an embedding only with the deletion of the
 * queue row it came from, so no entry is embedded into the store twice. A key
 * destroyed while its entries are queued takes their queue rows in its destruction
 * transaction (`dropQueuedUnder`, registered with KeyDestructions.within): a worker
 * holding them finds nothing to delete and inserts nothing.
 *
 * The façade over one file per operation, sharing one IndexerContext (indexer-types.ts)
 * that holds all the state: indexer-loop.ts (the workers), indexer-batch.ts (one batch:
 * claim, open, seal, publish), indexer-commit.ts (its transaction) and
 * indexer-queue.ts (the queue's lag, waiting for it, its rows in others' transactions).
 */
import { hostname } from 'node:os';
import { randomBytes, toBase64Url } from '../crypto/index.js';
import type { Transaction } from '../db/client.js';
import { runOnce } from './indexer-batch.js';
import { poke, start, stop } from './indexer-loop.js';
import { dropQueuedUnder, isQueued, mark, pendingUpTo, queuedOf, queueStatus, requeue, waitIndexed } from './indexer-queue.js';
import {
  BATCH,
  type BatchResult,
  CLAIM_SECONDS,
  CONCURRENCY,
  type IndexerContext,
  type IndexerDeps,
  type IndexerOptions,
  POLL_MS,
  type QueueStatus,
} from './indexer-types.js';

export { BATCH, CLAIM_SECONDS, CONCURRENCY, EMBED_CHUNK, FREE_RETRIES, MAX_BACKOFF_SECONDS, POLL_MS } from './indexer-types.js';
export type { BatchResult, IndexerDeps, IndexerOptions, QueueStatus, Refusal } from './indexer-types.js';

export class Indexer {
  readonly #c: IndexerContext;

  constructor(deps: IndexerDeps, options: IndexerOptions = {}) {
    this.#c = {
      d: deps,
      o: { batchSize: BATCH, claimSeconds: CLAIM_SECONDS, pollMs: POLL_MS, concurrency: CONCURRENCY, ...options },
      replica: `${hostname()}:${process.pid}:${toBase64Url(randomBytes(6))}`,
      claims: 0,
      running: false,
      loop: undefined,
      wakers: new Set(),
      woken: false,
      lastPassAt: undefined,
      publishing: new Set(),
    };
  }

  /** Whether this replica's worker runs, and when it last found the queue empty. */
  status(): { running: boolean; lastPassAt: Date | undefined } {
    return { running: this.#c.running, lastPassAt: this.#c.lastPassAt };
  }

  start = (): void => start(this.#c);
  stop = (): Promise<void> => stop(this.#c);
  poke = (): void => poke(this.#c);

  queueStatus = (): Promise<QueueStatus> => queueStatus(this.#c);
  mark = (): Promise<number> => mark(this.#c);
  isQueued = (entryId: string): Promise<boolean> => isQueued(this.#c, entryId);
  queuedOf = (subjectHashes: readonly Uint8Array[], limit: number, maxBytes: number): Promise<string[]> => queuedOf(this.#c, subjectHashes, limit, maxBytes);
  pendingUpTo = (mark: number, subjectHash?: Uint8Array): Promise<number> => pendingUpTo(this.#c, mark, subjectHash);
  waitIndexed = (options?: { timeoutMs?: number; subjectHash?: Uint8Array; mark?: number; drain?: boolean }): Promise<number> => waitIndexed(this.#c, options);
  runOnce = (): Promise<BatchResult> => runOnce(this.#c);

  requeue = (tx: Transaction, entryIds: readonly string[]): Promise<void> => requeue(tx, entryIds);
  dropQueuedUnder = (tx: Transaction, keyIds: readonly string[]): Promise<void> => dropQueuedUnder(tx, keyIds);
}

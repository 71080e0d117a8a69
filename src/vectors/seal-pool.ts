/**
 * The indexer's seal workers: batches of records embedded, shingled and sealed on
 * worker threads (seal-worker.ts, on thread-pool.ts), so that a replica's one thread
 * is left to its requests and to publishing. Started with the first batch; until its
 * workers are ready (under tsx they compile their modules first), and for good once
 * one fails, batches are sealed by the caller on its own thread instead (`seal`
 * answers undefined) — a failed worker is logged, never a failed batch.
 *
 * Keys: each batch's keys are packed into one buffer that is transferred to the
 * worker and zeroed there; the index key is copied to each worker once, at its start,
 * and wiped by it when the pool closes.
 */
import os from 'node:os';
import type { Logger } from '../observability/logger.js';
import { type SealJob, sealJob } from './seal-batch.js';
import type { SealWorkerData } from './seal-worker.js';
import { LetheError } from '../errors.js';
import { EMBED_CHUNK, type KeyedText, type Sealed, type Sealer, sealRecords } from './sealing.js';
import { siblingScript, ThreadPool } from './thread-pool.js';

/** Seal workers a replica starts by default: one fewer than its cores (its own thread publishes and serves), at most two. */
export const SEAL_WORKERS = Math.max(0, Math.min(2, os.availableParallelism() - 1));

export class SealPool {
  readonly workers: number;
  readonly #sealer: Sealer;
  readonly #logger: Logger | undefined;
  readonly #script: URL;
  #pool: ThreadPool<SealJob, Sealed[]> | undefined;
  #broken = false;

  constructor(workers: number, sealer: Sealer, options: { logger?: Logger; script?: URL } = {}) {
    this.workers = workers;
    this.#sealer = sealer;
    this.#logger = options.logger;
    this.#script = options.script ?? siblingScript(import.meta.url, 'seal-worker');
  }

  /** Whether batches go to the workers now (started by the first `seal`). */
  get isReady(): boolean {
    return !this.#broken && this.#pool?.isReady === true && !this.#pool.failed;
  }

  /** Resolves once the workers are ready (starting them); rejects if one fails first, or they could not start. */
  ready(): Promise<void> {
    return this.#start()?.ready ?? Promise.reject(new LetheError('internal', 'the seal workers could not start'));
  }

  /**
   * The records sealed on a worker; undefined while the workers warm up or after one
   * failed: the caller seals them on its own thread.
   */
  async seal(records: readonly KeyedText[]): Promise<Sealed[] | undefined> {
    if (this.#broken || records.length === 0) return undefined;
    const pool = this.#start();
    if (!pool?.isReady || pool.failed) return undefined;
    const { embedder } = this.#sealer;
    // a model's adapter embeds here (it may need this thread's network client), EMBED_CHUNK texts a call: the job carries the vectors
    const embedded: Float32Array[] | undefined = embedder.spec ? undefined : [];
    try {
      for (let i = 0; embedded && i < records.length; i += EMBED_CHUNK)
        embedded.push(...(await embedder.embed(records.slice(i, i + EMBED_CHUNK).map((r) => r.text))));
      const job = sealJob(records, embedded ? { of: embedded, dimensions: embedder.dimensions } : undefined);
      try {
        return await pool.run(job);
      } catch (e) {
        if (!pool.failed) throw e;
        this.#giveUp(e);
        // what was embedded already is sealed here rather than embedded again; otherwise the caller seals
        return embedded ? await sealRecords(this.#sealer, records, embedded) : undefined;
      }
    } finally {
      for (const v of embedded ?? []) v.fill(0);
    }
  }

  /** The pool, started on first use; undefined when it could not start (given up). */
  #start(): ThreadPool<SealJob, Sealed[]> | undefined {
    if (this.#pool || this.#broken) return this.#pool;
    const { embedder, shingles } = this.#sealer;
    const shingleKey = shingles.copyKey();
    const data: SealWorkerData = { spec: embedder.spec, model: embedder.model, dimensions: embedder.dimensions, shingleKey };
    try {
      this.#pool = new ThreadPool<SealJob, Sealed[]>(
        this.workers,
        this.#script,
        {
          name: 'seal worker',
          transfer: (job) => [job.keys.buffer as ArrayBuffer, ...(job.vectors ? [job.vectors.buffer as ArrayBuffer] : [])],
          refuse: (job) => {
            job.keys.fill(0);
            job.vectors?.fill(0);
          },
          discard: (out) => {
            for (const r of out) {
              r.vector.fill(0);
              r.shingles.fill(0);
            }
          },
        },
        { workerData: data, unref: true },
      );
    } catch (e) {
      this.#giveUp(e);
      return undefined;
    } finally {
      // each worker got its own copy as it started
      shingleKey.fill(0);
    }
    this.#pool.ready.catch((e: unknown) => this.#giveUp(e));
    return this.#pool;
  }

  #giveUp(e: unknown): void {
    if (this.#broken) return;
    this.#broken = true;
    this.#logger?.warn({ err: e instanceof Error ? e.message : String(e) }, 'a seal worker failed: the indexer seals on the service thread from now on');
    void this.#pool?.close();
  }

  async close(): Promise<void> {
    this.#broken = true;
    await this.#pool?.close();
  }
}

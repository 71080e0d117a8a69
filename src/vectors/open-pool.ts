/**
 * Who opens the rebuild's batches of sealed rows: a pool of worker threads
 * (open-worker.ts, on thread-pool.ts), one batch at a time each, or — for a small
 * rebuild — the calling thread, a batch per event-loop turn. A batch's keys and sealed
 * bytes are transferred to the worker (the caller's buffers are detached: no copy
 * stays behind) and zeroed there when it is done.
 *
 * A worker that fails (throws outside a batch, exits, cannot start) fails the pool:
 * every batch waiting on it, and every batch sent after, rejects with the error, and
 * the rebuild that owns the pool swaps nothing in.
 */
import { type OpenBatch, type OpenedBatch, openBatch } from './open-batch.js';
import { siblingScript, ThreadPool } from './thread-pool.js';

export interface Opener {
  /** Worker threads (0: the calling thread). */
  readonly workers: number;
  /** Resolves once every worker has warmed up (at once for the calling thread); rejects if one fails first. */
  readonly ready: Promise<void>;
  /** `ready` has resolved. */
  readonly isReady: boolean;
  open(batch: OpenBatch): Promise<OpenedBatch>;
  close(): Promise<void>;
}

/** `workers` threads running `script` (default: open-worker), or the calling thread when 0. */
export function openers(workers: number, script?: URL): Opener {
  return workers > 0 ? new WorkerOpeners(workers, script ?? siblingScript(import.meta.url, 'open-worker')) : new InThread();
}

class InThread implements Opener {
  readonly workers = 0;
  readonly ready = Promise.resolve();
  readonly isReady = true;

  async open(batch: OpenBatch): Promise<OpenedBatch> {
    // one batch per turn: requests run between them
    await new Promise((resolve) => setImmediate(resolve));
    return openBatch(batch);
  }

  async close(): Promise<void> {}
}

class WorkerOpeners implements Opener {
  readonly #pool: ThreadPool<OpenBatch, OpenedBatch>;

  constructor(workers: number, script: URL) {
    this.#pool = new ThreadPool<OpenBatch, OpenedBatch>(workers, script, {
      name: 'rebuild worker',
      // the keys and sealed bytes leave this thread (the worker zeroes the keys)
      transfer: (batch) => [batch.keys.buffer as ArrayBuffer, batch.sealed.buffer as ArrayBuffer],
      refuse: (batch) => batch.keys.fill(0),
      discard: (out) => {
        out.q.fill(0);
        out.scales.fill(0);
        out.shingles.fill(0);
      },
    });
  }

  get workers(): number {
    return this.#pool.workers;
  }

  get ready(): Promise<void> {
    return this.#pool.ready;
  }

  get isReady(): boolean {
    return this.#pool.isReady;
  }

  open(batch: OpenBatch): Promise<OpenedBatch> {
    return this.#pool.run(batch);
  }

  close(): Promise<void> {
    return this.#pool.close();
  }
}

/**
 * Who opens the rebuild's batches of sealed rows: a pool of worker threads
 * (open-worker.ts), one batch at a time each, or — for a small rebuild — the calling
 * thread, a batch per event-loop turn. A batch's keys and sealed bytes are transferred
 * to the worker (the caller's buffers are detached: no copy stays behind) and zeroed
 * there when it is done.
 *
 * A worker that fails (throws outside a batch, exits, cannot start) fails the pool:
 * every batch waiting on it, and every batch sent after, rejects with the error, and
 * the rebuild that owns the pool swaps nothing in.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { type ErrorCode, LetheError } from '../errors.js';
import { type OpenBatch, type OpenedBatch, openBatch } from './open-batch.js';

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
  return workers > 0 ? new WorkerPool(workers, script) : new InThread();
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

type Reply = { id: number; out: OpenedBatch } | { id: number; error: { code: ErrorCode; message: string } } | { ready: true };

interface Slot {
  readonly worker: Worker;
  busy: number;
}

class WorkerPool implements Opener {
  readonly workers: number;
  readonly ready: Promise<void>;
  isReady = false;
  #warm = 0;
  #readyNow: () => void = () => {};
  #notReady: (e: unknown) => void = () => {};
  readonly #slots: Slot[] = [];
  readonly #pending = new Map<number, { resolve: (out: OpenedBatch) => void; reject: (e: unknown) => void; slot: Slot }>();
  #next = 0;
  #failed: LetheError | undefined;
  #closed = false;

  constructor(workers: number, script?: URL) {
    this.workers = workers;
    this.ready = new Promise<void>((resolve, reject) => {
      this.#readyNow = resolve;
      this.#notReady = reject;
    });
    // a rebuild that never waits for it must not leave a rejection unhandled
    this.ready.catch(() => {});
    for (let i = 0; i < workers; i++) {
      const worker = spawn(script);
      const slot: Slot = { worker, busy: 0 };
      worker.on('message', (reply: Reply) => this.#reply(reply));
      worker.on('error', (e) => this.#fail(new LetheError('internal', `a rebuild worker failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e })));
      worker.on('exit', (code) => {
        if (!this.#closed) this.#fail(new LetheError('internal', `a rebuild worker exited (code ${code})`));
      });
      this.#slots.push(slot);
    }
  }

  open(batch: OpenBatch): Promise<OpenedBatch> {
    if (this.#failed || this.#closed) {
      batch.keys.fill(0);
      return Promise.reject(this.#failed ?? new LetheError('internal', 'the rebuild workers are closed'));
    }
    const slot = this.#slots.reduce((a, b) => (b.busy < a.busy ? b : a));
    const id = this.#next++;
    return new Promise<OpenedBatch>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, slot });
      slot.busy++;
      // transferred: the keys and sealed bytes leave this thread (the worker zeroes the keys)
      slot.worker.postMessage({ id, batch }, [batch.keys.buffer as ArrayBuffer, batch.sealed.buffer as ArrayBuffer]);
    });
  }

  #reply(reply: Reply): void {
    if ('ready' in reply) {
      if (++this.#warm === this.workers) {
        this.isReady = true;
        this.#readyNow();
      }
      return;
    }
    const p = this.#pending.get(reply.id);
    if (!p) {
      // its batch was given up (the pool failed meanwhile): nothing will read it
      if ('out' in reply) {
        reply.out.vectors.fill(0);
        reply.out.shingles.fill(0);
      }
      return;
    }
    this.#pending.delete(reply.id);
    p.slot.busy--;
    if ('error' in reply) p.reject(new LetheError(reply.error.code, reply.error.message));
    else p.resolve(reply.out);
  }

  #fail(e: LetheError): void {
    this.#failed ??= e;
    this.#notReady(this.#failed);
    for (const [id, p] of this.#pending) {
      this.#pending.delete(id);
      p.reject(this.#failed);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(this.#slots.map((s) => s.worker.terminate()));
    this.#fail(new LetheError('internal', 'the rebuild workers are closed'));
  }
}

/**
 * A worker running `script`, default the compiled open-worker.js beside this module.
 * Running from TypeScript sources (tsx, vitest), the worker registers tsx's loader
 * first: worker threads do not inherit it.
 */
function spawn(script?: URL): Worker {
  const fromSource = import.meta.url.endsWith('.ts');
  const target = script ?? new URL(fromSource ? './open-worker.ts' : './open-worker.js', import.meta.url);
  if (!target.pathname.endsWith('.ts')) return new Worker(target);
  const loader = tsxLoader();
  const bootstrap = `import(${JSON.stringify(loader)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(target.href)}); })`;
  return new Worker(bootstrap, { eval: true });
}

/** tsx's ESM API (a development dependency: only TypeScript sources need it). */
function tsxLoader(): string {
  const cjs = createRequire(import.meta.url).resolve('tsx/esm/api');
  return pathToFileURL(cjs.replace(/index\.cjs$/, 'index.mjs')).href;
}

/**
 * A pool of worker threads that each take one job at a time from this thread, and the
 * worker side of it (`serveJobs`): the rebuild's openers (open-pool.ts) and the
 * indexer's sealers (seal-pool.ts). A job's buffers named by `transfer` move to the
 * worker (detached here: no copy stays behind); an answer nobody will read any more
 * is wiped (`discard`).
 *
 * A worker that fails (throws outside a job, exits, cannot start) fails the pool:
 * every job waiting on it, and every job sent after, rejects with the error.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { parentPort, Worker } from 'node:worker_threads';
import { type ErrorCode, isLetheError, LetheError } from '../errors.js';

export interface PoolJobs<In, Out> {
  /** Names a worker in the pool's errors: "rebuild worker" (a rebuild worker failed, the rebuild workers are closed). */
  readonly name: string;
  /** The buffers that move to the worker with a job. */
  transfer(input: In): ArrayBuffer[];
  /** Wipes a job refused before it is sent (the pool failed or closed). */
  refuse(input: In): void;
  /** Wipes an answer that came back after its job was given up. */
  discard(output: Out): void;
}

/** How long a closing worker has to wipe its keys and end before it is terminated. */
const CLOSE_WAIT_MS = 1000;

type Reply<Out> = { id: number; out: Out } | { id: number; error: { code: ErrorCode; message: string } } | { ready: true };

interface Slot {
  readonly worker: Worker;
  busy: number;
  exited: boolean;
}

export class ThreadPool<In, Out> {
  readonly workers: number;
  /** Resolves once every worker has warmed up; rejects if one fails first. */
  readonly ready: Promise<void>;
  isReady = false;
  readonly #jobs: PoolJobs<In, Out>;
  #warm = 0;
  #readyNow: () => void = () => {};
  #notReady: (e: unknown) => void = () => {};
  readonly #slots: Slot[] = [];
  readonly #pending = new Map<number, { resolve: (out: Out) => void; reject: (e: unknown) => void; slot: Slot }>();
  #next = 0;
  #failed: LetheError | undefined;
  #closed = false;

  /**
   * `workers` threads running `script`, each started with `workerData` (copied into it).
   * `unref`: the workers do not keep the process alive (a pool its owner may forget to close).
   */
  constructor(workers: number, script: URL, jobs: PoolJobs<In, Out>, options: { workerData?: unknown; unref?: boolean } = {}) {
    this.workers = workers;
    this.#jobs = jobs;
    this.ready = new Promise<void>((resolve, reject) => {
      this.#readyNow = resolve;
      this.#notReady = reject;
    });
    // a caller that never waits for it must not leave a rejection unhandled
    this.ready.catch(() => {});
    try {
      for (let i = 0; i < workers; i++) this.#slots.push(this.#spawn(script, options));
    } catch (e) {
      // none left running behind a pool that never was
      this.#closed = true;
      for (const s of this.#slots) void s.worker.terminate();
      throw e;
    }
  }

  #spawn(script: URL, options: { workerData?: unknown; unref?: boolean }): Slot {
    const name = this.#jobs.name;
    const worker = spawnWorker(script, options.workerData);
    if (options.unref) worker.unref();
    const slot: Slot = { worker, busy: 0, exited: false };
    worker.on('message', (reply: Reply<Out>) => this.#reply(reply));
    worker.on('error', (e) => this.#fail(new LetheError('internal', `a ${name} failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e })));
    worker.on('exit', (code) => {
      slot.exited = true;
      if (!this.#closed) this.#fail(new LetheError('internal', `a ${name} exited (code ${code})`));
    });
    return slot;
  }

  /** Whether the pool failed or closed: every job sent now rejects. */
  get failed(): boolean {
    return this.#failed !== undefined || this.#closed;
  }

  run(input: In): Promise<Out> {
    if (this.failed) {
      this.#jobs.refuse(input);
      return Promise.reject(this.#failed ?? new LetheError('internal', `the ${this.#jobs.name}s are closed`));
    }
    const slot = this.#slots.reduce((a, b) => (b.busy < a.busy ? b : a));
    const id = this.#next++;
    return new Promise<Out>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, slot });
      slot.busy++;
      slot.worker.postMessage({ id, input }, this.#jobs.transfer(input));
    });
  }

  #reply(reply: Reply<Out>): void {
    if ('ready' in reply) {
      if (++this.#warm === this.workers) {
        this.isReady = true;
        this.#readyNow();
      }
      return;
    }
    const p = this.#pending.get(reply.id);
    if (!p) {
      // its job was given up (the pool failed meanwhile): nothing will read it
      if ('out' in reply) this.#jobs.discard(reply.out);
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

  /** Asks each worker to wipe its keys and end (ended after CLOSE_WAIT_MS if it does not). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all(
      this.#slots.map(async ({ worker, exited: gone }) => {
        if (gone) return;
        // held until it has ended: an unref'd worker would let the process exit while its owner is still closing
        worker.ref();
        const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
        worker.postMessage({ close: true });
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((resolve) => {
          timer = setTimeout(() => resolve('late'), CLOSE_WAIT_MS);
        });
        if ((await Promise.race([exited, late])) === 'late') await worker.terminate();
        clearTimeout(timer);
      }),
    );
    this.#fail(new LetheError('internal', `the ${this.#jobs.name}s are closed`));
  }
}

/**
 * The worker side: says it is ready, then answers each job with `handle`'s output
 * (its `transfer` buffers moved back, so no copy of them stays here). A job that
 * throws is answered by its error's code and message only (never key material or
 * plaintext), after `failed` wipes it. Asked to close, it runs `closing` (wiping its
 * own keys) and ends.
 */
export function serveJobs<In, Out>(handle: (input: In) => JobAnswer<Out> | Promise<JobAnswer<Out>>, failed: (input: In) => void, closing?: () => void): void {
  const port = parentPort;
  if (!port) throw new Error('a pool job script runs as a worker thread');
  port.on('message', async (message: { id: number; input: In } | { close: true }) => {
    if ('close' in message) {
      closing?.();
      process.exit(0);
    }
    try {
      const { out, transfer } = await handle(message.input);
      port.postMessage({ id: message.id, out }, transfer ?? []);
    } catch (e) {
      failed(message.input);
      port.postMessage({
        id: message.id,
        error: { code: isLetheError(e) ? e.code : 'internal', message: e instanceof Error ? e.message : 'a job failed' },
      });
    }
  });
  port.postMessage({ ready: true });
}

/** A job's answer: what is sent back, and the buffers moved with it. */
export interface JobAnswer<Out> {
  readonly out: Out;
  readonly transfer?: ArrayBuffer[];
}

/**
 * A worker running `script`. Running from TypeScript sources (tsx, vitest), the
 * worker registers tsx's loader first: worker threads do not inherit it.
 */
function spawnWorker(script: URL, workerData?: unknown): Worker {
  if (!script.pathname.endsWith('.ts')) return new Worker(script, { workerData });
  const loader = tsxLoader();
  const bootstrap = `import(${JSON.stringify(loader)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(script.href)}); })`;
  return new Worker(bootstrap, { eval: true, workerData });
}

/** A script beside `base` (an `import.meta.url`), compiled or, running from TypeScript sources, as it is. */
export function siblingScript(base: string, name: string): URL {
  return new URL(base.endsWith('.ts') ? `./${name}.ts` : `./${name}.js`, base);
}

/** tsx's ESM API (a development dependency: only TypeScript sources need it). */
function tsxLoader(): string {
  const cjs = createRequire(import.meta.url).resolve('tsx/esm/api');
  return pathToFileURL(cjs.replace(/index\.cjs$/, 'index.mjs')).href;
}

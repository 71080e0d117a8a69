/** The indexer's workers in this replica: started and stopped, woken by a registration, claiming batch after batch while there is work. */
import { describeError } from '../observability/logger.js';
import { runOnce } from './indexer-batch.js';
import type { IndexerContext } from './indexer-types.js';

/** Starts draining the queue in the background. */
export function start(c: IndexerContext): void {
  if (c.running) return;
  c.running = true;
  c.loop = Promise.all(Array.from({ length: c.o.concurrency }, () => run(c))).then(() => undefined);
}

export async function stop(c: IndexerContext): Promise<void> {
  c.running = false;
  poke(c);
  await c.loop;
  c.loop = undefined;
}

/** Work arrived (a registration on this replica committed): the worker looks now. */
export function poke(c: IndexerContext): void {
  c.woken = true;
  for (const wake of c.wakers) wake();
}

async function run(c: IndexerContext): Promise<void> {
  let failures = 0;
  while (c.running) {
    let claimed = 0;
    let progressed = false;
    try {
      const batch = await runOnce(c);
      claimed = batch.claimed;
      progressed = batch.indexed + batch.refused > 0 || batch.released < batch.claimed;
      failures = 0;
    } catch (e) {
      failures++;
      c.d.logger?.warn({ err: describeError(e), failures }, 'the search indexer could not index a batch; its entries stay queued and are claimed again');
    }
    if (!c.running) break;
    if (progressed) continue;
    if (claimed === 0) c.lastPassAt = new Date();
    await idle(c, failures > 0 ? Math.min(5000, 100 * 2 ** failures) : c.o.pollMs);
  }
}

/** Waits `ms`, or less when poked. */
async function idle(c: IndexerContext, ms: number): Promise<void> {
  if (c.woken) {
    c.woken = false;
    return;
  }
  let wake: () => void = () => {};
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => wake(), ms);
    wake = () => {
      clearTimeout(timer);
      resolve();
    };
    c.wakers.add(wake);
  });
  c.wakers.delete(wake);
  c.woken = false;
}

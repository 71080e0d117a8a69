/**
 * The group-commit queue (src/vault/batcher.ts) that leases and key creation share:
 * one batch in flight, what arrives meanwhile goes together in the next (up to its
 * size), each item answered by its own batch, a failed batch failing only its items.
 */
import { describe, expect, it } from 'vitest';
import { Batcher } from '../../src/vault/batcher.js';

/** A batch runner whose batches finish when the test says so. */
function gated() {
  const batches: number[][] = [];
  const gates: Array<(fail?: Error) => void> = [];
  const run = (batch: readonly { n: number }[]) => {
    batches.push(batch.map((b) => b.n));
    return new Promise<ReadonlyMap<{ n: number }, number>>((resolve, reject) => {
      gates.push((fail) => (fail ? reject(fail) : resolve(new Map(batch.map((b) => [b, b.n * 10])))));
    });
  };
  return { batches, gates, run };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('the group-commit batcher', () => {
  it('runs one batch at a time: what arrives while one runs goes together in the next, each item answered by its batch', async () => {
    const g = gated();
    const b = new Batcher(g.run, 100);
    const first = b.submit({ n: 1 });
    const more = [2, 3, 4].map((n) => b.submit({ n }));
    await tick();
    expect(g.batches).toEqual([[1]]);
    g.gates[0]!();
    expect(await first).toBe(10);
    await tick();
    expect(g.batches).toEqual([[1], [2, 3, 4]]);
    g.gates[1]!();
    expect(await Promise.all(more)).toEqual([20, 30, 40]);
  });

  it('cuts the queue into batches of at most its size', async () => {
    const g = gated();
    const b = new Batcher(g.run, 2);
    const all = [1, 2, 3, 4, 5].map((n) => b.submit({ n }));
    for (let i = 0; i < 3; i++) {
      await tick();
      g.gates[i]!();
    }
    expect(await Promise.all(all)).toEqual([10, 20, 30, 40, 50]);
    expect(g.batches).toEqual([[1], [2, 3], [4, 5]]);
  });

  it('a batch that fails rejects its own items only, and the queue goes on', async () => {
    const g = gated();
    const b = new Batcher(g.run, 100);
    const failing = [b.submit({ n: 1 })];
    const next = b.submit({ n: 2 });
    await tick();
    g.gates[0]!(new Error('the statement failed'));
    await expect(failing[0]).rejects.toThrow('the statement failed');
    await tick();
    g.gates[1]!();
    expect(await next).toBe(20);
  });

  it('a runner that throws synchronously rejects its batch instead of stalling the queue', async () => {
    let calls = 0;
    const b = new Batcher<{ n: number }, number>((batch) => {
      if (calls++ === 0) throw new Error('thrown before any promise');
      return Promise.resolve(new Map(batch.map((x) => [x, x.n])));
    }, 10);
    await expect(b.submit({ n: 1 })).rejects.toThrow('thrown before any promise');
    expect(await b.submit({ n: 2 })).toBe(2);
  });
});

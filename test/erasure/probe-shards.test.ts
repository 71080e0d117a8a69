/**
 * The sharded probe's coverage rule (steps/probe.ts, shardedCoverage): a shard with no
 * searchable owner parks the probe — uncounted while a live replica rebuilds it, but
 * for MAX_REBUILD_WAIT_MS at most (a rebuild that never ends must not park an erasure
 * for ever), counted MAX_SHARD_WAITS times otherwise — and it certifies only on every
 * shard's exact coverage.
 */
import { describe, expect, it } from 'vitest';
import { TierFailure } from '../../src/erasure/machine.js';
import type { ErasureState } from '../../src/erasure/state.js';
import { MAX_REBUILD_WAIT_MS, MAX_SHARD_WAITS, shardedCoverage } from '../../src/erasure/steps/probe.js';
import { Park } from '../../src/erasure/steps/step.js';

const res = { vectors: { coverage: async () => ({ queued: 0 }) } } as unknown as Parameters<typeof shardedCoverage>[0];
const fresh = () => ({ steps: {} }) as unknown as ErasureState;
const covered = [0, 1, 2].map((shard) => ({ shard, stored: 4, indexed: 4 }));

describe('the sharded probe waits for shards, within bounds', () => {
  it('parks uncounted while a live replica rebuilds the missing shards, and remembers since when', async () => {
    const state = fresh();
    const parked = await shardedCoverage(res, state, { count: 3, missing: [1], progressing: [1], coverage: covered.slice(0, 2) });
    expect(parked).toBeInstanceOf(Park);
    expect((parked as Park).detail).toContain('shard(s) 1 of 3');
    expect(state.shardWaits).toBeUndefined();
    expect(Date.parse(state.rebuildSince!)).toBeLessThanOrEqual(Date.now());
    // a later park keeps the first time
    const first = state.rebuildSince;
    await shardedCoverage(res, state, { count: 3, missing: [1], progressing: [1], coverage: covered.slice(0, 2) });
    expect(state.rebuildSince).toBe(first);
  });

  it('fails the erasure once the rebuild has run longer than MAX_REBUILD_WAIT_MS', async () => {
    const state = fresh();
    state.rebuildSince = new Date(Date.now() - MAX_REBUILD_WAIT_MS - 60_000).toISOString();
    await expect(shardedCoverage(res, state, { count: 3, missing: [2], progressing: [2], coverage: covered.slice(0, 2) })).rejects.toThrow(TierFailure);
    await expect(shardedCoverage(res, state, { count: 3, missing: [2], progressing: [2], coverage: covered.slice(0, 2) })).rejects.toThrow(
      /shard\(s\) 2 of 3 .*still rebuilding 31 minutes/,
    );
  });

  it('counts the waits for a shard no live replica rebuilds, and fails after MAX_SHARD_WAITS', async () => {
    const state = fresh();
    for (let i = 1; i <= MAX_SHARD_WAITS; i++) {
      const parked = await shardedCoverage(res, state, { count: 3, missing: [0, 1], progressing: [1], coverage: [covered[2]!] });
      expect(parked).toBeInstanceOf(Park);
      expect(state.shardWaits).toBe(i);
    }
    await expect(shardedCoverage(res, state, { count: 3, missing: [0, 1], progressing: [1], coverage: [covered[2]!] })).rejects.toThrow(
      `after ${MAX_SHARD_WAITS} waits`,
    );
  });

  it('answers the coverage once every shard answered with exact counts, forgetting the waits', async () => {
    const state = fresh();
    state.shardWaits = 3;
    state.rebuildSince = new Date().toISOString();
    const coverage = await shardedCoverage(res, state, { count: 3, missing: [], progressing: [], coverage: covered });
    expect(coverage).toEqual({ indexed: 12, stored: 12, queued: 0, rebuilding: false });
    expect(state.shardWaits).toBeUndefined();
    expect(state.rebuildSince).toBeUndefined();
  });

  it('parks while a shard holds other than its stored records', async () => {
    const state = fresh();
    const parked = await shardedCoverage(res, state, {
      count: 3,
      missing: [],
      progressing: [],
      coverage: [...covered.slice(0, 2), { shard: 2, stored: 4, indexed: 3 }],
    });
    expect(parked).toBeInstanceOf(Park);
    expect((parked as Park).detail).toContain('shard(s) 2 of 3');
    expect(state.indexWaits).toBe(1);
  });
});

/**
 * The sharded probe's coverage rule (steps/probe.ts, shardedCoverage): a shard with no
 * searchable owner parks the probe — uncounted while a live replica rebuilds it, but
 * for MAX_REBUILD_WAIT_MS at most (a rebuild that never ends must not park an erasure
 * for ever), counted MAX_SHARD_WAITS times otherwise — and it certifies only on every
 * shard's exact coverage. A resumed erasure's probe waits its whole bounds again.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TierFailure } from '../../src/erasure/machine.js';
import type { ErasureState } from '../../src/erasure/state.js';
import { MAX_REBUILD_WAIT_MS, MAX_SHARD_WAITS, shardedCoverage } from '../../src/erasure/steps/probe.js';
import { Park } from '../../src/erasure/steps/step.js';
import { openTestApp, type TestApp } from '../support/vault.js';

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

describe('a resumed erasure', () => {
  let t: TestApp;
  let sql: postgres.Sql;
  beforeAll(async () => {
    // no worker: the erasure stays where this test puts it
    t = await openTestApp({ app: { erasureWorker: false } });
    sql = postgres(t.db!.url, { max: 1, onnotice: () => {} });
  }, 60_000);
  afterAll(async () => {
    await sql?.end();
    await t?.close();
  });

  it('gives the probe its whole bounds again: a failure after the rebuild wait does not fail the resumed run at once', async () => {
    const res = await t.call('POST', '/v1/subjects/user:resumed/entries', { body: { text: 'a note to erase' } });
    expect(res.status).toBe(201);
    const { erasureId } = await t.app.erasures.request({ subject: 'user:resumed' }, 'eraser');
    // as the probe leaves it when it fails after the rebuild wait (steps/probe.ts)
    const long = new Date(Date.now() - MAX_REBUILD_WAIT_MS - 60_000).toISOString();
    await sql`update erasures set status = 'failed', step = null, last_error = 'shards still rebuilding',
                 state = state || ${sql.json({ indexWaits: 11, shardWaits: MAX_SHARD_WAITS + 1, rebuildSince: long })}::jsonb
                   || jsonb_build_object('steps', (state -> 'steps') || '{"probe": {"status": "failed"}}'::jsonb)
               where erasure_id = ${erasureId}`;
    const resumed = await t.call('POST', `/v1/erasures/${erasureId}/resume`, { role: 'eraser' });
    expect(resumed.status).toBe(202);
    const [row] = await sql<Array<{ status: string; step: string; state: Record<string, unknown> & { steps: Record<string, { status: string }> } }>>`
      select status, step, state from erasures where erasure_id = ${erasureId}`;
    expect(row).toMatchObject({ status: 'running', step: 'probe' });
    expect(row!.state.steps.probe).toEqual({ status: 'pending' });
    expect(row!.state).not.toHaveProperty('rebuildSince');
    expect(row!.state).not.toHaveProperty('shardWaits');
    expect(row!.state).not.toHaveProperty('indexWaits');
  });
});

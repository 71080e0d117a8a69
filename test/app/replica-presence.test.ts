/**
 * A replica answers from its in-memory indexes only when its destruction cursor read
 * the ledger within STALE_MS: one that was paused (or whose ledger reads failed)
 * catches up first, and refuses with `unavailable` when it cannot. Pure logic: the
 * cursor and the heartbeat table are in-memory fakes (the two-process test in
 * test/service/replica-agreement.test.ts covers the real ones).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ReplicaPresence, STALE_MS } from '../../src/app/replica.js';
import { isLetheError } from '../../src/errors.js';
import type { DestructionCursor } from '../../src/vault/catch-up.js';
import type { ReplicaHeartbeats } from '../../src/vault/replicas.js';

/** A pass that began `agoMs` before it was asked for (0: one that starts now). */
const passStarted = (agoMs = 0) => Date.now() - agoMs;

function presence(pass: () => Promise<number>) {
  const cursor = {
    applied: 0,
    lastPassStartedAt: undefined as number | undefined,
    catchUp: vi.fn(async () => {
      const startedAt = passStarted();
      const n = await pass();
      cursor.lastPassStartedAt = startedAt;
      return n;
    }),
  };
  const heartbeats = { beat: vi.fn(async () => {}), remove: vi.fn(async () => {}), forget: vi.fn(async () => 0) };
  const logger = { warn: vi.fn(), error: vi.fn(), info: vi.fn() };
  const p = new ReplicaPresence({
    replicaId: 'r1',
    cursor: cursor as unknown as DestructionCursor,
    heartbeats: heartbeats as unknown as ReplicaHeartbeats,
    listener: () => ({ state: 'up', since: new Date() }),
    rebuilding: () => false,
    logger: logger as never,
  });
  return { p, cursor, logger };
}

describe('ReplicaPresence.fresh', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('answers at once after a recent catch-up, and catches up first once the last one is older than STALE_MS', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { p, cursor } = presence(async () => 0);
    await p.catchUp();
    expect(cursor.catchUp).toHaveBeenCalledTimes(1);

    vi.setSystemTime(Date.now() + STALE_MS - 10);
    await p.fresh();
    expect(cursor.catchUp).toHaveBeenCalledTimes(1);

    // asleep past the bound (a SIGSTOP, a long GC pause): the next answer waits for a catch-up
    vi.setSystemTime(Date.now() + STALE_MS);
    await p.fresh();
    expect(cursor.catchUp).toHaveBeenCalledTimes(2);
  });

  it('a pass that was already in flight across a pause does not count: a new one starts', async () => {
    const { p, cursor } = presence(async () => 0);
    let joinedOld = true;
    cursor.catchUp.mockImplementation(async () => {
      // the first call joins a pass that began before the pause (its read predates the wake)
      cursor.lastPassStartedAt = joinedOld ? passStarted(10 * STALE_MS) : passStarted();
      joinedOld = false;
      return 0;
    });
    await p.fresh();
    expect(cursor.catchUp).toHaveBeenCalledTimes(2);
  });

  it('a replica that never caught up catches up before its first answer', async () => {
    const { p, cursor } = presence(async () => 0);
    await p.fresh();
    expect(cursor.catchUp).toHaveBeenCalledTimes(1);
  });

  it('refuses with unavailable when the ledger cannot be read, and logs the failures and nothing more', async () => {
    const { p, logger } = presence(async () => {
      throw Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' });
    });
    const refused = await p.fresh().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isLetheError(refused, 'unavailable')).toBe(true);
    expect((refused as Error).message).toContain('could not confirm it applied every key destruction');
    // two attempts (the second in case the first joined a pass from before a pause), one warning each
    expect(logger.warn).toHaveBeenCalledTimes(2);
  });
});

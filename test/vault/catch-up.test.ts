/**
 * The destruction cursor on a real PostgreSQL: a destruction that took its ledger
 * number and commits after a higher one is still applied (its number is a gap until
 * then, however long its transaction stays open — no timer gives it up), a number
 * whose transaction rolled back stops holding `applied` back once that transaction has
 * ended, and a destruction in flight when the cursor starts is a gap from the start.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Db, openDb } from '../../src/db/client.js';
import { DestructionCursor } from '../../src/vault/catch-up.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';

let db: TestDatabase;
let handle: Db;
let other: postgres.Sql;

beforeAll(async () => {
  db = await createTestDatabase('lethe_cursor');
  handle = await openDb({ databaseUrl: db.url, poolSize: 2 });
  await handle.migrate();
  other = postgres(db.url, { max: 4, onnotice: () => {} });
});
afterAll(async () => {
  await other?.end({ timeout: 1 });
  await handle?.close();
  await db?.drop();
});

/**
 * Catch-up passes until the cursor reaches `seq` (at most 30 s): a number that will never
 * commit is given up only once the oldest transaction running anywhere on the cluster
 * (the snapshot's xmin) is past it, and the suite's other files on the same PostgreSQL
 * may hold one open for a while.
 */
async function catchUpTo(cursor: DestructionCursor, seq: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  await cursor.catchUp();
  await cursor.catchUp();
  while (cursor.applied < seq && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    await cursor.catchUp();
  }
}

let n = 0;
const destroyed = (sql: postgres.Sql | postgres.TransactionSql) =>
  sql`insert into destruction_ledger (key_id, key_kind, destroyed_at, reason, wrapped_epoch)
      values (${`key_cursor_${++n}`}, 'subject', now(), 'cursor test', 1) returning key_id, seq`.then((r) => ({
    keyId: r[0]!.key_id as string,
    seq: Number(r[0]!.seq),
  }));

/** Runs `fn` inside a transaction held open until `release` resolves; answers what fn answered once it ran. */
function heldOpen<T>(fn: (tx: postgres.TransactionSql) => Promise<T>, release: Promise<'commit' | 'rollback'>) {
  let ran!: (v: T) => void;
  const started = new Promise<T>((r) => (ran = r));
  const done = other
    .begin(async (tx) => {
      ran(await fn(tx));
      if ((await release) === 'rollback') throw new Error('rolled back on purpose');
    })
    .catch((e: Error) => {
      if (e.message !== 'rolled back on purpose') throw e;
    });
  return { started, done };
}

describe('the destruction cursor', () => {
  it('a destruction that commits after a higher number is applied, however long it stays open', async () => {
    const applied: string[] = [];
    const cursor = new DestructionCursor({ db: handle.db, apply: (ids) => void applied.push(...ids) });
    await cursor.start();

    let release!: (how: 'commit' | 'rollback') => void;
    const slow = heldOpen(destroyed, new Promise((r) => (release = r)));
    const low = await slow.started;
    const high = await destroyed(other);
    expect(high.seq).toBeGreaterThan(low.seq);

    await cursor.catchUp();
    expect(applied).toContain(high.keyId);
    expect(cursor.applied).toBe(low.seq - 1);
    // passes go by (no timer gives the gap up while its transaction runs)
    for (let i = 0; i < 4; i++) {
      await cursor.catchUp();
      expect(cursor.applied).toBe(low.seq - 1);
    }
    release('commit');
    await slow.done;
    await cursor.catchUp();
    expect(applied).toContain(low.keyId);
    expect(cursor.applied).toBe(high.seq);
  });

  it('a number whose transaction rolled back stops holding applied back once that transaction ended', async () => {
    const cursor = new DestructionCursor({ db: handle.db, apply: () => {} });
    await cursor.start();
    let release!: (how: 'commit' | 'rollback') => void;
    const doomed = heldOpen(destroyed, new Promise((r) => (release = r)));
    const lost = await doomed.started;
    const high = await destroyed(other);
    await cursor.catchUp();
    await cursor.catchUp();
    expect(cursor.applied).toBe(lost.seq - 1);
    release('rollback');
    await doomed.done;
    // one pass records a snapshot taken after the rollback, a later one finds its transaction (and any older) ended
    await catchUpTo(cursor, high.seq);
    expect(cursor.applied).toBe(high.seq);
  });

  it('a destruction in flight when the cursor starts is a gap from the start', async () => {
    let release!: (how: 'commit' | 'rollback') => void;
    const slow = heldOpen(destroyed, new Promise((r) => (release = r)));
    const low = await slow.started;
    const high = await destroyed(other);
    const applied: string[] = [];
    const cursor = new DestructionCursor({ db: handle.db, apply: (ids) => void applied.push(...ids) });
    try {
      await cursor.start();
      // (numbers rolled back by the test before are gaps too, until a pass settles them)
      expect(cursor.applied).toBeLessThanOrEqual(low.seq - 1);
    } finally {
      release('commit');
      await slow.done;
    }
    await catchUpTo(cursor, high.seq);
    expect(applied).toEqual([low.keyId]);
    expect(cursor.applied).toBe(high.seq);
  });

  it('the cursor moves past a destruction only once its apply has finished; an apply that fails leaves it to be applied again', async () => {
    const calls: string[][] = [];
    let finish!: () => void;
    let fail = true;
    const cursor = new DestructionCursor({
      db: handle.db,
      apply: async (ids) => {
        calls.push([...ids]);
        if (fail) {
          fail = false;
          throw new Error('the apply failed (the scrub did not finish in time)');
        }
        if (calls.length === 2) await new Promise<void>((r) => (finish = r));
      },
    });
    await cursor.start();
    const d = await destroyed(other);
    await expect(cursor.catchUp()).rejects.toThrow('the apply failed');
    expect(cursor.applied).toBeLessThan(d.seq);
    // the next pass reads it again, and waits for its apply
    const pass = cursor.catchUp();
    while (calls.length < 2) await new Promise((r) => setTimeout(r, 10));
    expect(calls).toEqual([[d.keyId], [d.keyId]]);
    expect(cursor.applied).toBeLessThan(d.seq);
    finish();
    await pass;
    // (a number another test rolled back may hold `applied` below until a later pass settles it)
    await catchUpTo(cursor, d.seq);
    expect(cursor.applied).toBe(d.seq);
  });
});

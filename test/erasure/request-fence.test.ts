/**
 * An erasure request fences the subject's key in the transaction that records the
 * erasure: no erasure is ever open while its key is still leasable. Found by the
 * fault suite (test/faults/database.test.ts): the fence used to be a second
 * transaction, and a connection lost between the two left the erasure open and the
 * key leasable until the engine's own fence step — and a retried request answered
 * "already open" without fencing. Here the fence's UPDATE fails once with a
 * connection-class SQLSTATE (a trigger), as a dropped connection would.
 */
import { sql } from 'drizzle-orm';
import { queryRows } from '../../src/db/client.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, ok } from '../support/http.js';
import { openTestApp, type TestApp } from '../support/vault.js';

let t: TestApp;
beforeAll(async () => {
  // no worker: only the request itself may fence the key
  t = await openTestApp({ app: { erasureWorker: false } });
});
afterAll(async () => {
  await t?.close();
});

describe('the erasure request and its fence', () => {
  it('a request whose fence fails records no erasure; the retry fences and records it in one commit', async () => {
    const subject = 'user:fence-atomic';
    await ok(t.call('POST', `/v1/subjects/${subject}/entries`, { body: { text: 'Keeps bees on the roof of the library.' } }), 201);
    const db = t.app.db.db;
    await db.execute(sql`create function lethe_test_fail_fence() returns trigger language plpgsql as $$
      begin raise exception 'connection lost (test)' using errcode = '08006'; end $$`);
    await db.execute(sql`create trigger lethe_test_fail_fence before update of state on subject_keys
      for each row when (new.state = 'fenced') execute function lethe_test_fail_fence()`);
    try {
      await expectProblem(t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject } }), 503, 'unavailable');
      // the invariant: the key is still leasable, so no erasure may be open
      await ok(t.call('POST', `/v1/subjects/${subject}/key/lease`), 200);
      const [open] = await queryRows<{ n: number }>(db, sql`select count(*)::int as n from erasures where status in ('pending', 'running')`);
      expect(open?.n).toBe(0);
    } finally {
      await db.execute(sql`drop trigger lethe_test_fail_fence on subject_keys`);
      await db.execute(sql`drop function lethe_test_fail_fence()`);
    }
    const accepted = await t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject } });
    expect(accepted.status).toBe(202);
    await expectProblem(t.call('POST', `/v1/subjects/${subject}/key/lease`), 409, 'erasure_in_progress');
  });
});

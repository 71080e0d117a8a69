/**
 * No re-learning (src/erasure/tombstones.ts), on PostgreSQL and MinIO, over HTTP through
 * the app: after a subject's erasure destroyed its key, creating a key, leasing,
 * appending, reserving and registering answer 410 subject_erased — while the fenced
 * key still exists they answer 409 erasure_in_progress as before — until an admin
 * reinstates the subject (audited); the next key is a new one, a read fence from before
 * the erasure still refuses, a second erasure tombstones again, and a backup taken
 * after the erasure restores the tombstone.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { fromBase64Url } from '../../src/crypto/index.js';
import { sealEntry } from '../../src/log/frame.js';
import { encodeSegment } from '../../src/log/segment.js';
import { minioEnv } from '../backups/support.js';
import { expectProblem, ok } from '../support/http.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { openTestApp, type TestApp } from '../support/vault.js';
import { type Call, callVault, tag } from './fixtures.js';

let t: TestApp;
const targets: TestDatabase[] = [];

beforeAll(async () => {
  // no background worker: the tests move each erasure along themselves; leases held by writers lapse within 2 s
  t = await openTestApp({ extraEnv: { ...minioEnv().env, LETHE_LEASE_TTL_SECONDS: '2' }, app: { erasureWorker: false } });
}, 120_000);
afterAll(async () => {
  await t?.close();
  for (const db of targets) await db.drop().catch(() => {});
});

const path = (s: string, rest = '') => `/v1/subjects/${encodeURIComponent(s)}${rest}`;

async function append(call: Call, s: string, text: string): Promise<{ entryId: string; keyId: string; seq: number }> {
  return ok(call('POST', path(s, '/entries'), { body: { text } }), 201, `append to ${s}`);
}

async function erase(call: Call, s: string): Promise<string> {
  const { erasureId } = await ok<{ erasureId: string }>(call('POST', '/v1/erasures', { role: 'eraser', body: { subject: s } }), 202, `erase ${s}`);
  return erasureId;
}

/** The subject's tombstone row, as the table holds it. */
async function tombstoneOf(s: string): Promise<{ erasure_id: string } | undefined> {
  const [row] = await queryRows<{ erasure_id: string }>(
    t.app.db.db,
    sql`select erasure_id from subject_tombstones where subject_hash = ${t.app.keys.subjectHash(s)}`,
  );
  return row;
}

/**
 * What a writer that leased the key and reserved sequence numbers before the erasure
 * uploads after it: a segment of one frame sealed under the leased key, and its registration.
 */
async function lateRegistration(s: string, lease: { keyId: string; dek: Uint8Array }, seq: number) {
  const entryId = `entry_${randomBytes(16).toString('base64url')}`;
  const sealed = sealEntry(
    lease.dek,
    { keyId: lease.keyId, entryId, seq },
    { text: 'learned again, from a job that read before the erasure', kind: null, metadata: null },
  );
  const { bytes, places } = encodeSegment([sealed.envelope]);
  const segment = `log/seg_${randomBytes(16).toString('base64url')}`;
  await t.app.objects.put(segment, bytes);
  const entry = { entryId, subject: s, keyId: lease.keyId, seq, ...places[0]!, wrappedKey: Buffer.from(sealed.wrappedKey).toString('base64url') };
  return { entryId, body: { segment, entries: [entry] } };
}

/** Every way a writer gets a key for the subject answers 410 subject_erased. */
async function expectErased(call: Call, s: string): Promise<void> {
  await expectProblem(call('PUT', path(s, '/key')), 410, 'subject_erased', 'PUT key');
  await expectProblem(call('POST', path(s, '/key/lease')), 410, 'subject_erased', 'lease');
  await expectProblem(call('POST', path(s, '/entries'), { body: { text: 'learned again, a minute late' } }), 410, 'subject_erased', 'append');
  await expectProblem(
    call('POST', path(s, '/entries'), { body: { text: 'learned again' }, headers: { 'idempotency-key': `late-${tag()}` } }),
    410,
    'subject_erased',
    'append with an Idempotency-Key',
  );
  await expectProblem(call('POST', path(s, '/entries/reservations'), { body: { count: 4 } }), 410, 'subject_erased', 'reservation');
  expect(await t.app.keys.findKey(s), 'no key was created').toBeUndefined();
}

describe('after a subject erasure', () => {
  const s = `user:tomb-${tag()}`;
  let oldKeyId = '';
  let reserved = 0;
  let leasedDek: Uint8Array = new Uint8Array(0);
  let fence = '';
  let erasureId = '';

  it('while the erasure runs with the fenced key in place, a lease, an append and a reservation answer 409 erasure_in_progress, a registration erasure_in_progress (PUT key: the fenced key)', async () => {
    await append(t.call, s, `Tove waters the ferns on Thursdays ${tag(3)}.`);
    await append(t.call, s, `Tove's locker code is ${tag(3)}.`);
    // a consolidation job reads the log, and a writer reserves sequence numbers, before the erasure
    fence = (await ok<{ readFence: string }>(t.call('GET', path(s, '/entries')), 200)).readFence;
    const reservation = await ok<{ keyId: string; firstSeq: number }>(t.call('POST', path(s, '/entries/reservations'), { body: { count: 2 } }), 201);
    oldKeyId = reservation.keyId;
    reserved = reservation.firstSeq;
    const lease = await ok<{ keyId: string; dek: string }>(t.call('POST', path(s, '/key/lease')), 200);
    expect(lease.keyId).toBe(oldKeyId);
    leasedDek = fromBase64Url(lease.dek)!;

    erasureId = await erase(t.call, s);
    expect((await tombstoneOf(s))?.erasure_id).toBe(erasureId);
    await expectProblem(t.call('POST', path(s, '/key/lease')), 409, 'erasure_in_progress');
    await expectProblem(t.call('POST', path(s, '/entries'), { body: { text: 'too early' } }), 409, 'erasure_in_progress');
    await expectProblem(t.call('POST', path(s, '/entries/reservations'), { body: { count: 1 } }), 409, 'erasure_in_progress');
    // PUT key answers the live (fenced) key, as before
    expect(await ok<{ keyId: string; state: string }>(t.call('PUT', path(s, '/key')), 200)).toMatchObject({ keyId: oldKeyId, state: 'fenced' });
    const early = await lateRegistration(s, { keyId: oldKeyId, dek: leasedDek }, reserved);
    expect(await ok(t.call('POST', '/v1/segments', { body: early.body }), 201)).toEqual({
      results: [{ entryId: early.entryId, status: 'erasure_in_progress' }],
    });
  });

  it("from the key's destruction on — the erasure still running — they answer 410 subject_erased", async () => {
    const deadline = Date.now() + 30_000;
    while ((await t.app.keys.findKey(s)) !== undefined) {
      if (Date.now() > deadline) throw new Error('the erasure did not destroy the key within 30 s');
      if ((await t.app.erasures.stepOnce()) === undefined) await new Promise((r) => setTimeout(r, 100));
    }
    expect((await t.app.erasures.get(erasureId)).status).toBe('running');
    await expectErased(t.call, s);
  });

  it('after it completed: PUT key, lease, appends and reservations answer 410 subject_erased; a late registration answers subject_erased per entry', async () => {
    expect((await t.app.erasures.settle(erasureId)).status).toBe('completed');
    await expectErased(t.call, s);
    await expectProblem(t.call('GET', path(s, '/entries')), 410, 'subject_erased');

    const late = await lateRegistration(s, { keyId: oldKeyId, dek: leasedDek }, reserved + 1);
    expect(await ok<{ results: unknown[] }>(t.call('POST', '/v1/segments', { body: late.body }), 201)).toEqual({
      results: [{ entryId: late.entryId, status: 'subject_erased' }],
    });
    const [indexed] = await queryRows<{ n: number }>(t.app.db.db, sql`select count(*)::int as n from log_entries where entry_id = ${late.entryId}`);
    expect(indexed?.n).toBe(0);
    leasedDek.fill(0);
  });

  it('a write derived from a read before the erasure is refused after it (the read fence)', async () => {
    const other = await append(t.call, `user:tomb-other-${tag()}`, 'Ulf repairs clocks.');
    await expectProblem(
      t.call('POST', '/v1/artifacts', { body: { kind: 'summary', text: 'Ulf repairs clocks.', sources: [other.entryId], readFence: fence } }),
      409,
      'source_erased',
    );
  });

  it('reinstate: admin only (403 for writer and eraser), 400 for a bad body, 409 for a subject that is not erased', async () => {
    const body = { reason: 'the person signed up again' };
    await expectProblem(t.call('POST', path(s, '/reinstate'), { role: 'writer', body }), 403, 'forbidden');
    await expectProblem(t.call('POST', path(s, '/reinstate'), { role: 'eraser', body }), 403, 'forbidden');
    for (const bad of [{}, { reason: '' }, { reason: '   ' }, { reason: 'x'.repeat(501) }, { reason: 42 }, { reason: 'ok', subject: s }]) {
      await expectProblem(t.call('POST', path(s, '/reinstate'), { role: 'admin', body: bad }), 400, 'validation_failed', JSON.stringify(bad));
    }
    // the reason is kept in the clear: it may not name the subject
    const quoting = await expectProblem(
      t.call('POST', path(s, '/reinstate'), { role: 'admin', body: { reason: `${s} asked to come back` } }),
      400,
      'validation_failed',
    );
    expect(quoting.detail).toMatch(/reason/);
    expect(quoting.text).not.toContain(s);
    const living = `user:tomb-living-${tag()}`;
    await append(t.call, living, 'Vera bakes rye bread.');
    await expectProblem(t.call('POST', path(living, '/reinstate'), { role: 'admin', body }), 409, 'conflict');
    await expectProblem(t.call('POST', path(`user:tomb-never-${tag()}`, '/reinstate'), { role: 'admin', body }), 409, 'conflict');
    // nothing above lifted the tombstone
    expect((await tombstoneOf(s))?.erasure_id).toBe(erasureId);
    await expectErased(t.call, s);
  });

  it('reinstated: an audit row that verifies, then a new key and appends work; the old read fence still refuses', async () => {
    const reason = `came back under a new contract ${tag(3)}`;
    expect(await ok(t.call('POST', path(s, '/reinstate'), { role: 'admin', body: { reason } }), 200)).toEqual({ subject: s, reinstated: true });
    expect(await tombstoneOf(s)).toBeUndefined();
    await expectProblem(t.call('POST', path(s, '/reinstate'), { role: 'admin', body: { reason } }), 409, 'conflict');

    const rows = await queryRows<{ actor: string; subject_hash: Uint8Array; detail: string }>(
      t.app.db.db,
      sql`select actor, subject_hash, detail from audit_log where action = 'subject.reinstate'`,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.actor).toBe('admin');
    expect(Buffer.from(rows[0]!.subject_hash).equals(Buffer.from(t.app.keys.subjectHash(s)))).toBe(true);
    expect(JSON.parse(rows[0]!.detail)).toMatchObject({ erasureId, reason });
    expect(rows[0]!.detail).not.toContain(s);
    expect(await t.app.audit.verify(t.app.db.db)).toMatchObject({ ok: true, problems: [] });

    const key = await ok<{ keyId: string }>(t.call('PUT', path(s, '/key')), 201);
    expect(key.keyId).not.toBe(oldKeyId);
    const fresh = await append(t.call, s, 'a fresh start');
    expect(fresh).toMatchObject({ keyId: key.keyId, seq: 1 });
    expect(await ok(t.call('POST', path(s, '/key/lease')), 200)).toMatchObject({ keyId: key.keyId });
    const { entries } = await ok<{ entries: Array<{ text: string }> }>(t.call('GET', path(s, '/entries')), 200);
    expect(entries.map((e) => e.text)).toEqual(['a fresh start']);
    // reinstating brings no key back: what the job read before the erasure stays refused
    const other = await append(t.call, `user:tomb-other-${tag()}`, 'Wim sails on Sundays.');
    await expectProblem(
      t.call('POST', '/v1/artifacts', { body: { kind: 'summary', text: 'Wim sails on Sundays.', sources: [other.entryId], readFence: fence } }),
      409,
      'source_erased',
    );
  });

  it('a second erasure after reinstatement tombstones the subject again', async () => {
    const second = await erase(t.call, s);
    expect(second).not.toBe(erasureId);
    expect((await tombstoneOf(s))?.erasure_id).toBe(second);
    // reinstating is refused while an erasure of the subject is open
    await expectProblem(t.call('POST', path(s, '/reinstate'), { role: 'admin', body: { reason: 'too soon' } }), 409, 'erasure_in_progress');
    expect((await t.app.erasures.settle(second)).status).toBe('completed');
    await expectErased(t.call, s);
  });

  it('an erasure of a subject already erased keeps the tombstone, naming the newer erasure', async () => {
    const before = (await tombstoneOf(s))!.erasure_id;
    const third = await erase(t.call, s);
    expect(third).not.toBe(before);
    expect((await tombstoneOf(s))?.erasure_id).toBe(third);
    expect((await t.app.erasures.settle(third)).status).toBe('completed');
    expect((await tombstoneOf(s))?.erasure_id).toBe(third);
    await expectErased(t.call, s);
  });
});

describe('backups', () => {
  it('a backup taken after the erasure restores the tombstone: the restored vault answers subject_erased, and reinstating there works', async () => {
    const s = `user:tomb-bak-${tag()}`;
    const kept = `user:tomb-kept-${tag()}`;
    await append(t.call, s, `Xena's bike lock is ${tag(3)}.`);
    await append(t.call, kept, 'Yusuf keeps bees.');
    const erasureId = await erase(t.call, s);
    expect((await t.app.erasures.settle(erasureId)).status).toBe('completed');
    const { backupId } = await ok<{ backupId: string }>(t.call('POST', '/v1/backups', { role: 'backup' }), 201);

    const db = await createTestDatabase();
    targets.push(db);
    const restorer = await t.reopen({ listen: false, erasureWorker: false }, { DATABASE_URL: db.url, S3_BUCKET: `lethe-tomb-rst-${tag(4)}` });
    const result = await restorer.backups.restore(backupId, { actor: 'test' });
    expect(result.warnings).toEqual([]);
    const restored = callVault(restorer);
    const [row] = await queryRows<{ erasure_id: string }>(
      restorer.db.db,
      sql`select erasure_id from subject_tombstones where subject_hash = ${restorer.keys.subjectHash(s)}`,
    );
    expect(row?.erasure_id).toBe(erasureId);
    await expectProblem(restored('PUT', path(s, '/key')), 410, 'subject_erased');
    await expectProblem(restored('POST', path(s, '/entries'), { body: { text: 'learned again after a restore' } }), 410, 'subject_erased');
    await ok(restored('POST', path(kept, '/entries'), { body: { text: 'Yusuf sells honey.' } }), 201);
    expect(await ok(restored('POST', path(s, '/reinstate'), { role: 'admin', body: { reason: 'restored, then reinstated' } }), 200)).toEqual({
      subject: s,
      reinstated: true,
    });
    await ok(restored('PUT', path(s, '/key')), 201);
  });
});

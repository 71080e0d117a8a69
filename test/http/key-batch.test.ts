/**
 * POST /v1/keys/batch over HTTP on real PostgreSQL (and once on the embedded PGlite):
 * statuses, idempotency, per-subject refusals, limits, the audit rows of the keys it
 * creates, and a batch racing single creations for the same subjects.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { expectProblem, ok } from '../support/http.js';
import { openTestApp, type TestApp } from '../support/vault.js';

interface Item {
  subject: string;
  status: 'created' | 'existing' | 'refused';
  keyId?: string;
  createdAt?: string;
  problem?: { code: string; status: number; detail: string; type: string; title: string };
}
interface Batch {
  created: number;
  existing: number;
  refused: number;
  keys: Item[];
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

let t: TestApp;
beforeAll(async () => {
  t = await openTestApp({ app: { erasureWorker: false } });
});
afterAll(async () => {
  await t?.close();
});

const batch = (subjects: unknown, role: 'writer' | 'backup' | 'admin' | 'eraser' = 'writer') => t.call('POST', '/v1/keys/batch', { role, body: { subjects } });
/** A problem+json refusal whose detail matches `detail`. */
async function refused(reply: Response | Promise<Response>, status: number, code: string, detail: RegExp): Promise<void> {
  expect((await expectProblem(reply, status, code)).detail).toMatch(detail);
}
const subjectsOf = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}:${String(i).padStart(5, '0')}`);

/** key.create audit rows of these key ids. */
async function createRows(app: TestApp, keyIds: readonly string[]): Promise<Array<{ key_id: string; epoch: number; actor: string }>> {
  return queryRows(
    app.app.db.db,
    sql`select key_id, epoch, actor from audit_log where action = 'key.create' and key_id in (select json_array_elements_text(${JSON.stringify(keyIds)}::json))`,
  );
}

/** The live key rows of these subjects (by keyed hash). */
async function liveKeys(app: TestApp, subjects: readonly string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const s of subjects) {
    const hash = app.app.keys.subjectHash(s);
    const rows = await queryRows<{ key_id: string }>(app.app.db.db, sql`select key_id from subject_keys where subject_hash = ${Buffer.from(hash)}`);
    out.set(
      s,
      rows.map((r) => r.key_id),
    );
  }
  return out;
}

describe('POST /v1/keys/batch', () => {
  it('creates a key for each new subject, answers the live key of the others, in the order asked, and writes one chained audit row per created key', async () => {
    const put = await ok<{ keyId: string; createdAt: string }>(await t.call('PUT', '/v1/subjects/batch:had-one/key', { role: 'writer' }), 201);
    const fresh = subjectsOf('batch:new', 50);
    const subjects = [fresh[0]!, 'batch:had-one', ...fresh.slice(1)];
    const before = await t.app.audit.tip(t.app.db.db);
    const body = await ok<Batch>(await batch(subjects), 200);
    expect(body).toMatchObject({ created: 50, existing: 1, refused: 0 });
    expect(body.keys.map((k) => k.subject)).toEqual(subjects);
    expect(body.keys[1]).toEqual({ subject: 'batch:had-one', status: 'existing', keyId: put.keyId, createdAt: put.createdAt });
    const created = body.keys.filter((k) => k.status === 'created');
    expect(created).toHaveLength(50);
    for (const k of created) {
      expect(k.keyId).toMatch(/^key_/);
      expect(k.createdAt).toMatch(RFC3339);
      expect(k).not.toHaveProperty('dek');
    }
    expect(new Set(created.map((k) => k.keyId)).size).toBe(50);
    // one key.create row per created key, by the caller's role, under the active epoch; none for the existing one
    const rows = await createRows(
      t,
      created.map((k) => k.keyId!),
    );
    expect(rows).toHaveLength(50);
    const [active] = await queryRows<{ epoch: number }>(t.app.db.db, sql`select epoch from epochs where state = 'active'`);
    expect(rows.every((r) => r.actor === 'writer' && Number(r.epoch) === Number(active!.epoch))).toBe(true);
    const after = await t.app.audit.tip(t.app.db.db);
    expect(after.seq - before.seq).toBe(50);
    expect(await t.app.audit.verify(t.app.db.db)).toMatchObject({ ok: true, head: 'anchored' });
    // the keys are real: a lease answers the same key id, with a DEK
    const lease = await ok<{ keyId: string; dek: string }>(await t.call('POST', `/v1/subjects/${fresh[7]}/key/lease`, { role: 'writer' }), 200);
    expect(lease.keyId).toBe(created.find((k) => k.subject === fresh[7])!.keyId);
    expect(Buffer.from(lease.dek, 'base64url')).toHaveLength(32);
  });

  it('is idempotent: the same batch again creates nothing and answers the same keys', async () => {
    const subjects = subjectsOf('batch:again', 30);
    const first = await ok<Batch>(await batch(subjects), 200);
    const tip = await t.app.audit.tip(t.app.db.db);
    const second = await ok<Batch>(await batch([...subjects].reverse()), 200);
    expect(second).toMatchObject({ created: 0, existing: 30, refused: 0 });
    const firstBy = new Map(first.keys.map((k) => [k.subject, k]));
    for (const k of second.keys) expect(k).toEqual({ ...firstBy.get(k.subject)!, status: 'existing' });
    expect((await t.app.audit.tip(t.app.db.db)).seq).toBe(tip.seq); // nothing audited: nothing changed
  });

  it('answers a refused subject with its own problem and creates the others: erased (410), being erased with its key fenced (409)', async () => {
    await t.call('PUT', '/v1/subjects/batch:erasing/key', { role: 'writer' });
    const erasing = await t.app.erasures.request({ subject: 'batch:erasing' }, 'eraser');
    expect(erasing.created).toBe(true);
    // erased: an erasure requested (tombstone), then its key destroyed — no live key, the tombstone refuses a new one
    const gone = await ok<{ keyId: string }>(await t.call('PUT', '/v1/subjects/batch:erased/key', { role: 'writer' }), 201);
    await t.app.erasures.request({ subject: 'batch:erased' }, 'eraser');
    await t.app.keys.destroyKey(gone.keyId, { reason: 'batch test', actor: 'admin' });
    const fresh = subjectsOf('batch:beside', 5);
    const body = await ok<Batch>(await batch(['batch:erased', ...fresh, 'batch:erasing']), 200);
    expect(body).toMatchObject({ created: 5, existing: 0, refused: 2 });
    expect(body.keys[0]).toMatchObject({
      subject: 'batch:erased',
      status: 'refused',
      problem: { code: 'subject_erased', status: 410, type: 'urn:lethe:problem:subject_erased' },
    });
    expect(body.keys[0]).not.toHaveProperty('keyId');
    expect(body.keys[6]).toMatchObject({ subject: 'batch:erasing', status: 'refused', problem: { code: 'erasure_in_progress', status: 409 } });
    expect(body.keys.slice(1, 6).every((k) => k.status === 'created')).toBe(true);
    // the same answers as the single routes
    await expectProblem(await t.call('PUT', '/v1/subjects/batch:erased/key', { role: 'writer' }), 410, 'subject_erased');
    await expectProblem(await t.call('POST', '/v1/subjects/batch:erasing/key/lease', { role: 'writer' }), 409, 'erasure_in_progress');
    expect((await liveKeys(t, ['batch:erased'])).get('batch:erased')).toEqual([]);
  });

  it('refuses bad input with problem+json naming the field: empty, a malformed subject, a duplicate (400), more than 10,000 (413)', async () => {
    await refused(await batch([]), 400, 'validation_failed', /body\.subjects/);
    await refused(await batch(['ok:1', 'not a subject']), 400, 'validation_failed', /body\.subjects\.1/);
    await refused(await batch(['ok:1', 'ok:2', 'ok:1']), 400, 'validation_failed', /body\.subjects\.2: the same subject as body\.subjects\.0/);
    await refused(await batch('user:1'), 400, 'validation_failed', /body\.subjects/);
    await refused(await t.call('POST', '/v1/keys/batch', { role: 'writer', body: {} }), 400, 'validation_failed', /body\.subjects/);
    const tooMany = await batch(subjectsOf('batch:big', 10_001));
    await refused(tooMany, 413, 'payload_too_large', /at most 10000 subjects/);
    expect((await liveKeys(t, ['ok:1', 'batch:big:00000'])).get('batch:big:00000')).toEqual([]); // nothing was created
    expect((await liveKeys(t, ['ok:1'])).get('ok:1')).toEqual([]);
  });

  it('takes 10,000 subjects of the longest id (200 characters) in one request: the body limit fits them', async () => {
    const long = Array.from({ length: 10_000 }, (_, i) => `${'L'.repeat(190)}:${String(i).padStart(9, '0')}`);
    expect(long[0]).toHaveLength(200);
    const body = await ok<Batch>(await batch(long), 200);
    expect(body).toMatchObject({ created: 10_000, existing: 0, refused: 0 });
    const [n] = await queryRows<{ n: string | number }>(
      t.app.db.db,
      sql`select count(*) as n from audit_log where action = 'key.create' and key_id in (select json_array_elements_text(${JSON.stringify(body.keys.map((k) => k.keyId))}::json))`,
    );
    expect(Number(n!.n)).toBe(10_000);
    expect(await t.app.audit.verify(t.app.db.db)).toMatchObject({ ok: true });
  });

  it('takes the writer and admin roles, as PUT .../key does; not backup or eraser', async () => {
    await ok<Batch>(await batch(['batch:role-admin'], 'admin'), 200);
    await expectProblem(await batch(['batch:role-backup'], 'backup'), 403, 'forbidden');
    await expectProblem(await batch(['batch:role-eraser'], 'eraser'), 403, 'forbidden');
    await expectProblem(await t.call('POST', '/v1/keys/batch', { role: 'none', body: { subjects: ['x:1'] } }), 401, 'unauthorized');
  });

  it('racing single PUTs and leases for the same subjects, here and on another replica, never makes two live keys', async () => {
    const other = await t.reopen({ listen: false, erasureWorker: false });
    const subjects = subjectsOf('batch:race', 60);
    const [fromBatch, singles, leases, otherBatch] = await Promise.all([
      batch(subjects).then((r) => ok<Batch>(r, 200)),
      Promise.all(subjects.map((s) => t.app.keys.ensureKey(s, 'writer'))),
      Promise.all(subjects.filter((_, i) => i % 3 === 0).map((s) => other.keys.lease(s, 'writer'))),
      other.keys.ensureKeys([...subjects].reverse(), 'writer'),
    ]);
    const live = await liveKeys(t, subjects);
    for (const [i, s] of subjects.entries()) {
      const keys = live.get(s)!;
      expect(keys).toHaveLength(1);
      expect(fromBatch.keys[i]!.keyId).toBe(keys[0]);
      expect(singles[i]!.keyId).toBe(keys[0]);
      expect(otherBatch.find((r) => r.subject === s)).toMatchObject({ keyId: keys[0] });
    }
    for (const l of leases) expect(subjects.map((s) => live.get(s)![0])).toContain(l.keyId);
    // exactly one creation per subject, whoever made it, and one audit row each
    const created =
      fromBatch.keys.filter((k) => k.status === 'created').length +
      singles.filter((x) => x.created).length +
      otherBatch.filter((r) => r.status === 'created').length;
    expect(created).toBeLessThanOrEqual(60);
    const rows = await createRows(
      t,
      subjects.map((s) => live.get(s)![0]!),
    );
    expect(rows).toHaveLength(60);
    expect(await t.app.audit.verify(t.app.db.db)).toMatchObject({ ok: true, head: 'anchored' });
  });
});

describe('POST /v1/keys/batch on the embedded database (PGlite)', () => {
  it('creates, answers existing keys and refusals, and keeps the audit chain', async () => {
    const e = await openTestApp({ embedded: true, app: { erasureWorker: false } });
    try {
      const subjects = subjectsOf('embedded:bulk', 200);
      const first = await ok<Batch>(await e.call('POST', '/v1/keys/batch', { role: 'writer', body: { subjects } }), 200);
      expect(first).toMatchObject({ created: 200, existing: 0, refused: 0 });
      const again = await ok<Batch>(await e.call('POST', '/v1/keys/batch', { role: 'writer', body: { subjects: [...subjects, 'embedded:one-more'] } }), 200);
      expect(again).toMatchObject({ created: 1, existing: 200, refused: 0 });
      expect(again.keys.slice(0, 200).map((k) => k.keyId)).toEqual(first.keys.map((k) => k.keyId));
      await e.app.erasures.request({ subject: subjects[3]! }, 'eraser');
      const third = await ok<Batch>(await e.call('POST', '/v1/keys/batch', { role: 'writer', body: { subjects: [subjects[3], 'embedded:two-more'] } }), 200);
      expect(third.keys.map((k) => k.status)).toEqual(['refused', 'created']);
      expect(third.keys[0]!.problem).toMatchObject({ code: 'erasure_in_progress', status: 409 });
      const rows = await createRows(
        e,
        [...first.keys, ...again.keys, ...third.keys].flatMap((k) => (k.status === 'created' ? [k.keyId!] : [])),
      );
      expect(rows).toHaveLength(202);
      expect(await e.app.audit.verify(e.app.db.db)).toMatchObject({ ok: true, head: 'anchored' });
    } finally {
      await e.close();
    }
  });
});

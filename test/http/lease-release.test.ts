/**
 * Releasing a key lease (`DELETE /v1/subjects/{subject}/key/lease/{leaseId}`) on
 * PostgreSQL, and what it does to an erasure's drain_leases step:
 * - 204, idempotent (one `key.lease.release` audit row however often, or however
 *   concurrently, it is released; the chain still verifies), 404 for a lease never
 *   handed out for the subject (unknown, or another subject's), 400 for a malformed
 *   lease id or subject, 401 / 403 by role; a lease of a key destroyed meanwhile is
 *   released too, and a released lease no longer counts as outstanding at destruction.
 * - An erasure parked at drain_leases behind two leases, with the lease TTL at its
 *   default (300 s): releasing one keeps it parked, releasing the last ends the drain
 *   at once; the view, the residual and the certificate say when and how the leases
 *   ended.
 * - A lease never released still holds the drain until it expires (a 3 s TTL there).
 *
 * The erasure worker is off: erasures are driven with `drain` / `settle`, so every
 * wait measured here is the drain's own, not a poll interval.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { expectProblem, ok } from '../support/http.js';
import { openTestApp, type TestApp } from '../support/vault.js';

const tag = () => randomBytes(5).toString('hex');
const UNKNOWN_LEASE = `lease_${'Q'.repeat(22)}`;

interface Lease {
  keyId: string;
  leaseId: string;
  expiresAt: string;
}
interface ErasureBody {
  erasureId: string;
  status: string;
  finishedAt?: string;
  steps: Array<{ name: string; status: string; detail?: string; finishedAt?: string }>;
  residuals: Array<{ tier: string; kind: string; detail: string; until?: string; bound: number | string }>;
  certificate?: { payload: Record<string, unknown> };
}

async function lease(t: TestApp, subject: string): Promise<Lease> {
  return ok<Lease>(t.call('POST', `/v1/subjects/${subject}/key/lease`, { role: 'writer' }), 200);
}

const release = (t: TestApp, subject: string, leaseId: string, role: 'writer' | 'eraser' | 'backup' | 'admin' | 'none' = 'writer') =>
  t.call('DELETE', `/v1/subjects/${subject}/key/lease/${leaseId}`, { role });

async function releaseRows(t: TestApp, leaseId: string): Promise<Array<{ key_id: string; actor: string; detail: string }>> {
  return queryRows(
    t.app.db.db,
    sql`select key_id, actor, detail from audit_log where action = 'key.lease.release' and detail::json ->> 'leaseId' = ${leaseId}`,
  );
}

async function append(t: TestApp, subject: string, text: string): Promise<void> {
  await ok(t.call('POST', `/v1/subjects/${subject}/entries`, { role: 'writer', body: { text } }), 201);
}

async function requestErasure(t: TestApp, subject: string): Promise<string> {
  return (await ok<{ erasureId: string }>(t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject } }), 202)).erasureId;
}

const view = (t: TestApp, erasureId: string) => ok<ErasureBody>(t.call('GET', `/v1/erasures/${erasureId}`, { role: 'eraser' }), 200);
const drainStep = (v: ErasureBody) => v.steps.find((s) => s.name === 'drain_leases')!;

describe('DELETE /v1/subjects/{subject}/key/lease/{leaseId}', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await openTestApp({ app: { erasureWorker: false } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("answers 204 and records one key.lease.release audit row on the lease's key; releasing again answers 204 and records nothing more", async () => {
    const s = `user:rel-${tag()}`;
    const l = await lease(t, s);
    const res = await release(t, s, l.leaseId);
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
    expect(await releaseRows(t, l.leaseId)).toEqual([{ key_id: l.keyId, actor: 'writer', detail: JSON.stringify({ leaseId: l.leaseId }) }]);

    for (let i = 0; i < 2; i++) expect((await release(t, s, l.leaseId)).status).toBe(204);
    expect(await releaseRows(t, l.leaseId)).toHaveLength(1);
    // the lease no longer counts: nothing outstanding on the key
    expect(await t.app.keys.leases(l.keyId)).toMatchObject({ leases: 1, released: 1, outstandingUntil: null, lastEnded: 'released' });
    expect(await t.app.audit.verify(t.app.db.db)).toMatchObject({ ok: true });
  });

  it('records one release when the same lease is released by many requests at once', async () => {
    const s = `user:rel-race-${tag()}`;
    const l = await lease(t, s);
    const answers = await Promise.all(Array.from({ length: 8 }, () => release(t, s, l.leaseId)));
    expect(answers.map((r) => r.status)).toEqual(Array(8).fill(204));
    expect(await releaseRows(t, l.leaseId)).toHaveLength(1);
    expect(await t.app.audit.verify(t.app.db.db)).toMatchObject({ ok: true });
  });

  it("answers 404 not_found for a lease id never handed out, and for another subject's lease", async () => {
    const s = `user:rel-404-${tag()}`;
    const other = `user:rel-other-${tag()}`;
    const mine = await lease(t, s);
    const theirs = await lease(t, other);
    const unknown = await expectProblem(release(t, s, UNKNOWN_LEASE), 404, 'not_found');
    expect(unknown.detail).toMatch(/no such lease/);
    await expectProblem(release(t, s, theirs.leaseId), 404, 'not_found');
    // a subject lethe has never seen
    await expectProblem(release(t, `user:rel-never-${tag()}`, mine.leaseId), 404, 'not_found');
    expect(await releaseRows(t, theirs.leaseId)).toEqual([]);
    expect(await releaseRows(t, mine.leaseId)).toEqual([]);
  });

  it('answers 400 validation_failed naming the parameter for a malformed lease id or subject', async () => {
    const s = `user:rel-400-${tag()}`;
    const l = await lease(t, s);
    for (const bad of [
      'lease_short',
      `key_${'A'.repeat(22)}`,
      `lease_${'A'.repeat(21)}*`,
      `lease_${'A'.repeat(23)}`,
      encodeURIComponent('lease_\u0000AAAAAAAAAAAAAAAAAAAAA'),
    ]) {
      const { detail } = await expectProblem(release(t, s, bad), 400, 'validation_failed', bad);
      expect(detail, bad).toMatch(/leaseId/);
    }
    const { detail } = await expectProblem(
      t.call('DELETE', `/v1/subjects/${encodeURIComponent('user 42')}/key/lease/${l.leaseId}`, { role: 'writer' }),
      400,
      'validation_failed',
    );
    expect(detail).toMatch(/subject/);
    expect(await releaseRows(t, l.leaseId)).toEqual([]);
  });

  it('answers 401 without a token and 403 to the eraser and backup roles; admin may release', async () => {
    const s = `user:rel-roles-${tag()}`;
    const l = await lease(t, s);
    await expectProblem(release(t, s, l.leaseId, 'none'), 401, 'unauthorized');
    await expectProblem(release(t, s, l.leaseId, 'eraser'), 403, 'forbidden');
    await expectProblem(release(t, s, l.leaseId, 'backup'), 403, 'forbidden');
    expect(await releaseRows(t, l.leaseId)).toEqual([]);
    expect((await release(t, s, l.leaseId, 'admin')).status).toBe(204);
    expect((await releaseRows(t, l.leaseId)).map((r) => r.actor)).toEqual(['admin']);
  });

  it('releases a lease of a key destroyed meanwhile; a released lease is not outstanding at destruction', async () => {
    const s = `user:rel-destroyed-${tag()}`;
    const released = await lease(t, s);
    const held = await lease(t, s);
    expect(held.keyId).toBe(released.keyId);
    expect((await release(t, s, released.leaseId)).status).toBe(204);
    // the destruction records the latest expiry of the leases not released: the held one's
    const d = await ok<{ leasedUntil?: string }>(
      t.call('POST', `/v1/admin/keys/${held.keyId}/destroy`, { role: 'admin', body: { reason: 'lease test' } }),
      200,
    );
    expect(d.leasedUntil).toBe(held.expiresAt);
    expect((await release(t, s, held.leaseId)).status).toBe(204);
    expect(await releaseRows(t, held.leaseId)).toEqual([expect.objectContaining({ key_id: held.keyId })]);
    expect(await t.app.keys.leases(held.keyId)).toMatchObject({ leases: 2, released: 2, outstandingUntil: null });

    // every lease released before the destruction: nothing outstanding is recorded
    const s2 = `user:rel-destroyed2-${tag()}`;
    const only = await lease(t, s2);
    expect((await release(t, s2, only.leaseId)).status).toBe(204);
    const d2 = await ok<{ leasedUntil?: string }>(
      t.call('POST', `/v1/admin/keys/${only.keyId}/destroy`, { role: 'admin', body: { reason: 'lease test' } }),
      200,
    );
    expect(d2.leasedUntil).toBeUndefined();
  });

  it('the OpenAPI document describes the route: 204, 404, the lease id pattern', async () => {
    const doc = await ok<{
      paths: Record<string, Record<string, { responses: Record<string, unknown>; parameters: Array<{ name: string; schema: { pattern?: string } }> }>>;
    }>(t.call('GET', '/openapi.json', { role: 'none' }), 200);
    const op = doc.paths['/v1/subjects/{subject}/key/lease/{leaseId}']?.delete;
    expect(op).toBeDefined();
    expect(Object.keys(op!.responses)).toEqual(expect.arrayContaining(['204', '404', '400', '401', '403']));
    expect(op!.parameters.find((p) => p.name === 'leaseId')?.schema.pattern).toBe('^lease_[A-Za-z0-9_-]{22}$');
  });
});

describe('drain_leases with releases (lease TTL at its default, 300 s)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await openTestApp({ app: { erasureWorker: false } });
    expect(t.config.leaseTtlSeconds).toBe(300);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('stays parked while one lease is outstanding, and ends as soon as the last one is released', async () => {
    const s = `user:drain-${tag()}`;
    await append(t, s, 'Ines waters the courtyard lemon tree on Sundays.');
    const first = await lease(t, s);
    const second = await lease(t, s);
    const erasureId = await requestErasure(t, s);
    await t.app.erasures.drain(); // classify … destroy, then parks at drain_leases
    let v = await view(t, erasureId);
    expect(v.status).toBe('running');
    expect(drainStep(v)).toMatchObject({ status: 'running', detail: expect.stringMatching(/waiting for key leases .* \(0 of 2 released\)/) });

    // one released: the erasure looks again at once, and parks again behind the other
    expect((await release(t, s, first.leaseId)).status).toBe(204);
    await t.app.erasures.drain();
    v = await view(t, erasureId);
    expect(v.status).toBe('running');
    expect(drainStep(v)).toMatchObject({ status: 'running', detail: expect.stringMatching(/\(1 of 2 released\)/) });

    // the last one released (the key was destroyed by the erasure a moment ago): the drain ends now, not at the expiry
    const releasedAt = Date.now();
    expect((await release(t, s, second.leaseId)).status).toBe(204);
    v = await t.app.erasures.settle(erasureId, 60_000).then(() => view(t, erasureId));
    const drainedAt = Date.parse(drainStep(v).finishedAt!);
    console.log(
      `drain_leases ended ${drainedAt - releasedAt} ms after the last release; erasure finished ${Date.parse(v.finishedAt!) - releasedAt} ms after it (the leases would have expired ${Date.parse(second.expiresAt) - releasedAt} ms after it)`,
    );
    expect(v.status).toBe('completed');
    expect(drainedAt - releasedAt).toBeLessThan(5_000);
    expect(drainedAt).toBeLessThan(Date.parse(second.expiresAt) - 280_000);
    expect(drainStep(v)).toMatchObject({
      status: 'done',
      detail: expect.stringMatching(/^every lease ended, the last released by its writer at .* \(2 of 2 released by their writers\)$/),
    });

    // the residual (signed into the certificate) ends at the last release, not at the expiry captured at destruction
    const [releaseRow] = await queryRows<{ at: Date | string }>(
      t.app.db.db,
      sql`select at from audit_log where action = 'key.lease.release' and detail::json ->> 'leaseId' = ${second.leaseId}`,
    );
    const leaseResidual = v.residuals.find((r) => r.kind === 'lease');
    expect(leaseResidual).toMatchObject({ tier: 'caches', until: new Date(releaseRow!.at).toISOString(), bound: new Date(releaseRow!.at).toISOString() });
    expect(leaseResidual!.detail).toMatch(/released their leases \(2 of 2 released/);
    const signed = (v.certificate!.payload.residuals as Array<{ kind: string; until?: string }>).find((r) => r.kind === 'lease');
    expect(signed?.until).toBe(leaseResidual!.until);
    expect(Date.parse(leaseResidual!.until!)).toBeLessThan(Date.parse(second.expiresAt));
  }, 120_000);

  it('a lease released after the fence and before the destruction leaves the drain nothing to wait for', async () => {
    // the destruction records nothing outstanding, and the drain reads the release
    const s = `user:drain-early-${tag()}`;
    await append(t, s, 'Tomas keeps spare keys in the blue tin by the door.');
    const l = await lease(t, s);
    const erasureId = await requestErasure(t, s);
    expect((await release(t, s, l.leaseId)).status).toBe(204);
    await t.app.erasures.settle(erasureId, 60_000);
    const v = await view(t, erasureId);
    expect(v.status).toBe('completed');
    expect(drainStep(v).detail).toMatch(/released by its writer/);
    expect(v.residuals.find((r) => r.kind === 'lease')).toBeUndefined();
  }, 120_000);
});

describe('drain_leases without releases (lease TTL 3 s)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await openTestApp({ app: { erasureWorker: false }, extraEnv: { LETHE_LEASE_TTL_SECONDS: '3' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a lease never released holds the drain until it expires', async () => {
    const s = `user:drain-held-${tag()}`;
    await append(t, s, 'Noor parks the green van behind the bakery.');
    const l = await lease(t, s);
    const erasureId = await requestErasure(t, s);
    await t.app.erasures.drain();
    // another subject's release wakes nothing of this erasure
    const other = `user:drain-other-${tag()}`;
    const o = await lease(t, other);
    expect((await release(t, other, o.leaseId)).status).toBe(204);
    await t.app.erasures.drain();
    const parked = await view(t, erasureId);
    expect(parked.status).toBe('running');
    expect(drainStep(parked)).toMatchObject({ status: 'running', detail: expect.stringMatching(/waiting for key leases/) });
    expect(Date.now()).toBeLessThan(Date.parse(l.expiresAt));

    await t.app.erasures.settle(erasureId, 60_000);
    const v = await view(t, erasureId);
    expect(v.status).toBe('completed');
    const drainedAt = Date.parse(drainStep(v).finishedAt!);
    expect(drainedAt).toBeGreaterThanOrEqual(Date.parse(l.expiresAt));
    expect(drainStep(v).detail).toBe(`every lease expired (the last at ${l.expiresAt}; 0 of 1 released by their writers)`);
    expect(v.residuals.find((r) => r.kind === 'lease')).toMatchObject({ until: l.expiresAt, detail: expect.stringMatching(/until their lease expired/) });
  }, 120_000);

  it('releasing a lease that already expired answers 204 and records nothing', async () => {
    const s = `user:rel-expired-${tag()}`;
    const l = await lease(t, s);
    await new Promise((r) => setTimeout(r, Date.parse(l.expiresAt) - Date.now() + 100));
    expect((await release(t, s, l.leaseId)).status).toBe(204);
    expect(await releaseRows(t, l.leaseId)).toEqual([]);
  });
});

/**
 * Updating a memory (POST /v1/subjects/{subject}/entries/{entryId}/supersede), on
 * PostgreSQL and MinIO through the HTTP app: the successor is stored and the old
 * version forgotten in one transaction; the old version's erasure completes — its
 * successor, the same person's current data, is not counted by the probe and the
 * certificate names it — and a writer may forget or supersede only what its own
 * token wrote.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyCertificate } from '../../src/crypto/certificate.js';
import { queryRows } from '../../src/db/client.js';
import { minioEnv } from '../backups/support.js';
import { expectProblem, ok } from '../support/http.js';
import { openTestApp, type TestApp } from '../support/vault.js';
import { awaitErasure, tag } from './fixtures.js';

interface Superseded {
  entry: { entryId: string; keyId: string; seq: number };
  superseded: { entryId: string; erasureId: string; status: string };
}

describe('superseding a memory', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await openTestApp({ extraEnv: { ...minioEnv().env, LETHE_ERASURE_POLL_MS: '100' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  const append = async (subject: string, text: string, second = false) =>
    (await ok<{ entryId: string }>(t.call('POST', `/v1/subjects/${subject}/entries`, { body: { text, kind: 'memory' }, second }), 201)).entryId;
  const supersede = (subject: string, entryId: string, text: string, options: { role?: 'writer' | 'eraser'; second?: boolean } = {}) =>
    t.call('POST', `/v1/subjects/${subject}/entries/${entryId}/supersede`, { body: { text, kind: 'memory' }, ...options });
  const live = async (subject: string) =>
    (await ok<{ entries: Array<{ entryId: string; text: string }> }>(t.call('GET', `/v1/subjects/${subject}/entries?limit=1000`), 200)).entries;

  it('stores the successor and forgets the old version at once; the erasure completes, its probe not counting the successor', {
    timeout: 120_000,
  }, async () => {
    const A = `user:supersede-${tag()}`;
    const other = await append(A, `Alice keeps bees on the roof of her building ${tag(3)}.`);
    const v1 = await append(A, `Alice lives at 12 Rose Street, flat 4, in Lyon ${tag(3)}.`);
    const result = await ok<Superseded>(supersede(A, v1, 'Alice lives at 12 Rose Street, flat 5, in Lyon.'), 201);
    expect(result.superseded.entryId).toBe(v1);
    // from the answer on: one live version, the successor
    await expectProblem(t.call('GET', `/v1/entries/${v1}`), 410, 'entry_forgotten');
    expect((await live(A)).map((e) => e.entryId).sort()).toEqual([other, result.entry.entryId].sort());
    const done = (await awaitErasure(t.call, result.superseded.erasureId)) as Awaited<ReturnType<typeof awaitErasure>> & {
      supersededBy?: string;
      probe: { successors?: string[] };
    };
    expect(done.status, JSON.stringify({ probe: done.probe, steps: done.steps })).toBe('completed');
    expect(done.supersededBy).toBe(result.entry.entryId);
    expect(done.probe.successors).toEqual([result.entry.entryId]);
    expect(done.probe.matches.map((m) => m.id)).not.toContain(result.entry.entryId);
    // the signed certificate says which record was the successor
    const cert = done.certificate!;
    expect(cert.payload.supersededBy).toBe(result.entry.entryId);
    expect((cert.payload.probe as { successors?: string[] }).successors).toEqual([result.entry.entryId]);
    const keys = (await ok<{ keys: Array<{ publicKey: string }> }>(t.call('GET', '/v1/certificates/keys', { role: 'none' }), 200)).keys;
    expect(
      verifyCertificate(
        cert as never,
        keys.map((k) => k.publicKey),
      ).valid,
    ).toBe(true);
    // the successor and the other entry still read
    expect((await ok<{ text: string }>(t.call('GET', `/v1/entries/${result.entry.entryId}`), 200)).text).toContain('flat 5');
    expect((await ok<{ text: string }>(t.call('GET', `/v1/entries/${other}`), 200)).text).toContain('bees');
  });

  it('a copy that is not the successor is still counted: forgetting v1 while another entry repeats it is incomplete', { timeout: 120_000 }, async () => {
    const A = `user:supersede-copy-${tag()}`;
    const text = `Alice's locker code at the Lyon gym is LOCKER${tag(6)}, row B, next to the sauna.`;
    const v1 = await append(A, text);
    await append(A, `Note to self: ${text}`);
    const result = await ok<Superseded>(supersede(A, v1, 'Alice no longer uses the gym locker.'), 201);
    const done = await awaitErasure(t.call, result.superseded.erasureId);
    expect(done.status).toBe('incomplete');
    expect(done.probe.matches.length).toBeGreaterThan(0);
    expect(done.probe.matches.map((m) => m.id)).not.toContain(result.entry.entryId);
  });

  it('100 sequential updates of one item with near-identical values: 100 successes, no erasure incomplete, every old version unreadable', {
    timeout: 500_000,
  }, async () => {
    const A = `user:supersede-many-${tag()}`;
    // words (and numbers) no other test of the file writes: the probe looks in every subject, and only the successors are not counted
    const mark = tag(4);
    const profile = (i: number) => `Profile of Quillon Marbeck: breeds axolotls in Tromsø, plays the theremin, revision ${i}q${mark}.`;
    let current = await append(A, profile(0));
    const old: string[] = [];
    const erasures: string[] = [];
    for (let i = 1; i <= 100; i++) {
      const r = await ok<Superseded>(supersede(A, current, profile(i)), 201);
      old.push(current);
      erasures.push(r.superseded.erasureId);
      current = r.entry.entryId;
    }
    const finished = await Promise.all(erasures.map((id) => awaitErasure(t.call, id, 400_000)));
    expect(
      finished.map((e) => e.status),
      JSON.stringify(finished.filter((e) => e.status !== 'completed').map((e) => ({ steps: e.steps, probe: e.probe }))),
    ).toEqual(erasures.map(() => 'completed'));
    for (const id of old) await expectProblem(t.call('GET', `/v1/entries/${id}`), 410, 'entry_forgotten');
    expect((await live(A)).map((e) => e.entryId)).toEqual([current]);
  });

  it('two concurrent updates of one version: one succeeds, the other is a conflict, and one successor lives', { timeout: 120_000 }, async () => {
    const A = `user:supersede-race-${tag()}`;
    const v1 = await append(A, 'Alice drinks her coffee with oat milk.');
    const answers = await Promise.all([supersede(A, v1, 'Alice drinks her coffee black.'), supersede(A, v1, 'Alice drinks green tea now.')]);
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 409]);
    const refused = answers.find((r) => r.status === 409)!;
    expect(((await refused.json()) as { code: string }).code).toBe('conflict');
    const entries = await live(A);
    expect(entries).toHaveLength(1);
    // nothing of the refused update is indexed
    const rows = await queryRows<{ n: string }>(t.app.db.db, sql`select count(*) as n from log_entries where supersedes = ${v1}`);
    expect(Number(rows[0]!.n)).toBe(1);
  });

  it('a writer forgets and supersedes only what its own token wrote; an eraser forgets anything', { timeout: 120_000 }, async () => {
    const A = `user:supersede-roles-${tag()}`;
    const mine = await append(A, 'Alice parks on level 3.');
    const theirs = await append(A, 'Alice takes the tram at 8.', true);
    await expectProblem(supersede(A, theirs, 'Alice takes the bus at 8.'), 403, 'forbidden');
    await expectProblem(t.call('DELETE', `/v1/entries/${theirs}`), 403, 'forbidden');
    await expectProblem(t.call('DELETE', `/v1/entries/${mine}`, { second: true }), 403, 'forbidden');
    // an entry written before the writer was recorded (no principal) is an eraser's to forget
    const before = await append(A, 'Alice once lived in Grenoble.');
    await t.app.db.db.execute(sql`update log_entries set written_by = null where entry_id = ${before}`);
    await expectProblem(t.call('DELETE', `/v1/entries/${before}`), 403, 'forbidden');
    const forgotten = await ok<{ erasureId: string }>(t.call('DELETE', `/v1/entries/${mine}`), 202);
    const updated = await ok<Superseded>(supersede(A, theirs, 'Alice takes the bus at 8.', { second: true }), 201);
    await ok(t.call('DELETE', `/v1/entries/${before}`, { role: 'eraser' }), 202);
    for (const id of [forgotten.erasureId, updated.superseded.erasureId]) expect((await awaitErasure(t.call, id)).status).toBe('completed');
    // a writer cannot rule on probe matches or erase the subject
    await expectProblem(t.call('POST', '/v1/erasures', { body: { subject: A } }), 403, 'forbidden');
  });

  it('refuses what it cannot do with a clear problem, and stores nothing', async () => {
    const A = `user:supersede-bad-${tag()}`;
    const B = `user:supersede-bad-other-${tag()}`;
    const a = await append(A, 'Alice likes figs.');
    await expectProblem(supersede(B, a, 'Bob likes figs.'), 404, 'not_found');
    await expectProblem(supersede(A, 'entry_AAAAAAAAAAAAAAAAAAAAAA', 'x'), 404, 'not_found');
    await expectProblem(t.call('POST', `/v1/subjects/${A}/entries/not-an-id/supersede`, { body: { text: 'x' } }), 400, 'validation_failed');
    await expectProblem(t.call('POST', `/v1/subjects/${A}/entries/${a}/supersede`, { body: { kind: 'memory' } }), 400, 'validation_failed');
    await expectProblem(t.call('POST', `/v1/subjects/${A}/entries/${a}/supersede`, { role: 'none', body: { text: 'x' } }), 401, 'unauthorized');
    const rows = await queryRows<{ n: string }>(t.app.db.db, sql`select count(*) as n from log_entries where supersedes = ${a}`);
    expect(Number(rows[0]!.n)).toBe(0);
    expect((await live(A)).map((e) => e.entryId)).toEqual([a]);
  });
});

describe('forgets that arrive together', () => {
  let t: TestApp;

  beforeAll(async () => {
    // no worker: the test steps the erasures itself
    t = await openTestApp({ extraEnv: { ...minioEnv().env }, app: { erasureWorker: false } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('share one re-key: 16 forgets of one subject fingerprinted before any re-keys destroy one key, and each certifies', { timeout: 180_000 }, async () => {
    const A = `user:coalesce-${tag()}`;
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      ids.push(
        (await ok<{ entryId: string }>(t.call('POST', `/v1/subjects/${A}/entries`, { body: { text: `Alice note ${i}: ${tag(5)} ${tag(5)}` } }), 201)).entryId,
      );
    }
    const erasures = await Promise.all(
      ids.slice(0, 16).map(async (id) => (await ok<{ erasureId: string }>(t.call('DELETE', `/v1/entries/${id}`, { role: 'eraser' }), 202)).erasureId),
    );
    const stepOf = async () =>
      queryRows<{ erasure_id: string; step: string }>(
        t.app.db.db,
        sql`select erasure_id, step from erasures where erasure_id in (select json_array_elements_text(${JSON.stringify(erasures)}::json))`,
      );
    // every one fingerprinted and waiting at its fence: one that got there is held back (as a park would) so the next is claimed
    for (let i = 0; i < 200; i++) {
      await t.app.db.db.execute(sql`update erasures set not_before = now() + interval '1 hour' where step in ('fence', 'destroy') and scope = 'records'`);
      if ((await stepOf()).every((r) => r.step === 'fence' || r.step === 'destroy')) break;
      await t.app.erasures.stepOnce();
    }
    expect((await stepOf()).map((r) => r.step).sort()).toEqual(erasures.map(() => 'fence'));
    await t.app.db.db.execute(sql`update erasures set not_before = now() where scope = 'records' and status in ('pending', 'running')`);
    const views = [];
    for (const id of erasures) views.push(await t.app.erasures.settle(id, 120_000));
    expect(views.map((v) => v.status)).toEqual(erasures.map(() => 'completed'));
    // one re-key took all 16: one key of the subject destroyed
    const destroyed = await queryRows<{ n: string }>(
      t.app.db.db,
      sql`select count(*) as n from destruction_ledger where subject_hash = ${t.app.keys.subjectHash(A)}`,
    );
    expect(Number(destroyed[0]!.n)).toBe(1);
    const keysNamed = new Set(views.map((v) => (v.certificate?.payload as { keyId?: string } | undefined)?.keyId));
    expect(keysNamed.size).toBe(1);
    for (const id of ids.slice(0, 16)) await expectProblem(t.call('GET', `/v1/entries/${id}`), 410, 'entry_forgotten');
    const left = (await ok<{ entries: Array<{ entryId: string }> }>(t.call('GET', `/v1/subjects/${A}/entries?limit=100`), 200)).entries;
    expect(left.map((e) => e.entryId)).toEqual(ids.slice(16));
  });
});

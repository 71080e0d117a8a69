/**
 * The seeds' scenarios, end to end on PostgreSQL and a real MinIO: each erasure runs
 * through the durable state machine and is judged by what the API returns after it.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { verifyCertificate } from '../../src/crypto/certificate.js';
import { queryRows } from '../../src/db/client.js';
import { isLetheError } from '../../src/errors.js';
import { minioEnv, openTestVault, type TestVault } from '../support/vault.js';

const tag = () => randomBytes(5).toString('hex');

describe('erasure scenarios (PostgreSQL + MinIO)', () => {
  let tv: TestVault;

  beforeAll(async () => {
    tv = await openTestVault({
      extraEnv: { ...minioEnv('lethe-ers'), LETHE_LEASE_TTL_SECONDS: '1' },
      app: { erasureWorker: false },
    });
  }, 60_000);

  afterAll(async () => {
    await tv?.close();
  });

  const append = async (subject: string, text: string) => (await tv.app.log.append(subject, { text }, 'writer')).entryId;
  const erase = async (subject: string, extra: Record<string, unknown> = {}) => {
    const { erasureId } = await tv.app.erasures.request({ subject, ...extra }, 'eraser');
    return tv.app.erasures.settle(erasureId);
  };
  /** Every text the API can still return: search hits for each probe phrase, all artifacts' texts. */
  const searchTexts = async (queries: string[]) => {
    const out: string[] = [];
    for (const q of queries) out.push(...(await tv.app.search.search(q, 20, { allSubjects: true })).hits.map((h) => h.text));
    return out.join('\n');
  };

  it('class A: a subject with only log entries ends completed with a certificate that verifies', async () => {
    const s = `user:a-${tag()}`;
    const canary = `CANARY-${tag()}`;
    await append(s, `my locker code is ${canary}`);
    await append(s, `I prefer tea over coffee ${canary}`);
    const view = await erase(s, { legalBasis: 'gdpr-art17' });
    expect(view.status).toBe('completed');
    expect(view.class).toBe('A');
    expect(view.steps.filter((st) => st.name !== 'redact').map((st) => [st.name, st.status])).toEqual(
      ['classify', 'fingerprint', 'fence', 'destroy', 'drain_leases', 'cascade', 'propagate', 'probe', 'certify'].map((n) => [n, 'done']),
    );
    expect(view.probe.recovered).toBe(0);
    expect(view.residuals.map((r) => r.kind)).toEqual(expect.arrayContaining(['gist', 'wrapped-dek']));
    expect(view.certificate).toBeDefined();
    expect(verifyCertificate(view.certificate, await tv.app.certificateKeys.publicKeys()).valid).toBe(true);
    expect(view.certificate!.payload.erasureId).toBe(view.erasureId);
    expect(view.certificate!.payload.subjectHash).toBe(view.subjectHash);
    expect(JSON.stringify(view)).not.toContain(s);
    await expect(tv.app.log.list(s)).rejects.toSatisfy((e) => isLetheError(e, 'subject_erased'));
    expect(await searchTexts([canary, 'locker code'])).not.toContain(canary);
  });

  it('class B: an interest summary and a shared topic digest are regenerated without A, keeping the others', async () => {
    const A = `user:b-a-${tag()}`;
    const B = `user:b-b-${tag()}`;
    const C = `user:b-c-${tag()}`;
    const ca = `ACANARY${tag()}`;
    const cb = `BCANARY${tag()}`;
    const cc = `CCANARY${tag()}`;
    const a1 = await append(A, `Alice loves birdwatching in the marshes ${ca}.`);
    const b1 = await append(B, `Bob collects vintage synthesizers ${cb}.`);
    const c1 = await append(C, `Carol trains for the Berlin marathon ${cc}.`);
    const interest = await tv.app.artifacts.write({ kind: 'summary', text: `Interests: birdwatching ${ca}; synthesizers ${cb}.`, sources: [a1, b1] }, 'writer');
    const digest = await tv.app.artifacts.write(
      { kind: 'digest', text: `Topic digest: birdwatching ${ca}, synthesizers ${cb}, marathon ${cc}.`, sources: [interest.artifactId, c1] },
      'writer',
    );
    const view = await erase(A);
    expect(view.class).toBe('B');
    expect(view.status).toBe('completed');
    const summary = await tv.app.artifacts.get(interest.artifactId);
    const dig = await tv.app.artifacts.get(digest.artifactId);
    expect(summary.version).toBe(2);
    expect(dig.version).toBe(2);
    for (const text of [summary.text, dig.text]) expect(text).not.toContain(ca);
    expect(summary.text).toContain(cb);
    expect(dig.text).toContain(cb);
    expect(dig.text).toContain(cc);
    expect(view.graph.nodes.find((n) => n.id === a1)?.erasedSubject).toBe(true);
    // the certificate states what each tier held and removed
    expect(view.certificate!.payload.tiers).toMatchObject({
      'key-table': { contributed: 1, removed: 1 },
      log: { contributed: 1, removed: 1 },
      'vector-index': { contributed: 1, removed: 1 },
      artifacts: { contributed: 2, removed: 2 },
    });
    expect(view.graph.nodes.find((n) => n.id === interest.artifactId)?.outcome).toBe('regenerated');
    expect(view.graph.edges).toEqual(
      expect.arrayContaining([
        { from: a1, to: interest.artifactId },
        { from: interest.artifactId, to: digest.artifactId },
      ]),
    );
    expect(await searchTexts([ca, 'birdwatching marshes'])).not.toContain(ca);
  });

  it("a weekly summary owned by a shared calendar context loses A's address", async () => {
    const A = `user:cal-a-${tag()}`;
    const calendar = `ctx:calendar-${tag()}`;
    const street = `${Math.floor(Math.random() * 90) + 10} Rue des Lilas ${tag()}`;
    const a1 = await append(A, `My home address is ${street}, Lyon.`);
    const m1 = await append(calendar, 'Team sync every Monday at ten.');
    const weekly = await tv.app.artifacts.write(
      { kind: 'summary', text: `Week: team sync Monday; pick Alice up at ${street}, Lyon.`, sources: [a1, m1] },
      'writer',
    );
    const view = await erase(A);
    expect(view.status).toBe('completed');
    const after = await tv.app.artifacts.get(weekly.artifactId);
    expect(after.text).not.toContain(street);
    expect(after.text).toContain('Team sync');
  });

  it("another subject's note paraphrasing A's address: incomplete naming it, completed after a redaction", async () => {
    const A = `user:para-a-${tag()}`;
    const B = `user:para-b-${tag()}`;
    const num = `${Math.floor(Math.random() * 900) + 100}`;
    await append(A, `My home address is ${num} Rue des Lilas, Lyon; I moved there in March.`);
    const note = await append(B, `Dropped the parcel at Alice's place, ${num} rue des Lilas in Lyon, she moved there in March.`);
    const keep = await append(B, 'Bob ordered new running shoes.');
    const view = await erase(A, { publicAttributes: ['Alice'] });
    expect(view.status).toBe('incomplete');
    expect(view.probe.recovered).toBeGreaterThan(view.probe.threshold);
    expect(view.probe.matches.map((m) => m.id)).toContain(note);
    expect(view.residuals.find((r) => r.kind === 'cross-subject')?.detail).toContain(note);
    const { status } = await tv.app.erasures.redact(view.erasureId, [note], 'eraser');
    expect(status).toBe('running');
    const after = await tv.app.erasures.settle(view.erasureId);
    expect(after.status).toBe('completed');
    expect(after.probe.matches).toEqual([]);
    await expect(tv.app.log.get(note)).rejects.toSatisfy((e) => isLetheError(e, 'key_destroyed'));
    expect((await tv.app.log.get(keep)).text).toBe('Bob ordered new running shoes.');
    expect(after.steps.find((s) => s.name === 'redact')?.status).toBe('done');
  });

  it('class C: incomplete with a parametric residual without an unlearning bound, completed with one', async () => {
    const A = `user:c-${tag()}`;
    const e1 = await append(A, `Allergic to penicillin ${tag()}`);
    await tv.app.exposures.register({ corpus: 'ft-2026-11', model: 'agent-ft', ids: [e1] }, 'admin');
    const view = await erase(A);
    expect(view.class).toBe('C');
    expect(view.status).toBe('incomplete');
    expect(view.residuals.find((r) => r.kind === 'parametric')).toMatchObject({ tier: 'model-weights', bound: 'unbounded' });

    const A2 = `user:c2-${tag()}`;
    const e2 = await append(A2, `Allergic to latex ${tag()}`);
    await tv.app.exposures.register({ corpus: 'ft-2026-12', model: 'agent-ft', ids: [e2] }, 'admin');
    const bounded = await erase(A2, { unlearning: { method: 'SISA retrain of shard 3', bound: 0.01 } });
    expect(bounded.class).toBe('C');
    expect(bounded.status).toBe('completed');
    expect(bounded.residuals.find((r) => r.kind === 'parametric')).toMatchObject({ bound: 0.01 });
  });

  it('class C: the stated unlearning method is sealed with the request — no column of the erasure holds it — and the bound alone decides', async () => {
    const A = `user:c3-${tag()}`;
    const e = await append(A, `Allergic to pollen ${tag()}`);
    await tv.app.exposures.register({ corpus: 'ft-2026-13', model: 'agent-ft', ids: [e] }, 'admin');
    const method = `SISA retrain of shard ${tag()}`;
    const { erasureId } = await tv.app.erasures.request({ subject: A, unlearning: { method, bound: 0.02 } }, 'eraser');
    const [open] = await queryRows<Record<string, unknown>>(tv.app.db.db, sql`select * from erasures where erasure_id = ${erasureId}`);
    expect(open!.unlearning).toEqual({ bound: 0.02 });
    const view = await tv.app.erasures.settle(erasureId);
    expect(view.status).toBe('completed');
    expect(view.residuals.find((r) => r.kind === 'parametric')).toMatchObject({ bound: 0.02 });
    // not in any column (the state's residuals and the certificate included), not in the view
    const [row] = await queryRows<Record<string, unknown>>(tv.app.db.db, sql`select * from erasures where erasure_id = ${erasureId}`);
    const clear = Object.values(row!)
      .map((v) => (v instanceof Uint8Array ? Buffer.from(v).toString('latin1') : JSON.stringify(v)))
      .join('\n');
    expect(clear).not.toContain(method);
    expect(clear).not.toContain('SISA');
    expect(JSON.stringify(view)).not.toContain('SISA');
  });

  it('class C: an erasure stored before the method was sealed (the method in the clear column) still reads and completes on its bound', async () => {
    const A = `user:c4-${tag()}`;
    const e = await append(A, `Allergic to dust ${tag()}`);
    await tv.app.exposures.register({ corpus: 'ft-2026-14', model: 'agent-ft', ids: [e] }, 'admin');
    const { erasureId } = await tv.app.erasures.request({ subject: A }, 'eraser');
    await tv.app.db.db.execute(
      sql`update erasures set unlearning = ${JSON.stringify({ method: 'legacy retrain', bound: 0.03 })}::jsonb where erasure_id = ${erasureId}`,
    );
    const view = await tv.app.erasures.settle(erasureId);
    expect(view.status).toBe('completed');
    expect(view.residuals.find((r) => r.kind === 'parametric')).toMatchObject({ bound: 0.03 });
  });

  it('is idempotent per subject while open, and 404s a subject lethe never saw', async () => {
    const A = `user:idem-${tag()}`;
    await append(A, 'something');
    const first = await tv.app.erasures.request({ subject: A }, 'eraser');
    const second = await tv.app.erasures.request({ subject: A }, 'eraser');
    expect(second.erasureId).toBe(first.erasureId);
    expect(second.created).toBe(false);
    await expect(tv.app.keys.lease(A, 'writer')).rejects.toSatisfy((e) => isLetheError(e, 'erasure_in_progress'));
    await tv.app.erasures.settle(first.erasureId);
    await expect(tv.app.erasures.request({ subject: `user:never-${tag()}` }, 'eraser')).rejects.toSatisfy((e) => isLetheError(e, 'not_found'));
  });
});

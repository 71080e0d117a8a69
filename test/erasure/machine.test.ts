/**
 * The erasure state machine on PostgreSQL: the transition table, one row per
 * transition, replicas sharing the work, claims that lapse, a tier that reports no
 * removals, leases that must drain, and certificates that turn final when the epoch
 * holding the last wrapped copy retires.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { verifyCertificate } from '../../src/crypto/certificate.js';
import { ExtractiveRegenerator, type Regenerator } from '../../src/artifacts/regenerator.js';
import { FIRST_RUN, TRANSITIONS } from '../../src/erasure/machine.js';
import { isLetheError, LetheError } from '../../src/errors.js';
import type { App } from '../../src/app/open.js';
import { openTestVault, type TestVault } from '../support/vault.js';

const tag = () => randomBytes(5).toString('hex');
/** Text no other subject shares: random words, so the probe has nothing to find elsewhere. */
const words = (n: number) => Array.from({ length: n }, () => `w${randomBytes(4).toString('hex')}`).join(' ');

describe('the erasure state machine', () => {
  let tv: TestVault;
  let other: App;

  beforeAll(async () => {
    tv = await openTestVault({ extraEnv: { LETHE_LEASE_TTL_SECONDS: '2', LETHE_ERASURE_CLAIM_SECONDS: '1' }, app: { erasureWorker: false } });
    other = await tv.reopen({ erasureWorker: false, searchIndex: true });
  }, 60_000);

  afterAll(async () => {
    await tv?.close();
  });

  const subjectWith = async (n: number) => {
    const s = `user:m-${tag()}`;
    for (let i = 0; i < n; i++) await tv.app.log.append(s, { text: words(8) }, 'writer');
    return s;
  };
  const transitions = (id: string) =>
    queryRows<{ from_step: string | null; to_step: string | null; status: string; replica: string }>(
      tv.app.db.db,
      sql`select from_step, to_step, status, replica from erasure_transitions where erasure_id = ${id} order by id`,
    );

  it('has an explicit transition table: the first run visits every step once, in order', () => {
    expect(FIRST_RUN).toEqual(['classify', 'fingerprint', 'fence', 'destroy', 'drain_leases', 'cascade', 'propagate', 'probe', 'certify']);
    for (let i = 0; i + 1 < FIRST_RUN.length; i++) expect(TRANSITIONS[FIRST_RUN[i]!]).toBe(FIRST_RUN[i + 1]);
    expect(TRANSITIONS.certify).toBeNull();
    expect(TRANSITIONS.redact).toBe('propagate');
  });

  it('writes one transition row per step, following the table', async () => {
    const s = await subjectWith(2);
    const { erasureId } = await tv.app.erasures.request({ subject: s }, 'eraser');
    await tv.app.erasures.settle(erasureId);
    const rows = await transitions(erasureId);
    expect(rows[0]).toMatchObject({ from_step: null, to_step: 'classify', status: 'pending' });
    const steps = rows.slice(1);
    expect(steps.map((r) => r.from_step)).toEqual([...FIRST_RUN]);
    for (const r of steps) expect(r.to_step).toBe(TRANSITIONS[r.from_step as keyof typeof TRANSITIONS]);
    expect(steps.at(-1)).toMatchObject({ from_step: 'certify', to_step: null, status: 'completed' });
  });

  it('two replicas draining at once finish every erasure, each step exactly once', async () => {
    const subjects = await Promise.all(Array.from({ length: 6 }, () => subjectWith(2)));
    const ids = [];
    for (const s of subjects) ids.push((await tv.app.erasures.request({ subject: s }, 'eraser')).erasureId);
    await Promise.all([tv.app.erasures.drain(), other.erasures.drain(), tv.app.erasures.drain(), other.erasures.drain()]);
    for (const id of ids) {
      const view = await tv.app.erasures.settle(id);
      expect(view.status).toBe('completed');
      const froms = (await transitions(id)).slice(1).map((r) => r.from_step);
      expect(froms).toEqual([...FIRST_RUN]);
    }
    const replicas = new Set<string>();
    for (const id of ids) for (const r of await transitions(id)) if (r.from_step) replicas.add(r.replica);
    expect(replicas.size).toBeGreaterThanOrEqual(1);
    const [ledger] = await queryRows<{ n: string }>(
      tv.app.db.db,
      sql`select count(*) as n from destruction_ledger where reason in (select 'erasure ' || erasure_id from erasures where erasure_id in (select json_array_elements_text(${JSON.stringify(ids)}::json)))`,
    );
    expect(Number(ledger!.n)).toBe(ids.length);
  });

  it('leaves an erasure claimed by another replica alone until the claim lapses, then finishes it', async () => {
    const s = await subjectWith(1);
    const { erasureId } = await tv.app.erasures.request({ subject: s }, 'eraser');
    await tv.app.db.db.execute(
      sql`update erasures set claimed_by = 'ghost', claimed_until = now() + interval '1.5 seconds', status = 'running' where erasure_id = ${erasureId}`,
    );
    await other.erasures.drain();
    expect((await tv.app.erasures.get(erasureId)).status).toBe('running');
    expect((await transitions(erasureId)).length).toBe(1);
    const view = await other.erasures.settle(erasureId, 20_000);
    expect(view.status).toBe('completed');
  });

  it('fails the erasure when a tier reports zero removals for a subject provenance says contributed', async () => {
    const s = await subjectWith(1);
    const { erasureId } = await tv.app.erasures.request({ subject: s }, 'eraser');
    expect(await tv.app.erasures.stepOnce()).toBe('classify');
    // the classification says the subject's key is in 3 backups; no backup holds it, so propagation removes nothing
    await tv.app.db.db.execute(sql`update erasures set state = jsonb_set(state, '{contributions,backups}', '3'::jsonb) where erasure_id = ${erasureId}`);
    const view = await tv.app.erasures.settle(erasureId);
    expect(view.status).toBe('failed');
    const propagate = view.steps.find((st) => st.name === 'propagate');
    expect(propagate).toMatchObject({ status: 'failed' });
    expect(propagate!.detail).toMatch(/tier backups reported 0 removals/);
    expect(view.steps.find((st) => st.name === 'probe')?.status).toBe('pending');
    expect(view.certificate).toBeUndefined();
    expect((await transitions(erasureId)).at(-1)).toMatchObject({ from_step: 'propagate', to_step: null, status: 'failed' });
  });

  it('waits for outstanding leases to expire, and states the lease residual with its date', async () => {
    const s = await subjectWith(1);
    const lease = await tv.app.keys.lease(s, 'writer');
    lease.dek.fill(0);
    const { erasureId } = await tv.app.erasures.request({ subject: s }, 'eraser');
    for (let i = 0; i < 5; i++) await tv.app.erasures.stepOnce(); // classify .. drain_leases (parks)
    const parked = await tv.app.erasures.get(erasureId);
    expect(parked.status).toBe('running');
    expect(parked.steps.find((st) => st.name === 'drain_leases')?.detail).toMatch(/waiting for key leases/);
    expect(parked.steps.find((st) => st.name === 'cascade')?.status).toBe('pending');
    const view = await tv.app.erasures.settle(erasureId);
    expect(view.status).toBe('completed');
    const residual = view.residuals.find((r) => r.kind === 'lease');
    expect(residual?.until).toBeDefined();
    expect(Math.abs(new Date(residual!.until!).getTime() - lease.expiresAt.getTime())).toBeLessThan(1000);
    expect(new Date(view.steps.find((st) => st.name === 'cascade')!.startedAt!).getTime()).toBeGreaterThanOrEqual(lease.expiresAt.getTime() - 50);
  });

  it("a redaction keeps another subject fenced when that subject's own erasure is open", async () => {
    const A = `user:red-a-${tag()}`;
    const B = `user:red-b-${tag()}`;
    const secret = words(6);
    await tv.app.log.append(A, { text: `the gate code is ${secret}` }, 'writer');
    const note = (await tv.app.log.append(B, { text: `A told me the gate code is ${secret}` }, 'writer')).entryId;
    await tv.app.log.append(B, { text: words(5) }, 'writer');
    const first = await tv.app.erasures.settle((await tv.app.erasures.request({ subject: A }, 'eraser')).erasureId);
    expect(first.status).toBe('incomplete');
    expect(first.probe.matches.map((m) => m.id)).toContain(note);
    await tv.app.erasures.redact(first.erasureId, [note], 'eraser');
    const ofB = await tv.app.erasures.request({ subject: B }, 'eraser');
    expect(await tv.app.erasures.stepOnce()).toBe('redact'); // A's redaction re-keys B's log while B's erasure is open
    await expect(tv.app.keys.lease(B, 'writer')).rejects.toSatisfy((e) => isLetheError(e, 'erasure_in_progress'));
    await expect(tv.app.log.append(B, { text: 'more' }, 'writer')).rejects.toSatisfy((e) => isLetheError(e, 'erasure_in_progress'));
    expect((await tv.app.erasures.settle(first.erasureId)).status).toBe('completed');
    expect((await tv.app.erasures.settle(ofB.erasureId)).status).toBe('completed');
  });

  it('signs a provisional certificate, and a final one once the epoch that wrapped the key retires', async () => {
    const s = await subjectWith(1);
    const { erasureId } = await tv.app.erasures.request({ subject: s }, 'eraser');
    const view = await tv.app.erasures.settle(erasureId);
    expect(view.certificateState).toBe('provisional');
    const epoch = view.certificate!.payload.wrappedEpochs as number[];
    expect(epoch.length).toBeGreaterThan(0);
    expect(view.residuals.find((r) => r.kind === 'wrapped-dek')?.bound).toMatch(/until epoch \d+ is retired/);
    await tv.app.epochs.rotate('admin');
    expect(await tv.app.erasures.finalizeCertificates()).toBeGreaterThanOrEqual(1);
    const final = await tv.app.erasures.get(erasureId);
    expect(final.certificateState).toBe('final');
    expect(final.certificate!.payload.certificateState).toBe('final');
    expect(final.certificate!.signature).not.toBe(view.certificate!.signature);
    expect(verifyCertificate(final.certificate, await tv.app.certificateKeys.publicKeys()).valid).toBe(true);
    expect(final.residuals.find((r) => r.kind === 'wrapped-dek')).toMatchObject({ bound: 0 });
    // a tampered payload no longer verifies
    const forged = { ...final.certificate!, payload: { ...final.certificate!.payload, erasureId: 'ers_someone_else_000000000' }, algorithm: 'Ed25519' };
    expect(verifyCertificate(forged, await tv.app.certificateKeys.publicKeys()).valid).toBe(false);
  });
});

describe('a cascade interrupted half-way (the regenerator fails once)', () => {
  let tv: TestVault;
  const failOnce = new Set<string>();
  const inner = new ExtractiveRegenerator();
  const flaky: Regenerator = {
    name: 'flaky-extractive',
    async regenerate(input) {
      if (failOnce.delete(input.artifactId)) throw new LetheError('unavailable', 'the regenerator timed out', { retryable: true });
      return inner.regenerate(input);
    },
  };

  beforeAll(async () => {
    tv = await openTestVault({ app: { erasureWorker: false, regenerator: flaky } });
  }, 60_000);
  afterAll(async () => {
    await tv?.close();
  });

  it('still regenerates the digest above a summary the failed attempt already rewrote', async () => {
    const A = `user:flaky-a-${tag()}`;
    const B = `user:flaky-b-${tag()}`;
    const ca = `ACANARY${tag()}`;
    const a1 = (await tv.app.log.append(A, { text: `Alice loves birdwatching in the marshes ${ca}.` }, 'writer')).entryId;
    const b1 = (await tv.app.log.append(B, { text: 'Bob collects vintage synthesizers.' }, 'writer')).entryId;
    const summary = await tv.app.artifacts.write({ kind: 'summary', text: `Interests: birdwatching ${ca}; synthesizers.`, sources: [a1, b1] }, 'writer');
    const digest = await tv.app.artifacts.write({ kind: 'digest', text: `Digest: birdwatching ${ca}, synthesizers.`, sources: [summary.artifactId] }, 'writer');
    failOnce.add(digest.artifactId);
    const { erasureId } = await tv.app.erasures.request({ subject: A }, 'eraser');
    const view = await tv.app.erasures.settle(erasureId);
    expect(view.status).toBe('completed');
    expect(failOnce.size).toBe(0);
    expect(view.steps.find((s) => s.name === 'cascade')?.status).toBe('done');
    const d = await tv.app.artifacts.get(digest.artifactId);
    expect(d.version).toBe(2);
    expect(d.text).not.toContain(ca);
    expect((await tv.app.artifacts.get(summary.artifactId)).version).toBe(2);
    const [retries] = await queryRows<{ n: string }>(
      tv.app.db.db,
      sql`select count(*) as n from erasure_transitions where erasure_id = ${erasureId} and from_step = 'cascade' and to_step = 'cascade'`,
    );
    expect(Number(retries!.n)).toBe(1);
  });
});

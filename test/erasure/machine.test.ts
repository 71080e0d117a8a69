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
import { verifyCertificate } from '../../src/erasure/certificate.js';
import { FIRST_RUN, TRANSITIONS } from '../../src/erasure/engine.js';
import type { Vault } from '../../src/vault/vault.js';
import { openTestVault, type TestVault } from '../support/vault.js';

const tag = () => randomBytes(5).toString('hex');
/** Text no other subject shares: random words, so the probe has nothing to find elsewhere. */
const words = (n: number) => Array.from({ length: n }, () => `w${randomBytes(4).toString('hex')}`).join(' ');

describe('the erasure state machine', () => {
  let tv: TestVault;
  let other: Vault;

  beforeAll(async () => {
    tv = await openTestVault({ extraEnv: { LETHE_LEASE_TTL_SECONDS: '2', LETHE_ERASURE_CLAIM_SECONDS: '1' }, vault: { erasureWorker: false } });
    other = await tv.reopen({ erasureWorker: false, searchIndex: true });
  }, 60_000);

  afterAll(async () => {
    await tv?.close();
  });

  const subjectWith = async (n: number) => {
    const s = `user:m-${tag()}`;
    for (let i = 0; i < n; i++) await tv.vault.log.append(s, { text: words(8) }, 'writer');
    return s;
  };
  const transitions = (id: string) =>
    queryRows<{ from_step: string | null; to_step: string | null; status: string; replica: string }>(
      tv.vault.db.db,
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
    const { erasureId } = await tv.vault.erasures.request({ subject: s }, 'eraser');
    await tv.vault.erasures.settle(erasureId);
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
    for (const s of subjects) ids.push((await tv.vault.erasures.request({ subject: s }, 'eraser')).erasureId);
    await Promise.all([tv.vault.erasures.drain(), other.erasures.drain(), tv.vault.erasures.drain(), other.erasures.drain()]);
    for (const id of ids) {
      const view = await tv.vault.erasures.settle(id);
      expect(view.status).toBe('completed');
      const froms = (await transitions(id)).slice(1).map((r) => r.from_step);
      expect(froms).toEqual([...FIRST_RUN]);
    }
    const replicas = new Set<string>();
    for (const id of ids) for (const r of await transitions(id)) if (r.from_step) replicas.add(r.replica);
    expect(replicas.size).toBeGreaterThanOrEqual(1);
    const [ledger] = await queryRows<{ n: string }>(
      tv.vault.db.db,
      sql`select count(*) as n from destruction_ledger where reason in (select 'erasure ' || erasure_id from erasures where erasure_id in (select json_array_elements_text(${JSON.stringify(ids)}::json)))`,
    );
    expect(Number(ledger!.n)).toBe(ids.length);
  });

  it('leaves an erasure claimed by another replica alone until the claim lapses, then finishes it', async () => {
    const s = await subjectWith(1);
    const { erasureId } = await tv.vault.erasures.request({ subject: s }, 'eraser');
    await tv.vault.db.db.execute(sql`update erasures set claimed_by = 'ghost', claimed_until = now() + interval '1.5 seconds', status = 'running' where erasure_id = ${erasureId}`);
    await other.erasures.drain();
    expect((await tv.vault.erasures.get(erasureId)).status).toBe('running');
    expect((await transitions(erasureId)).length).toBe(1);
    const view = await other.erasures.settle(erasureId, 20_000);
    expect(view.status).toBe('completed');
  });

  it('fails the erasure when a tier reports zero removals for a subject provenance says contributed', async () => {
    const s = await subjectWith(1);
    const { erasureId } = await tv.vault.erasures.request({ subject: s }, 'eraser');
    expect(await tv.vault.erasures.stepOnce()).toBe('classify');
    // the classification says the subject's key is in 3 backups; no backup holds it, so propagation removes nothing
    await tv.vault.db.db.execute(
      sql`update erasures set state = jsonb_set(state, '{contributions,backups}', '3'::jsonb) where erasure_id = ${erasureId}`,
    );
    const view = await tv.vault.erasures.settle(erasureId);
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
    const lease = await tv.vault.keys.lease(s, 'writer');
    lease.dek.fill(0);
    const { erasureId } = await tv.vault.erasures.request({ subject: s }, 'eraser');
    for (let i = 0; i < 5; i++) await tv.vault.erasures.stepOnce(); // classify .. drain_leases (parks)
    const parked = await tv.vault.erasures.get(erasureId);
    expect(parked.status).toBe('running');
    expect(parked.steps.find((st) => st.name === 'drain_leases')?.detail).toMatch(/waiting for key leases/);
    expect(parked.steps.find((st) => st.name === 'cascade')?.status).toBe('pending');
    const view = await tv.vault.erasures.settle(erasureId);
    expect(view.status).toBe('completed');
    const residual = view.residuals.find((r) => r.kind === 'lease');
    expect(residual?.until).toBeDefined();
    expect(Math.abs(new Date(residual!.until!).getTime() - lease.expiresAt.getTime())).toBeLessThan(1000);
    expect(new Date(view.steps.find((st) => st.name === 'cascade')!.startedAt!).getTime()).toBeGreaterThanOrEqual(lease.expiresAt.getTime() - 50);
  });

  it('signs a provisional certificate, and a final one once the epoch that wrapped the key retires', async () => {
    const s = await subjectWith(1);
    const { erasureId } = await tv.vault.erasures.request({ subject: s }, 'eraser');
    const view = await tv.vault.erasures.settle(erasureId);
    expect(view.certificateState).toBe('provisional');
    const epoch = view.certificate!.payload.wrappedEpochs as number[];
    expect(epoch.length).toBeGreaterThan(0);
    expect(view.residuals.find((r) => r.kind === 'wrapped-dek')?.bound).toMatch(/until epoch \d+ is retired/);
    await tv.vault.epochs.rotate('admin');
    expect(await tv.vault.erasures.finalizeCertificates()).toBeGreaterThanOrEqual(1);
    const final = await tv.vault.erasures.get(erasureId);
    expect(final.certificateState).toBe('final');
    expect(final.certificate!.payload.certificateState).toBe('final');
    expect(final.certificate!.signature).not.toBe(view.certificate!.signature);
    expect(verifyCertificate({ ...final.certificate, algorithm: 'Ed25519' }, tv.vault.erasures.publicKey).valid).toBe(true);
    expect(final.residuals.find((r) => r.kind === 'wrapped-dek')).toMatchObject({ bound: 0 });
    // a tampered payload no longer verifies
    const forged = { ...final.certificate!, payload: { ...final.certificate!.payload, erasureId: 'ers_someone_else_000000000' }, algorithm: 'Ed25519' };
    expect(verifyCertificate(forged, tv.vault.erasures.publicKey).valid).toBe(false);
  });
});

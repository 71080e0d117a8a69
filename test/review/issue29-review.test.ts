/**
 * Review of issue 29's fixes as an attacker with write access to the database would
 * try them. What still worked and is fixed here:
 *
 * - the finalizer signed the row's residuals into the final certificate, unchecked: an
 *   edit in SQL signed a residual away. Now the row's residuals must be those the checked
 *   provisional certificate signed, or the finalization is refused (certificate-audit.ts).
 * - the ledger flush put whatever body `ledger_chain` held into the backup bucket (where
 *   compliance-mode Object Lock keeps it for ten years) and a head naming it, and
 *   acknowledged the destructions after it: a row inserted in SQL broke the chain for
 *   good (every later restore refused unless forced). Now each record's MAC, sequence
 *   number and link are checked before anything is put (ledger-chain.ts `store`).
 *
 * - repair-ledger put records back create-if-absent only: one overwritten in place (a
 *   plain PutObject, which lethe's least-privilege credential may do) stayed, the anchor
 *   stayed cut, and no destruction became durable again. Now a current version that no
 *   vault sealed is replaced by the database's record (anchor.ts `repairCut`).
 *
 * - certify signed whatever probe result the erasure's row held, and a row moved past
 *   its probe or its destroy step in SQL was certified. Now the probe's result enters the
 *   audit chain with its commit, and certify re-probes when the row's result is not the
 *   audited one, and refuses a key whose destruction the chain does not hold
 *   (probe-audit.ts).
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chainRecordKey, LEDGER_HEAD_KEY } from '../../src/backups/ledger-chain.js';
import type { Certificate } from '../../src/crypto/certificate.js';
import { ok } from '../support/http.js';
import { openTestApp, type TestApp } from '../support/vault.js';
import { readJson } from '../backups/support.js';

const tag = () => randomBytes(5).toString('hex');
const words = (n: number) => Array.from({ length: n }, () => `w${randomBytes(4).toString('hex')}`).join(' ');

describe('review: the finalizer and the row state it still trusts (M1)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await openTestApp({ app: { erasureWorker: false } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("a final certificate keeps every residual the checked provisional one stated: residuals removed from the row's state in SQL are not signed away", async () => {
    const subject = `user:rev-res-${tag()}`;
    await t.app.log.append(subject, { text: words(8) }, 'writer');
    const { erasureId } = await t.app.erasures.request({ subject }, 'eraser');
    const view = await t.app.erasures.settle(erasureId);
    expect(view.certificateState).toBe('provisional');
    const provisional = await ok<Certificate>(t.call('GET', `/v1/erasures/${erasureId}/certificate`, { role: 'eraser' }), 200);
    const stated = (provisional.payload.residuals as Array<{ kind: string }>).map((r) => r.kind).sort();
    expect(stated.length).toBeGreaterThan(0);
    // the insider's SQL: the row's residuals emptied (no root key needed; nothing audited is touched)
    await t.app.db.db.execute(sql`update erasures set state = jsonb_set(state, '{residuals}', '[]'::jsonb) where erasure_id = ${erasureId}`);
    await t.app.epochs.rotate('admin');
    await t.app.erasures.finalizeCertificates();
    const after = await ok<Certificate>(t.call('GET', `/v1/erasures/${erasureId}/certificate`, { role: 'eraser' }), 200);
    // refused: the certificate stays the checked provisional one, stating every residual, and the refusal names them
    expect(after).toEqual(provisional);
    const refused = (await t.app.erasures.get(erasureId)).residuals.find((r) => r.kind === 'certificate-refused');
    expect(refused?.detail).toContain(
      `residuals: the erasure's row states none, the signed certificate ${(provisional.payload.residuals as Array<{ kind: string }>).map((r) => r.kind).join(', ')}`,
    );
    expect(stated.length).toBeGreaterThan(0);
  });

  it('a probe result edited in SQL before certify (the step moved past the probe) is not signed: certify probes again and names the copy', async () => {
    const A = `user:rev-pre-a-${tag()}`;
    const secret = words(6);
    await t.app.log.append(A, { text: `the alarm code is ${secret}` }, 'writer');
    const copy = await t.app.log.append(`user:rev-pre-b-${tag()}`, { text: `A told me the alarm code is ${secret}` }, 'writer');
    const { erasureId } = await t.app.erasures.request({ subject: A }, 'eraser');
    for (let i = 0; i < 20; i++) {
      const [row] = (await t.app.db.db.execute(sql`select step from erasures where erasure_id = ${erasureId}`)) as unknown as Array<{ step: string }>;
      if (row!.step === 'probe') break;
      await t.app.erasures.stepOnce();
    }
    // the insider, while the erasure waits before its probe: the probe "ran" and found nothing
    await t.app.db.db.execute(sql`update erasures set step = 'certify',
        state = jsonb_set(state, '{probe}', jsonb_build_object('recovered', 0, 'threshold', 0.2, 'matches', '[]'::jsonb))
      where erasure_id = ${erasureId}`);
    const view = await t.app.erasures.settle(erasureId);
    expect(view.status, 'the vault signed a probe result edited in SQL').toBe('incomplete');
    expect(view.probe.matches.map((m) => m.id)).toContain(copy.entryId);
    const cert = await ok<Certificate>(t.call('GET', `/v1/erasures/${erasureId}/certificate`, { role: 'eraser' }), 200);
    expect(cert.payload.status).toBe('incomplete');
  });

  it("the finalizer does not take the 'signed before sign rows existed' path for a certificate whose sign rows were re-keyed in SQL", async () => {
    const subject = `user:rev-sign-${tag()}`;
    await t.app.log.append(subject, { text: words(8) }, 'writer');
    const { erasureId } = await t.app.erasures.request({ subject }, 'eraser');
    await t.app.erasures.settle(erasureId);
    const first = await ok<Certificate>(t.call('GET', `/v1/erasures/${erasureId}/certificate`, { role: 'eraser' }), 200);
    // the insider moves every sign row of the erasure out of the finalizer's sight (one SQL update)
    await t.app.db.db.execute(sql`update audit_log set key_id = 'ers_hidden' where action = 'erasure.certificate.sign' and key_id = ${erasureId}`);
    await t.app.epochs.rotate('admin');
    await t.app.erasures.finalizeCertificates();
    const after = await t.app.erasures.get(erasureId);
    expect(after.certificateState, 'a certificate whose sign rows were hidden was signed final').toBe('provisional');
    expect(after.residuals.find((r) => r.kind === 'certificate-refused')?.detail).toMatch(/holds no record of signing this certificate/);
    expect(await ok<Certificate>(t.call('GET', `/v1/erasures/${erasureId}/certificate`, { role: 'eraser' }), 200)).toEqual(first);
  });

  it('a key destruction the audit chain does not hold is not certified: the step was moved past destroy in SQL', async () => {
    const A = `user:rev-skip-${tag()}`;
    await t.app.log.append(A, { text: words(8) }, 'writer');
    const { erasureId } = await t.app.erasures.request({ subject: A }, 'eraser');
    // classify and fingerprint run; then the insider jumps straight to certify, the key never destroyed
    for (let i = 0; i < 20; i++) {
      const [row] = (await t.app.db.db.execute(sql`select step from erasures where erasure_id = ${erasureId}`)) as unknown as Array<{ step: string }>;
      if (row!.step === 'destroy') break;
      await t.app.erasures.stepOnce();
    }
    await t.app.db.db.execute(sql`update erasures set step = 'certify' where erasure_id = ${erasureId}`);
    await t.app.erasures.stepOnce();
    const [after] = (await t.app.db.db.execute(sql`select status, step, certificate from erasures where erasure_id = ${erasureId}`)) as unknown as Array<{
      status: string;
      step: string;
      certificate: unknown;
    }>;
    expect(after!.certificate, 'a certificate was signed for a key never destroyed').toBeNull();
    expect(after!.step).toBe('certify');
    const transitions = await t.app.erasures.transitions(erasureId);
    expect(transitions.at(-1)?.detail).toMatch(/refusing to certify: the audit chain holds no destruction of key/);
  });
});

describe('review: the anchor on the local folder', () => {
  let tv: TestApp;
  beforeAll(async () => {
    tv = await openTestApp({ extraEnv: { LETHE_BACKUP_PROPAGATE_SECONDS: '86400', LETHE_LEDGER_CHECK_SECONDS: '86400' } });
  }, 120_000);
  afterAll(async () => {
    await tv?.close();
  });

  it('a record the database holds but lethe never sealed (inserted in SQL) is not written to the bucket, where Object Lock would keep it for good', async () => {
    const a = await tv.app.log.append(`user:rev-poison-${tag()}`, { text: words(6) }, 'writer');
    await tv.app.keys.destroyKey(a.keyId, { reason: 'erasure', actor: 'eraser' });
    expect((await tv.app.backups.awaitDurable([a.keyId], 30_000)).pending).toEqual([]);
    const bucket = tv.app.backups.store.bucket;
    const head = await readJson<{ seq: number }>(tv.app.backups.store, LEDGER_HEAD_KEY);
    // the insider's SQL: an unstored record after the last, with any body and MAC
    const forged = JSON.stringify({
      format: 'lethe-ledger-chain/1',
      seq: head.seq + 1,
      prev: '0'.repeat(64),
      at: new Date().toISOString(),
      auditHead: null,
      destructions: [],
      manifests: [],
      mac: 'f'.repeat(64),
    });
    await tv.app.db.db.execute(
      sql`insert into ledger_chain (bucket, seq, body, mac, created_at) values (${bucket}, ${head.seq + 1}, ${forged}, ${Buffer.from('f'.repeat(64), 'hex')}, now())`,
    );
    const b = await tv.app.log.append(`user:rev-poison-b-${tag()}`, { text: words(6) }, 'writer');
    await tv.app.keys.destroyKey(b.keyId, { reason: 'erasure', actor: 'eraser' });
    const waited = await tv.app.backups.awaitDurable([b.keyId], 3000);
    // nothing unsealed reached the bucket, and its chain still verifies
    const written = await tv.app.backups.store.head(chainRecordKey(head.seq + 1));
    const chain = await tv.app.backups.ledgerChain().then(
      () => 'verifies',
      (e: Error) => e.message,
    );
    expect(waited.pending).toEqual([b.keyId]);
    expect(waited.error).toMatch(/record \d+ .*(MAC|sealed)/);
    expect(written, 'an unsealed record was written to the backup bucket').toBeUndefined();
    expect(chain).toBe('verifies');
  });

  it('repair-ledger puts back a record whose current version was overwritten (a plain PutObject), and the alarm ends', async () => {
    // the unsealed row of the test before is refused for good: this one starts from a clean state
    await tv.app.db.db.execute(sql`delete from ledger_chain where bucket = ${tv.app.backups.store.bucket} and stored_at is null`);
    const a = await tv.app.log.append(`user:rev-over-${tag()}`, { text: words(6) }, 'writer');
    await tv.app.keys.destroyKey(a.keyId, { reason: 'erasure', actor: 'eraser' });
    expect((await tv.app.backups.awaitDurable([a.keyId], 30_000)).pending).toEqual([]);
    expect(await tv.app.backups.checkAnchor()).toBeUndefined();
    const head = await readJson<{ seq: number }>(tv.app.backups.store, LEDGER_HEAD_KEY);
    // anyone who may put objects in the bucket (lethe's least-privilege credential may) overwrites the last record
    await tv.app.backups.store.put(chainRecordKey(head.seq), Buffer.from('{"noise":true}'));
    expect(await tv.app.backups.checkAnchor()).toMatch(/was replaced in the backup bucket/);
    await tv.app.backups.repairLedger();
    expect(
      await tv.app.backups.checkAnchor(),
      'repair-ledger left the overwritten record in place: the chain stays cut, no destruction is durable again',
    ).toBeUndefined();
    const b = await tv.app.log.append(`user:rev-over-b-${tag()}`, { text: words(6) }, 'writer');
    await tv.app.keys.destroyKey(b.keyId, { reason: 'erasure', actor: 'eraser' });
    expect((await tv.app.backups.awaitDurable([b.keyId], 30_000)).pending).toEqual([]);
    await tv.app.backups.ledgerChain();
  });
});

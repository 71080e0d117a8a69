/**
 * Certificates you can trust, on PostgreSQL: the finalizer turns a newer certificate
 * final however many stranded `incomplete` erasures exist before it; certificates are
 * signed by the key provider's own signing key and name it (`signingKeyId`) inside the
 * signed payload; GET /v1/certificates/keys lists current and retired public keys
 * without a token; a rotation (admin) retires the key — its private file destroyed, its
 * public part still listed, so older certificates verify — and every replica signs with
 * the new key at once; a fresh vault lists its own key alone, a vault from before
 * signing keys lists the root-derived key too (retired), and a certificate it stored
 * then (root-derived key, no key id) still verifies and turns final under the current
 * key; a forgery
 * signed with another key verifies against no trusted set; GET
 * /v1/erasures/{id}/certificate answers the document alone, 409 before there is one,
 * 404 problem+json for unknown or malformed ids.
 *
 * Against database write access (issue 29, M1): every certificate signed enters the
 * audit chain (its digest and the outcome it states); an `incomplete` erasure edited in
 * SQL to `completed` — recovered 0, no matches, its fingerprints key gone, its stored
 * certificate rewritten to match — is not signed final by the next KEK rotation: the
 * stored certificate stays as it was (and does not verify), and the refusal is shown on
 * the erasure, audited, logged and counted. An erasure edited only in its row is refused
 * too; an untampered one still turns final, its final certificate audited.
 *
 * The background worker is off: erasures are driven with `settle`.
 */
import { randomBytes } from 'node:crypto';
import { readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Certificate,
  certificateDigest,
  certificateKeyId,
  certificatePublicKey,
  type Json,
  signCertificate,
  verifyCertificate,
} from '../../src/crypto/certificate.js';
import { deriveSubkey, fromBase64Url } from '../../src/crypto/index.js';
import { queryRows } from '../../src/db/client.js';
import { FINALIZE_BATCH } from '../../src/erasure/certificates.js';
import type { SigningKeyInfo } from '../../src/keyprovider/provider.js';
import { createLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { expectProblem, ok } from '../support/http.js';
import { runCli } from '../support/process.js';
import { asKeyringBeforeSigningKeys, openTestApp, type TestApp } from '../support/vault.js';
import { auditCount } from './fixtures.js';

const tag = () => randomBytes(5).toString('hex');
/** Text no other subject shares: random words, so the probe has nothing to find elsewhere. */
const words = (n: number) => Array.from({ length: n }, () => `w${randomBytes(4).toString('hex')}`).join(' ');

async function subjectWith(t: TestApp, n: number): Promise<string> {
  const s = `user:cert-${tag()}`;
  for (let i = 0; i < n; i++) await t.app.log.append(s, { text: words(8) }, 'writer');
  return s;
}

async function erase(t: TestApp, subject: string) {
  const { erasureId } = await t.app.erasures.request({ subject }, 'eraser');
  return t.app.erasures.settle(erasureId);
}

async function listedKeys(t: TestApp): Promise<SigningKeyInfo[]> {
  return (await ok<{ keys: SigningKeyInfo[] }>(t.call('GET', '/v1/certificates/keys', { role: 'none' }), 200)).keys;
}

async function storedCertificate(t: TestApp, erasureId: string): Promise<Certificate> {
  return ok<Certificate>(t.call('GET', `/v1/erasures/${erasureId}/certificate`, { role: 'eraser' }), 200);
}

describe('the certificate finalizer', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await openTestApp({ app: { erasureWorker: false } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it(`150 stranded incomplete erasures do not stop a newer certificate from turning final (batches of ${FINALIZE_BATCH})`, async () => {
    // a real stranded erasure: another subject's record carries the content, so it ends
    // incomplete and keeps its own key (the sealed fingerprints) for a redaction; every
    // rotation re-wraps that key under the active epoch, so its certificate never turns final
    const A = `user:stranded-a-${tag()}`;
    const B = `user:stranded-b-${tag()}`;
    const secret = words(6);
    await t.app.log.append(A, { text: `the gate code is ${secret}` }, 'writer');
    await t.app.log.append(B, { text: `A told me the gate code is ${secret}` }, 'writer');
    await t.app.log.append(B, { text: words(5) }, 'writer');
    const stranded = await erase(t, A);
    expect(stranded.status).toBe('incomplete');
    expect(stranded.certificateState).toBe('provisional');
    // 150 more exactly like it, finished earlier: copies of its row (the finalizer reads only the erasures table's
    // status, certificate state, own key and state, and the epochs of what the erasure destroyed or keeps)
    await t.app.db.db.execute(sql`
      insert into erasures (erasure_id, subject_hash, status, class, step, legal_basis, unlearning, seal_key_id, sealed_request,
        sealed_fingerprints, state, certificate, certificate_state, attempts, last_error, claimed_by, claimed_until, not_before,
        created_at, updated_at, finished_at)
      select 'ers_' || lpad(g::text, 22, 'S'), subject_hash, status, class, step, legal_basis, unlearning, seal_key_id, sealed_request,
        sealed_fingerprints, state, certificate, certificate_state, attempts, last_error, claimed_by, claimed_until, not_before,
        created_at - g * interval '1 minute', updated_at - g * interval '1 minute', finished_at - g * interval '1 minute'
      from erasures, generate_series(1, 150) g where erasure_id = ${stranded.erasureId}`);
    // a newer erasure, provisional until the epoch that wrapped its key retires
    const fresh = await erase(t, await subjectWith(t, 2));
    expect(fresh.status).toBe('completed');
    expect(fresh.certificateState).toBe('provisional');
    await t.app.epochs.rotate('admin');
    expect(await t.app.erasures.finalizeCertificates()).toBe(1);
    const after = await t.app.erasures.get(fresh.erasureId);
    expect(after.certificateState).toBe('final');
    expect(after.certificate!.payload.certificateState).toBe('final');
    expect(verifyCertificate(after.certificate, await t.app.certificateKeys.publicKeys()).valid).toBe(true);
    // the stranded ones are still provisional, as they must be
    const [row] = await queryRows<{ n: number }>(
      t.app.db.db,
      sql`select count(*)::int as n from erasures where status = 'incomplete' and certificate_state = 'provisional'`,
    );
    expect(row!.n).toBe(151);
    // a second pass with nothing newly retired reads nothing
    expect(await t.app.erasures.finalizeCertificates()).toBe(0);
  });
});

describe('certificate-signing keys', () => {
  let t: TestApp;
  let first: SigningKeyInfo;
  beforeAll(async () => {
    t = await openTestApp({ app: { erasureWorker: false } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('GET /v1/certificates/keys lists, without a token, one key on a fresh vault: its own, current, its id derived from the key', async () => {
    const keys = await listedKeys(t);
    expect(keys.map((k) => [k.state, k.origin])).toEqual([['current', 'keyring']]);
    const [key] = keys;
    expect(key!.algorithm).toBe('Ed25519');
    expect(key!.keyId).toBe(certificateKeyId(fromBase64Url(key!.publicKey)!));
    expect(key!.createdAt).toMatch(/^\d{4}-/);
    expect(key!.retiredAt).toBeNull();
    // not the key the root key derives (a fresh vault never signed with it)
    const rootDerived = deriveSubkey(Buffer.from(t.env.LETHE_ROOT_KEY!, 'base64'), 'certificate-signing');
    expect(key!.publicKey).not.toBe(Buffer.from(certificatePublicKey(rootDerived)).toString('base64url'));
    // the same list again, and to a bogus token too
    const again = await ok<{ keys: SigningKeyInfo[] }>(
      t.call('GET', '/v1/certificates/keys', { role: 'none', headers: { authorization: 'Bearer not-a-known-token-0001' } }),
      200,
    );
    expect(again.keys).toEqual(keys);
    first = key!;
  });

  it('a certificate names its key inside the signed payload; after a rotation it still verifies against the listed retired key, and the next one names the new key', async () => {
    const before = await erase(t, await subjectWith(t, 1));
    const old = await storedCertificate(t, before.erasureId);
    expect(old.payload.signingKeyId).toBe(first.keyId);
    expect(old.publicKey).toBe(first.publicKey);

    // admin only
    await expectProblem(t.call('POST', '/v1/certificates/keys/rotate', { role: 'eraser' }), 403, 'forbidden');
    await expectProblem(t.call('POST', '/v1/certificates/keys/rotate', { role: 'none' }), 401, 'unauthorized');
    const rotation = await ok<{ current: SigningKeyInfo; retired: SigningKeyInfo }>(t.call('POST', '/v1/certificates/keys/rotate', { role: 'admin' }), 200);
    expect(rotation.retired).toMatchObject({ keyId: first.keyId, publicKey: first.publicKey, state: 'retired', retiredAt: expect.any(String) });
    expect(rotation.current).toMatchObject({ state: 'current', origin: 'keyring' });
    expect(rotation.current.keyId).not.toBe(first.keyId);
    expect(await auditCount(t.app.db, 'certificate.key.rotate', {})).toBe(1);

    const keys = await listedKeys(t);
    expect(keys[0]).toEqual(rotation.current);
    expect(keys.find((k) => k.keyId === first.keyId)).toEqual(rotation.retired);
    // the old certificate verifies against the listed keys (the retired one) and not against the current key alone
    expect(
      verifyCertificate(
        old,
        keys.map((k) => k.publicKey),
      ),
    ).toEqual({ valid: true, keyId: first.keyId });
    expect(verifyCertificate(old, rotation.current.publicKey)).toMatchObject({ valid: false, reason: /not one of the 1 trusted key/ });

    const afterwards = await erase(t, await subjectWith(t, 1));
    const fresh = await storedCertificate(t, afterwards.erasureId);
    expect(fresh.payload.signingKeyId).toBe(rotation.current.keyId);
    expect(
      verifyCertificate(
        fresh,
        keys.map((k) => k.publicKey),
      ),
    ).toEqual({ valid: true, keyId: rotation.current.keyId });

    // the retired key's private part is gone from the keyring: only the current key has a file
    const files = await readdir(path.join(t.config.keyringDir, 'certificate-signing'));
    expect(files.filter((f) => f.endsWith('.key'))).toEqual([`${rotation.current.keyId}.key`]);
    // another replica on the same keyring signs with the new key at once
    const replica = await t.reopen({ erasureWorker: false, listen: false });
    expect((await replica.certificateKeys.sign({ probe: 'replica' })).payload.signingKeyId).toBe(rotation.current.keyId);
  });

  it('a forgery — flipped to completed, re-signed with a random key, its embedded key replaced — verifies against no trusted set', async () => {
    const A = `user:forge-a-${tag()}`;
    const secret = words(6);
    await t.app.log.append(A, { text: `the vault code is ${secret}` }, 'writer');
    await t.app.log.append(`user:forge-b-${tag()}`, { text: `A said the vault code is ${secret}` }, 'writer');
    const view = await erase(t, A);
    expect(view.status).toBe('incomplete');
    const honest = await storedCertificate(t, view.erasureId);
    const keys = (await listedKeys(t)).map((k) => k.publicKey);
    expect(verifyCertificate(honest, keys).valid).toBe(true);
    const forger = randomBytes(32);
    const flipped = { ...honest.payload, status: 'completed', probe: { recovered: 0, threshold: 0.15, matches: [] } };
    const forged = signCertificate(flipped, forger);
    expect(forged.publicKey).not.toBe(honest.publicKey);
    // keeping the vault's key id: the key it carries is not that key
    expect(verifyCertificate(forged, keys)).toMatchObject({ valid: false, keyId: honest.payload.signingKeyId });
    // the embedded key put back to the vault's: the signature does not hold under it
    expect(verifyCertificate({ ...forged, publicKey: honest.publicKey }, keys)).toMatchObject({ valid: false, reason: /signature does not match/ });
    // naming its own key: not a key of this vault
    const ownKey = signCertificate({ ...flipped, signingKeyId: certificateKeyId(certificatePublicKey(forger)) }, forger);
    expect(verifyCertificate(ownKey, keys)).toMatchObject({ valid: false, reason: /not one of the \d trusted key/ });
  });
});

describe('a vault from before signing keys (issue 13)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await openTestApp({ app: { erasureWorker: false } });
    // its keyring as lethe left it then: epochs, no certificate-signing keys (nothing signed yet)
    asKeyringBeforeSigningKeys(t.config.keyringDir);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('GET /v1/certificates/keys lists a current key of its own and the retired root-derived key that signed before, ids derived from the keys', async () => {
    const keys = await listedKeys(t);
    expect(keys.map((k) => [k.state, k.origin])).toEqual([
      ['current', 'keyring'],
      ['retired', 'root-derived'],
    ]);
    for (const k of keys) {
      expect(k.algorithm).toBe('Ed25519');
      expect(k.keyId).toBe(certificateKeyId(fromBase64Url(k.publicKey)!));
    }
    const rootDerived = deriveSubkey(Buffer.from(t.env.LETHE_ROOT_KEY!, 'base64'), 'certificate-signing');
    expect(keys[1]!.publicKey).toBe(Buffer.from(certificatePublicKey(rootDerived)).toString('base64url'));
    expect(keys[1]!.retiredAt).toMatch(/^\d{4}-/);
    expect(keys[0]!.createdAt).toMatch(/^\d{4}-/);
    expect(keys[0]!.publicKey).not.toBe(keys[1]!.publicKey);
    // and keeps listing them: a reopened vault (another replica) lists the same
    const replica = await t.reopen({ erasureWorker: false, listen: false });
    expect(await replica.certificateKeys.list()).toEqual(keys);
  });

  it('a certificate stored before signing keys (root-derived key, no key id) still verifies, and turns final signed by the current key', async () => {
    const view = await erase(t, await subjectWith(t, 1));
    expect(view.certificateState).toBe('provisional');
    // an erasure as this vault stored it before issue 13 (the root-derived key, no signingKeyId) and before its
    // certificates entered the audit chain (issue 29): a copy of the row under an id that has no audit rows
    const legacyId = `ers_${'L'.repeat(22)}`;
    const keys = await listedKeys(t);
    const rootKey = keys.find((k) => k.origin === 'root-derived')!;
    // issued while the root-derived key still signed: before its retirement
    const issuedAt = new Date(Date.parse(rootKey.retiredAt!) - 60_000).toISOString();
    const payload: Record<string, Json> = { ...(view.certificate!.payload as Record<string, Json>), erasureId: legacyId, issuedAt };
    delete payload.signingKeyId;
    const rootDerived = deriveSubkey(Buffer.from(t.env.LETHE_ROOT_KEY!, 'base64'), 'certificate-signing');
    const legacy = signCertificate(payload, rootDerived);
    await t.app.db.db.execute(sql`
      insert into erasures (erasure_id, subject_hash, status, class, step, legal_basis, unlearning, seal_key_id, sealed_request,
        sealed_fingerprints, state, certificate, certificate_state, attempts, last_error, claimed_by, claimed_until, not_before,
        created_at, updated_at, finished_at)
      select ${legacyId}, subject_hash, status, class, step, legal_basis, unlearning, seal_key_id, sealed_request,
        sealed_fingerprints, state, ${JSON.stringify(legacy)}::jsonb, certificate_state, attempts, last_error, claimed_by, claimed_until, not_before,
        created_at, updated_at, finished_at
      from erasures where erasure_id = ${view.erasureId}`);
    expect(await auditCount(t.app.db, 'erasure.certificate.sign', { keyId: legacyId })).toBe(0);

    const served = await storedCertificate(t, legacyId);
    expect(served).toEqual(legacy);
    expect(verifyCertificate(served, keys)).toEqual({ valid: true, keyId: rootKey.keyId });
    expect(verifyCertificate(served, keys[0]!.publicKey).valid).toBe(false);

    await t.app.epochs.rotate('admin');
    expect(await t.app.erasures.finalizeCertificates()).toBeGreaterThanOrEqual(1);
    const final = await storedCertificate(t, legacyId);
    expect(final.payload).toMatchObject({ certificateState: 'final', signingKeyId: keys[0]!.keyId, erasureId: legacyId });
    expect(
      verifyCertificate(
        final,
        keys.map((k) => k.publicKey),
      ),
    ).toEqual({ valid: true, keyId: keys[0]!.keyId });
    expect(await auditCount(t.app.db, 'erasure.certificate.sign', { keyId: legacyId })).toBe(1);
  });
});

describe('the finalizer against database write access (issue 29, M1)', () => {
  let t: TestApp;
  const metrics = createMetrics();
  const logs = new PassThrough();
  let logged = '';
  beforeAll(async () => {
    logs.on('data', (chunk: Buffer) => void (logged += chunk.toString('utf8')));
    t = await openTestApp({ app: { erasureWorker: false, metrics, logger: createLogger('error', logs) } });
  });
  afterAll(async () => {
    await t?.close();
  });

  /** An erasure that ends `incomplete`: another subject's record carries the content (its fingerprints key is kept for a redaction). */
  async function incompleteErasure() {
    const A = `user:m1-a-${tag()}`;
    const secret = words(6);
    await t.app.log.append(A, { text: `the alarm code is ${secret}` }, 'writer');
    await t.app.log.append(`user:m1-b-${tag()}`, { text: `A told me the alarm code is ${secret}` }, 'writer');
    const view = await erase(t, A);
    expect(view.status).toBe('incomplete');
    expect(view.certificateState).toBe('provisional');
    expect(view.probe.matches.length).toBeGreaterThan(0);
    return view;
  }

  /**
   * The insider's SQL, with write access to the database and no root key: the row says completed, nothing
   * recovered, no match, its fingerprints key gone (so the finalizer selects it); `certificate` replaces the stored one.
   */
  async function editToCompleted(erasureId: string, certificate?: Certificate): Promise<void> {
    const replaced = certificate ? sql`, certificate = ${JSON.stringify(certificate)}::jsonb` : sql``;
    await t.app.db.db.execute(sql`
      update erasures set status = 'completed', seal_key_id = null,
        state = jsonb_set(jsonb_set(state, '{probe,recovered}', '0'::jsonb), '{probe,matches}', '[]'::jsonb)${replaced}
      where erasure_id = ${erasureId}`);
  }

  /** `lethe certificate verify` of this certificate against the vault's listed keys: its exit code and output. */
  async function cliVerify(certificate: unknown) {
    const certFile = path.join(t.dataDir, `cert-${tag()}.json`);
    const keysFile = path.join(t.dataDir, `keys-${tag()}.json`);
    await writeFile(certFile, JSON.stringify(certificate));
    await writeFile(keysFile, JSON.stringify({ keys: await listedKeys(t) }));
    return runCli(['certificate', 'verify', certFile, '--public-key-file', keysFile], t.env, { timeoutMs: 60_000 });
  }

  it('every certificate signed enters the audit chain with its digest and the outcome it states; an untampered one still turns final, audited again', async () => {
    const view = await erase(t, await subjectWith(t, 2));
    expect(view.certificateState).toBe('provisional');
    const provisional = await storedCertificate(t, view.erasureId);
    const [signed] = await queryRows<{ detail: string }>(
      t.app.db.db,
      sql`select detail from audit_log where action = 'erasure.certificate.sign' and key_id = ${view.erasureId}`,
    );
    expect(JSON.parse(signed!.detail)).toMatchObject({
      erasureId: view.erasureId,
      digest: certificateDigest(provisional.payload),
      status: 'completed',
      certificateState: 'provisional',
      recovered: 0,
      matches: 0,
      fingerprintsKept: false,
    });
    await t.app.epochs.rotate('admin');
    await t.app.erasures.finalizeCertificates();
    const final = await storedCertificate(t, view.erasureId);
    expect(final.payload.certificateState).toBe('final');
    expect(verifyCertificate(final, await t.app.certificateKeys.publicKeys()).valid).toBe(true);
    const rows = await queryRows<{ detail: string }>(
      t.app.db.db,
      sql`select detail from audit_log where action = 'erasure.certificate.sign' and key_id = ${view.erasureId} order by seq`,
    );
    expect(rows.map((r) => JSON.parse(r.detail) as Record<string, unknown>).map((d) => [d.certificateState, d.digest])).toEqual([
      ['provisional', certificateDigest(provisional.payload)],
      ['final', certificateDigest(final.payload)],
    ]);
    expect((await t.app.erasures.get(view.erasureId)).residuals.map((r) => r.kind)).not.toContain('certificate-refused');
  });

  it('an incomplete erasure edited in SQL to completed, recovered 0, no matches, is not signed final by a routine KEK rotation; verify calls nothing of it valid', async () => {
    const view = await incompleteErasure();
    const honest = await storedCertificate(t, view.erasureId);
    // the stored certificate rewritten to say the same (its signature no longer holds)
    const probe = honest.payload.probe as Record<string, Json>;
    const tampered: Certificate = {
      ...honest,
      payload: {
        ...honest.payload,
        status: 'completed',
        probe: { ...probe, recovered: 0, matches: [] },
        residuals: (honest.payload.residuals as Array<Record<string, Json>>).filter((r) => r.kind !== 'fingerprints' && r.kind !== 'cross-subject'),
      },
    };
    await editToCompleted(view.erasureId, tampered);

    // a routine KEK rotation retires the epoch that wrapped the destroyed key: what finalizes provisional certificates
    await t.app.epochs.rotate('admin');
    await t.app.erasures.finalizeCertificates();

    const after = await t.app.erasures.get(view.erasureId);
    expect(after.certificateState).toBe('provisional');
    // the stored certificate is left as it was: the vault signed nothing for it after the edit
    expect(await storedCertificate(t, view.erasureId)).toEqual(tampered);
    expect(await auditCount(t.app.db, 'erasure.certificate.sign', { keyId: view.erasureId })).toBe(1);
    const verdict = await cliVerify(await storedCertificate(t, view.erasureId));
    expect(verdict.code).toBe(1);
    expect(verdict.stderr).toContain('certificate does not verify');

    // the alarm: a residual on the erasure, an audit row, an error log, the metric
    const refused = after.residuals.find((r) => r.kind === 'certificate-refused');
    expect(refused?.detail).toMatch(/does not verify under the vault's keys/);
    expect(await auditCount(t.app.db, 'erasure.certificate.refuse', { keyId: view.erasureId })).toBe(1);
    expect(logged).toContain('refused to sign a certificate final');
    expect(logged).toContain(view.erasureId);
    expect((await metrics.certificateRefusals.get()).values).toContainEqual(expect.objectContaining({ labels: { reason: 'signature' }, value: 1 }));
    // a later retirement does not check it again (it waits for a person)
    await t.app.epochs.rotate('admin');
    await t.app.erasures.finalizeCertificates();
    expect(await auditCount(t.app.db, 'erasure.certificate.refuse', { keyId: view.erasureId })).toBe(1);
    expect((await t.app.erasures.get(view.erasureId)).certificateState).toBe('provisional');
  });

  it('an erasure edited only in its row (the genuine certificate kept) is refused too, naming what disagrees', async () => {
    const view = await incompleteErasure();
    const honest = await storedCertificate(t, view.erasureId);
    await editToCompleted(view.erasureId);
    await t.app.epochs.rotate('admin');
    await t.app.erasures.finalizeCertificates();
    const after = await t.app.erasures.get(view.erasureId);
    expect(after.certificateState).toBe('provisional');
    expect(await storedCertificate(t, view.erasureId)).toEqual(honest);
    expect(after.residuals.find((r) => r.kind === 'certificate-refused')?.detail).toMatch(
      /status: the erasure's row says "completed", the signed certificate "incomplete", the audit chain \(row \d+\) "incomplete"/,
    );
    expect((await metrics.certificateRefusals.get()).values).toContainEqual(expect.objectContaining({ labels: { reason: 'outcome' }, value: 1 }));
  });

  it('an audit row edited to agree with an edited row does not verify, and is refused', async () => {
    const view = await incompleteErasure();
    const honest = await storedCertificate(t, view.erasureId);
    await editToCompleted(view.erasureId);
    const detail = {
      erasureId: view.erasureId,
      digest: certificateDigest(honest.payload),
      status: 'completed',
      certificateState: 'provisional',
      recovered: 0,
      matches: 0,
      fingerprintsKept: false,
    };
    await t.app.db.db.execute(
      sql`update audit_log set detail = ${JSON.stringify(detail)} where action = 'erasure.certificate.sign' and key_id = ${view.erasureId}`,
    );
    await t.app.epochs.rotate('admin');
    await t.app.erasures.finalizeCertificates();
    const after = await t.app.erasures.get(view.erasureId);
    expect(after.certificateState).toBe('provisional');
    expect(after.residuals.find((r) => r.kind === 'certificate-refused')?.detail).toMatch(
      /the audit row that recorded its certificate \(row \d+\) does not verify/,
    );
    expect((await metrics.certificateRefusals.get()).values).toContainEqual(expect.objectContaining({ labels: { reason: 'audit' }, value: 1 }));
  });

  it('an older genuine certificate put back in place of the newest one is refused (the audit chain recorded a newer one)', async () => {
    const view = await erase(t, await subjectWith(t, 1));
    const first = await storedCertificate(t, view.erasureId);
    // a second genuine certificate of the same erasure, recorded in the chain: the vault signs the same outcome again
    const again = await t.app.certificateKeys.sign({ ...first.payload, issuedAt: new Date(Date.now() + 1000).toISOString() });
    await t.app.db.db.transaction(async (tx) => {
      await t.app.audit.append(tx, [
        {
          actor: 'erasure',
          action: 'erasure.certificate.sign',
          keyId: view.erasureId,
          detail: {
            erasureId: view.erasureId,
            digest: certificateDigest(again.payload),
            status: 'completed',
            certificateState: 'provisional',
            recovered: 0,
            matches: 0,
            fingerprintsKept: false,
            signingKeyId: String(again.payload.signingKeyId),
          },
        },
      ]);
    });
    await t.app.epochs.rotate('admin');
    await t.app.erasures.finalizeCertificates();
    const after = await t.app.erasures.get(view.erasureId);
    expect(after.certificateState).toBe('provisional');
    expect(after.residuals.find((r) => r.kind === 'certificate-refused')?.detail).toMatch(/not the one the audit chain recorded as signed last/);
  });
});

describe('GET /v1/erasures/{erasureId}/certificate', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await openTestApp({ app: { erasureWorker: false } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers the signed document alone, as the erasure holds it, not cached', async () => {
    const view = await erase(t, await subjectWith(t, 1));
    const res = await t.call('GET', `/v1/erasures/${view.erasureId}/certificate`, { role: 'eraser' });
    expect(res.headers.get('cache-control')).toBe('no-store');
    const doc = await ok<Certificate>(res, 200);
    expect(Object.keys(doc).sort()).toEqual(['algorithm', 'payload', 'publicKey', 'signature']);
    expect(doc).toEqual(view.certificate);
    expect(doc.payload).toMatchObject({ erasureId: view.erasureId, status: 'completed' });
    expect(verifyCertificate(doc, await t.app.certificateKeys.publicKeys()).valid).toBe(true);
    // admin may read it too; a writer may not, nor anyone without a token
    await ok(t.call('GET', `/v1/erasures/${view.erasureId}/certificate`, { role: 'admin' }), 200);
    await expectProblem(t.call('GET', `/v1/erasures/${view.erasureId}/certificate`, { role: 'writer' }), 403, 'forbidden');
    await expectProblem(t.call('GET', `/v1/erasures/${view.erasureId}/certificate`, { role: 'none' }), 401, 'unauthorized');
  });

  it('is 409 conflict, saying why, while the erasure has no certificate yet', async () => {
    const { erasureId } = await t.app.erasures.request({ subject: await subjectWith(t, 1) }, 'eraser');
    const { detail } = await expectProblem(t.call('GET', `/v1/erasures/${erasureId}/certificate`, { role: 'eraser' }), 409, 'conflict');
    expect(detail).toMatch(/has no certificate yet: the erasure is pending; its certificate is signed when it finishes/);
    await t.app.erasures.settle(erasureId);
    await ok(t.call('GET', `/v1/erasures/${erasureId}/certificate`, { role: 'eraser' }), 200);
  });

  it('is 404 not_found problem+json for a well-formed unknown id', async () => {
    const { detail } = await expectProblem(t.call('GET', `/v1/erasures/ers_${'A'.repeat(22)}/certificate`, { role: 'eraser' }), 404, 'not_found');
    expect(detail).toBe('no such erasure');
  });

  for (const id of ['not-an-erasure', 'ers_short', `ers_${'A'.repeat(21)}!`, 'ers_%00']) {
    it(`is 400 validation_failed problem+json naming erasureId for the malformed id ${JSON.stringify(id)}`, async () => {
      const { detail } = await expectProblem(t.call('GET', `/v1/erasures/${encodeURIComponent(id)}/certificate`, { role: 'eraser' }), 400, 'validation_failed');
      expect(detail).toContain('erasureId');
    });
  }
});

/**
 * Erasure certificates: Ed25519 over canonical JSON, checked against node:crypto's
 * independent Ed25519, and only ever against a trusted set of keys (the key id in the
 * payload selects one; the key a certificate carries is not trusted for itself). The
 * CLI's `lethe certificate` is test/cli/certificate.test.ts.
 */
import { createPublicKey, verify as nodeVerify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fromBase64Url, randomBytes } from '../../src/crypto/index.js';
import {
  canonicalJson,
  type Certificate,
  certificateKeyId,
  certificatePublicKey,
  type Json,
  signCertificate,
  verifyCertificate,
} from '../../src/crypto/certificate.js';

const payload = {
  erasureId: 'ers_example',
  subjectHash: 'a1b2',
  class: 'B',
  steps: [
    { name: 'destroy', at: '2026-11-30T12:00:00.000Z' },
    { name: 'probe', at: '2026-11-30T12:00:01.000Z' },
  ],
  probe: { recovered: 0.05, threshold: 0.15 },
  residuals: [{ tier: 'key table', kind: 'wrapped-dek-copies', until: '2026-12-31T00:00:00.000Z' }],
  final: false,
};

/** The RFC 8410 SubjectPublicKeyInfo DER prefix of an Ed25519 public key. */
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

describe('canonical JSON', () => {
  it('sorts keys at every depth, drops no array order, and writes no whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, 1, 2], c: 'x' } })).toBe('{"a":{"c":"x","d":[3,1,2]},"b":1}');
    expect(canonicalJson({ a: 1, b: 2 })).toBe(canonicalJson({ b: 2, a: 1 }));
  });

  it('refuses numbers JSON cannot write', () => {
    expect(() => canonicalJson({ x: Number.NaN })).toThrow(/finite/);
    expect(() => canonicalJson({ x: Number.POSITIVE_INFINITY })).toThrow(/finite/);
  });
});

describe('certificates', () => {
  const secret = randomBytes(32);
  const cert = signCertificate(payload, secret);

  it('verifies, and node:crypto agrees the signature is Ed25519 over the canonical payload', () => {
    expect(verifyCertificate(cert, cert.publicKey)).toEqual({ valid: true, keyId: certificateKeyId(fromBase64Url(cert.publicKey)!) });
    const key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, Buffer.from(fromBase64Url(cert.publicKey)!)]), format: 'der', type: 'spki' });
    expect(nodeVerify(null, Buffer.from(canonicalJson(payload)), key, Buffer.from(fromBase64Url(cert.signature)!))).toBe(true);
  });

  it('verifies the same payload whatever the key order it is read back in', () => {
    const reordered = JSON.parse(JSON.stringify({ ...cert, payload: Object.fromEntries(Object.entries(payload).reverse()) })) as Certificate;
    expect(verifyCertificate(reordered, cert.publicKey).valid).toBe(true);
  });

  it('fails for an edited payload, an edited signature, another signer, or another expected key', () => {
    expect(verifyCertificate({ ...cert, payload: { ...payload, class: 'A' } }, cert.publicKey).valid).toBe(false);
    expect(verifyCertificate({ ...cert, payload: { ...payload, probe: { recovered: 0.5, threshold: 0.15 } } }, cert.publicKey).valid).toBe(false);
    const sig = fromBase64Url(cert.signature)!;
    sig[0]! ^= 1;
    expect(verifyCertificate({ ...cert, signature: Buffer.from(sig).toString('base64url') }, cert.publicKey)).toMatchObject({
      valid: false,
      reason: /does not match/,
    });
    const other = signCertificate(payload, randomBytes(32));
    expect(verifyCertificate({ ...cert, publicKey: other.publicKey }, [cert.publicKey, other.publicKey]).valid).toBe(false);
    expect(verifyCertificate(other, cert.publicKey)).toMatchObject({ valid: false, reason: /not one of the 1 trusted key/ });
    expect(verifyCertificate(cert, cert.publicKey).valid).toBe(true);
  });

  it('answers invalid, never throws, for things that are not certificates', () => {
    for (const bad of [null, 42, 'x', {}, { payload: [] }, { ...cert, algorithm: 'RSA' }, { ...cert, signature: 'short' }, { ...cert, publicKey: '!!' }]) {
      expect(verifyCertificate(bad, cert.publicKey).valid).toBe(false);
    }
  });
});

describe('verification against a trusted set of keys', () => {
  const vaultSecret = randomBytes(32);
  const vaultKey = Buffer.from(certificatePublicKey(vaultSecret)).toString('base64url');
  const vaultKeyId = certificateKeyId(certificatePublicKey(vaultSecret));
  const retiredSecret = randomBytes(32);
  const retiredKey = Buffer.from(certificatePublicKey(retiredSecret)).toString('base64url');
  const honest = signCertificate({ ...payload, status: 'incomplete', signingKeyId: vaultKeyId }, vaultSecret);

  it('derives a stable key id from the public key alone', () => {
    expect(vaultKeyId).toMatch(/^csk_[A-Za-z0-9_-]{22}$/);
    expect(certificateKeyId(certificatePublicKey(vaultSecret))).toBe(vaultKeyId);
    expect(certificateKeyId(certificatePublicKey(retiredSecret))).not.toBe(vaultKeyId);
  });

  it('selects the trusted key by the id the payload names, among several', () => {
    expect(verifyCertificate(honest, [retiredKey, vaultKey])).toEqual({ valid: true, keyId: vaultKeyId });
    // a certificate from before key ids (no signingKeyId) is selected by its embedded key, which must still be trusted
    const legacy = signCertificate(payload, retiredSecret);
    expect(verifyCertificate(legacy, [vaultKey, retiredKey])).toMatchObject({ valid: true });
    expect(verifyCertificate(legacy, [vaultKey])).toMatchObject({ valid: false, reason: /not one of the 1 trusted key/ });
  });

  it('refuses a forgery: flipped to completed, re-signed with a random key, its embedded key replaced', () => {
    const forger = randomBytes(32);
    const forgerKey = Buffer.from(certificatePublicKey(forger)).toString('base64url');
    const flipped = { ...honest.payload, status: 'completed' };
    const keepsId = signCertificate(flipped, forger);
    expect(keepsId.publicKey).toBe(forgerKey);
    // keeping the vault's key id: the trusted key is selected, and the signature does not hold under it
    expect(verifyCertificate(keepsId, [vaultKey, retiredKey])).toMatchObject({
      valid: false,
      keyId: vaultKeyId,
      reason: /public key it carries is not the trusted key/,
    });
    expect(verifyCertificate({ ...keepsId, publicKey: vaultKey }, [vaultKey])).toMatchObject({
      valid: false,
      reason: /signature does not match the payload under trusted key/,
    });
    // naming its own key: not in the trusted set
    const ownId = signCertificate({ ...flipped, signingKeyId: certificateKeyId(certificatePublicKey(forger)) }, forger);
    expect(verifyCertificate(ownId, [vaultKey, retiredKey])).toMatchObject({ valid: false, reason: /which is not one of the 2 trusted key\(s\)/ });
    // naming no key at all: selected by the carried key, which is not trusted
    const noId: Record<string, Json> = { ...flipped };
    delete noId.signingKeyId;
    const selfContained = signCertificate(noId, forger);
    expect(verifyCertificate(selfContained, [vaultKey])).toMatchObject({ valid: false, reason: /not one of the 1 trusted key/ });
    // it holds under the key it carries: that is why the carried key proves nothing
    expect(verifyCertificate(selfContained, selfContained.publicKey).valid).toBe(true);
  });

  it('a key given with its retirement time signed nothing issued after it; before it, or given without one, as before', () => {
    const retiredId = certificateKeyId(certificatePublicKey(retiredSecret));
    const at = (issuedAt: string | undefined) => signCertificate({ ...payload, signingKeyId: retiredId, ...(issuedAt ? { issuedAt } : {}) }, retiredSecret);
    const keys = [
      { publicKey: vaultKey, retiredAt: null },
      { publicKey: retiredKey, retiredAt: '2026-12-01T00:00:00.000Z' },
    ];
    expect(verifyCertificate(at('2026-11-30T23:59:59.999Z'), keys)).toEqual({ valid: true, keyId: retiredId });
    expect(verifyCertificate(at('2026-12-01T00:00:00.000Z'), keys)).toEqual({ valid: true, keyId: retiredId });
    expect(verifyCertificate(at('2026-12-01T00:00:00.001Z'), keys)).toMatchObject({
      valid: false,
      keyId: retiredId,
      reason: /^issued at 2026-12-01T00:00:00\.001Z, after its signing key csk_\S+ was retired at 2026-12-01T00:00:00\.000Z$/,
    });
    expect(verifyCertificate(at(undefined), keys)).toMatchObject({ valid: false, reason: /does not say when it was issued/ });
    expect(verifyCertificate(at('not a time'), keys)).toMatchObject({ valid: false, reason: /does not say when it was issued/ });
    // the current key (no retirement) and keys given without times: the signature alone
    expect(verifyCertificate(honest, keys)).toEqual({ valid: true, keyId: vaultKeyId });
    expect(verifyCertificate(at('2027-01-01T00:00:00.000Z'), [retiredKey])).toMatchObject({ valid: true });
  });

  it('is invalid with no usable trusted key, and for a key id that is not one', () => {
    expect(verifyCertificate(honest, [])).toMatchObject({ valid: false, reason: /proves nothing/ });
    expect(verifyCertificate(honest, ['not-a-key'])).toMatchObject({ valid: false, reason: /proves nothing/ });
    expect(verifyCertificate({ ...honest, payload: { ...honest.payload, signingKeyId: 42 } }, vaultKey)).toMatchObject({
      valid: false,
      reason: /signingKeyId/,
    });
  });
});

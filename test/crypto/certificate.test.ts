/**
 * Erasure certificates: Ed25519 over canonical JSON, checked against node:crypto's
 * independent Ed25519 (the CLI's `lethe certificate` is test/cli/certificate.test.ts).
 */
import { createPublicKey, verify as nodeVerify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fromBase64Url, randomBytes } from '../../src/crypto/index.js';
import { canonicalJson, type Certificate, signCertificate, verifyCertificate } from '../../src/crypto/certificate.js';

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
    expect(verifyCertificate(cert)).toEqual({ valid: true });
    const key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, Buffer.from(fromBase64Url(cert.publicKey)!)]), format: 'der', type: 'spki' });
    expect(nodeVerify(null, Buffer.from(canonicalJson(payload)), key, Buffer.from(fromBase64Url(cert.signature)!))).toBe(true);
  });

  it('verifies the same payload whatever the key order it is read back in', () => {
    const reordered = JSON.parse(JSON.stringify({ ...cert, payload: Object.fromEntries(Object.entries(payload).reverse()) })) as Certificate;
    expect(verifyCertificate(reordered)).toEqual({ valid: true });
  });

  it('fails for an edited payload, an edited signature, another signer, or another expected key', () => {
    expect(verifyCertificate({ ...cert, payload: { ...payload, class: 'A' } }).valid).toBe(false);
    expect(verifyCertificate({ ...cert, payload: { ...payload, probe: { recovered: 0.5, threshold: 0.15 } } }).valid).toBe(false);
    const sig = fromBase64Url(cert.signature)!;
    sig[0]! ^= 1;
    expect(verifyCertificate({ ...cert, signature: Buffer.from(sig).toString('base64url') })).toMatchObject({ valid: false, reason: /does not match/ });
    const other = signCertificate(payload, randomBytes(32));
    expect(verifyCertificate({ ...cert, publicKey: other.publicKey }).valid).toBe(false);
    expect(verifyCertificate(other, cert.publicKey)).toMatchObject({ valid: false, reason: /another key/ });
    expect(verifyCertificate(cert, cert.publicKey)).toEqual({ valid: true });
  });

  it('answers invalid, never throws, for things that are not certificates', () => {
    for (const bad of [null, 42, 'x', {}, { payload: [] }, { ...cert, algorithm: 'RSA' }, { ...cert, signature: 'short' }, { ...cert, publicKey: '!!' }]) {
      expect(verifyCertificate(bad).valid).toBe(false);
    }
  });
});

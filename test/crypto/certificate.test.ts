/**
 * Erasure certificates: Ed25519 over canonical JSON, checked against node:crypto's
 * independent Ed25519, and `lethe certificate verify | public-key` as a child process.
 */
import { createPublicKey, verify as nodeVerify } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deriveSubkey, fromBase64Url, randomBytes } from '../../src/crypto/index.js';
import { canonicalJson, type Certificate, signCertificate, verifyCertificate } from '../../src/crypto/certificate.js';
import { runCli } from '../support/process.js';
import { tempDir, testEnv } from '../support/vault.js';

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

describe('lethe certificate', () => {
  let dir: string;
  let env: Record<string, string>;
  let signed: Certificate;
  beforeAll(() => {
    dir = tempDir();
    env = { ...testEnv({ dataDir: dir }), PATH: process.env.PATH ?? '' };
    // signed with the key the vault derives from its root key
    const secret = deriveSubkey(Buffer.from(env.LETHE_ROOT_KEY!, 'base64'), 'certificate-signing');
    signed = signCertificate(payload, secret);
    writeFileSync(path.join(dir, 'good.json'), JSON.stringify(signed));
    writeFileSync(path.join(dir, 'edited.json'), JSON.stringify({ ...signed, payload: { ...payload, final: true } }));
    writeFileSync(path.join(dir, 'garbage.json'), '{ not json');
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('`public-key` prints the key a vault with this root key signs with', { timeout: 60_000 }, async () => {
    const run = await runCli(['certificate', 'public-key'], env);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ algorithm: 'Ed25519', publicKey: signed.publicKey });
  });

  it('`verify` exits 0 for a good certificate, also against the expected key, and 1 for an edited one or another signer', { timeout: 60_000 }, async () => {
    const good = await runCli(['certificate', 'verify', path.join(dir, 'good.json'), '--public-key', signed.publicKey], env);
    expect(good.code, good.stderr).toBe(0);
    expect(JSON.parse(good.stdout)).toEqual({ valid: true });
    const edited = await runCli(['certificate', 'verify', path.join(dir, 'edited.json')], env);
    expect(edited.code).toBe(1);
    expect(edited.stderr).toMatch(/does not match/);
    const other = await runCli(['certificate', 'verify', path.join(dir, 'good.json'), '--public-key', signCertificate(payload, randomBytes(32)).publicKey], env);
    expect(other.code).toBe(1);
  });

  it('`verify` exits 2 with a plain message for a missing or unreadable file', { timeout: 60_000 }, async () => {
    const missing = await runCli(['certificate', 'verify', path.join(dir, 'nope.json')], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('cannot read a JSON certificate');
    const garbage = await runCli(['certificate', 'verify', path.join(dir, 'garbage.json')], env);
    expect(garbage.code).toBe(2);
  });
});

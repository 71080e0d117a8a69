/** `lethe certificate verify | public-key` as child processes. */
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Certificate, signCertificate } from '../../src/crypto/certificate.js';
import { deriveSubkey, randomBytes } from '../../src/crypto/index.js';
import { runCli } from '../support/process.js';
import { tempDir, testEnv } from '../support/vault.js';

const payload = {
  erasureId: 'ers_example',
  subjectHash: 'a1b2',
  class: 'B',
  probe: { recovered: 0.05, threshold: 0.15 },
  final: false,
};

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

/**
 * The local keyring's certificate-signing keys: a brand-new keyring gets one key of its
 * own at opening, and nothing else; a keyring from before signing keys gets its key on
 * first use, with the root-derived key that signed its older certificates listed
 * retired (they still verify); sealed under the root key and never in the
 * clear, rotation destroying the retired key's file while its public part stays
 * listed, two providers on one keyring (replicas) agreeing on the current key, a lock
 * left by a dead process broken, and a keyring sealed under another root key refused.
 */
import { mkdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { certificateKeyId, certificatePublicKey, signCertificate, verifyCertificate } from '../../src/crypto/certificate.js';
import { deriveSubkey, fromBase64Url, toBase64Url } from '../../src/crypto/index.js';
import { LocalKeyringProvider } from '../../src/keyprovider/local.js';
import { tempDir } from '../support/vault.js';

const root = () => new Uint8Array(32).fill(42);
const folder = (dir: string) => path.join(dir, 'certificate-signing');

/** A keyring as lethe left it before signing keys (issue 13): an epoch KEK sealed under the root key, no `certificate-signing/`. */
async function keyringBeforeSigningKeys(): Promise<string> {
  const dir = tempDir();
  const p = await LocalKeyringProvider.open(dir, root());
  await p.createEpoch(1);
  await p.close();
  rmSync(folder(dir), { recursive: true, force: true });
  return dir;
}

describe('certificate-signing keys in the local keyring', () => {
  it('a brand-new keyring lists exactly one key, its own and current, made at opening (it never signed with the root-derived key)', async () => {
    const dir = tempDir();
    const p = await LocalKeyringProvider.open(dir, root());
    expect(await readdir(folder(dir))).toContain('keys.sealed'); // made at opening: the decision outlives this process
    const keys = await p.listSigningKeys();
    expect(keys.map((k) => [k.state, k.origin])).toEqual([['current', 'keyring']]);
    expect(keys[0]!.keyId).toBe(certificateKeyId(fromBase64Url(keys[0]!.publicKey)!));
    expect(keys[0]!.publicKey).not.toBe(toBase64Url(certificatePublicKey(deriveSubkey(root(), 'certificate-signing'))));
    expect(await p.listSigningKeys()).toEqual(keys); // stable
    await p.close();
    // opened again, with epochs now: still that one key
    const again = await LocalKeyringProvider.open(dir, root());
    await again.createEpoch(1);
    expect(await again.listSigningKeys()).toEqual(keys);
    await again.close();
  });

  it('a first opening that died before its list was written (an empty certificate-signing folder) is still brand new: one key', async () => {
    const dir = tempDir();
    mkdirSync(folder(dir), { recursive: true, mode: 0o700 });
    const p = await LocalKeyringProvider.open(dir, root());
    expect((await p.listSigningKeys()).map((k) => [k.state, k.origin])).toEqual([['current', 'keyring']]);
    await p.close();
  });

  it('a keyring from before signing keys (epochs, no certificate-signing folder) lists its own current key and the retired root-derived key, ids derived from the public keys', async () => {
    const dir = await keyringBeforeSigningKeys();
    const p = await LocalKeyringProvider.open(dir, root());
    expect(await readdir(dir)).not.toContain('certificate-signing'); // nothing until used
    const keys = await p.listSigningKeys();
    expect(keys.map((k) => [k.state, k.origin])).toEqual([
      ['current', 'keyring'],
      ['retired', 'root-derived'],
    ]);
    for (const k of keys) expect(k.keyId).toBe(certificateKeyId(fromBase64Url(k.publicKey)!));
    expect(keys[1]!.publicKey).toBe(toBase64Url(certificatePublicKey(deriveSubkey(root(), 'certificate-signing'))));
    expect(await p.listSigningKeys()).toEqual(keys); // stable
    // what the root-derived key signed before (no key id) still verifies against the list
    const legacy = signCertificate({ erasureId: 'ers_old', issuedAt: '2026-01-01T00:00:00.000Z' }, deriveSubkey(root(), 'certificate-signing'));
    expect(verifyCertificate(legacy, keys)).toEqual({ valid: true, keyId: keys[1]!.keyId });
    await p.close();
  });

  it('sign with the current key, naming it inside the signed payload; the private key is sealed, never in the clear', async () => {
    const dir = tempDir();
    const p = await LocalKeyringProvider.open(dir, root());
    const cert = await p.signCertificate({ erasureId: 'ers_x', status: 'completed' });
    const [current] = await p.listSigningKeys();
    expect(cert.payload.signingKeyId).toBe(current!.keyId);
    expect(cert.publicKey).toBe(current!.publicKey);
    expect(verifyCertificate(cert, current!.publicKey)).toEqual({ valid: true, keyId: current!.keyId });
    const files = (await readdir(folder(dir))).sort();
    expect(files).toEqual([`${current!.keyId}.key`, 'keys.sealed']);
    for (const f of files) {
      const bytes = readFileSync(path.join(folder(dir), f));
      expect(bytes.subarray(0, 2).toString()).toBe('LE'); // an envelope
      expect(bytes.toString('latin1')).not.toContain(current!.publicKey);
      expect(statSync(path.join(folder(dir), f)).mode & 0o077).toBe(0);
    }
    await p.close();
  });

  it('rotate: the new key signs, the retired key stays listed and its private file is destroyed; another provider on the keyring signs with the new key at once', async () => {
    const dir = tempDir();
    const p = await LocalKeyringProvider.open(dir, root());
    const replica = await LocalKeyringProvider.open(dir, root());
    const before = await p.signCertificate({ n: 1 });
    const [first] = await p.listSigningKeys();
    const { current, retired } = await p.rotateSigningKey();
    expect(retired).toMatchObject({ keyId: first!.keyId, state: 'retired', retiredAt: expect.any(String) });
    expect(current.keyId).not.toBe(first!.keyId);
    const keys = await replica.listSigningKeys();
    expect(keys.map((k) => k.keyId)).toEqual([current.keyId, first!.keyId]);
    expect((await replica.signCertificate({ n: 2 })).payload.signingKeyId).toBe(current.keyId);
    expect(
      verifyCertificate(
        before,
        keys.map((k) => k.publicKey),
      ).valid,
    ).toBe(true);
    expect((await readdir(folder(dir))).filter((f) => f.endsWith('.key'))).toEqual([`${current.keyId}.key`]);
    await p.close();
    await replica.close();
  });

  it('two providers rotating at once leave one current key, every key listed once', async () => {
    const dir = tempDir();
    const a = await LocalKeyringProvider.open(dir, root());
    const b = await LocalKeyringProvider.open(dir, root());
    await Promise.all([a.listSigningKeys(), b.listSigningKeys()]); // both creating the first key at once
    await Promise.all([a.rotateSigningKey(), b.rotateSigningKey(), a.rotateSigningKey()]);
    const keys = await b.listSigningKeys();
    expect(keys.filter((k) => k.state === 'current')).toHaveLength(1);
    expect(keys).toHaveLength(4); // first, three rotations
    expect(new Set(keys.map((k) => k.keyId)).size).toBe(4);
    expect((await readdir(folder(dir))).filter((f) => f.endsWith('.key'))).toEqual([`${keys[0]!.keyId}.key`]);
    await a.close();
    await b.close();
  });

  it('breaks a lock left by a process that died mid-change', async () => {
    const dir = tempDir();
    const p = await LocalKeyringProvider.open(dir, root());
    await p.listSigningKeys();
    const lock = path.join(folder(dir), 'change.lock');
    writeFileSync(lock, '');
    const old = new Date(Date.now() - 60_000);
    utimesSync(lock, old, old);
    const { current } = await p.rotateSigningKey();
    expect((await p.listSigningKeys())[0]!.keyId).toBe(current.keyId);
    expect(await readdir(folder(dir))).not.toContain('change.lock');
    await p.close();
  });

  it('refuses keys sealed under another root key, without signing', async () => {
    const dir = tempDir();
    const p = await LocalKeyringProvider.open(dir, root());
    await p.listSigningKeys();
    await p.close();
    const other = await LocalKeyringProvider.open(dir, new Uint8Array(32).fill(1));
    await expect(other.listSigningKeys()).rejects.toMatchObject({ code: 'unavailable', message: /root key does not match/ });
    await expect(other.signCertificate({ n: 1 })).rejects.toMatchObject({ code: 'unavailable' });
    await other.close();
  });
});

import { readFileSync, writeFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { randomBytes } from '../../src/crypto/index.js';
import { LetheError } from '../../src/errors.js';
import { LocalKeyringProvider } from '../../src/keyprovider/local.js';
import { loadRootKey } from '../../src/keyprovider/root-key.js';
import { tempDir } from '../support/vault.js';

const root = () => new Uint8Array(32).fill(42);

describe('the local keyring provider', () => {
  it('wraps and unwraps a DEK under an epoch, bound to the key id', async () => {
    const p = await LocalKeyringProvider.open(tempDir(), root());
    await p.createEpoch(1);
    const dek = randomBytes(32);
    const wrapped = await p.wrap(1, dek, 'key_a', 'subject');
    expect(await p.unwrap(1, wrapped, 'key_a', 'subject')).toEqual(dek);
    await expect(p.unwrap(1, wrapped, 'key_b', 'subject')).rejects.toMatchObject({ code: 'decrypt_failed' });
    await p.close();
  });

  it('binds the purpose: a key wrapped for one purpose does not unwrap for another, legacy allowed or not', async () => {
    const p = await LocalKeyringProvider.open(tempDir(), root());
    await p.createEpoch(1);
    const key = randomBytes(32);
    const wrapped = await p.wrap(1, key, 'key_e', 'erasure');
    expect(await p.unwrap(1, wrapped, 'key_e', 'erasure')).toEqual(key);
    for (const other of ['subject', 'artifact-version'] as const) {
      await expect(p.unwrap(1, wrapped, 'key_e', other)).rejects.toMatchObject({ code: 'decrypt_failed' });
      await expect(p.unwrap(1, wrapped, 'key_e', other, { acceptLegacy: true })).rejects.toMatchObject({ code: 'decrypt_failed' });
    }
    await p.close();
  });

  it('stores epoch KEKs sealed under the root key, never in the clear', async () => {
    const dir = tempDir();
    const p = await LocalKeyringProvider.open(dir, root());
    await p.createEpoch(1);
    const file = readFileSync(path.join(dir, 'epoch-00000001.kek'));
    expect(file.subarray(0, 2).toString()).toBe('LE');
    expect(file.length).toBe(5 + 4 + 24 + 32 + 32 + 16); // header("root") + sealed 32-byte KEK
    await p.close();
  });

  it('createEpoch never overwrites an existing epoch', async () => {
    const dir = tempDir();
    const p = await LocalKeyringProvider.open(dir, root());
    await p.createEpoch(1);
    const before = readFileSync(path.join(dir, 'epoch-00000001.kek'));
    const wrapped = await p.wrap(1, randomBytes(32), 'key_a', 'subject');
    await p.createEpoch(1);
    await Promise.all([p.createEpoch(2), p.createEpoch(2)]);
    expect(readFileSync(path.join(dir, 'epoch-00000001.kek'))).toEqual(before);
    await expect(p.unwrap(1, wrapped, 'key_a', 'subject')).resolves.toHaveLength(32);
    expect(await p.listEpochs()).toEqual([1, 2]);
    expect((await readdir(dir)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    await p.close();
  });

  it('destroyEpoch removes the KEK file and its cached copy; what it wrapped no longer unwraps', async () => {
    const dir = tempDir();
    const p = await LocalKeyringProvider.open(dir, root());
    await p.createEpoch(1);
    await p.createEpoch(2);
    const wrapped = await p.wrap(1, randomBytes(32), 'key_a', 'subject');
    const other = await LocalKeyringProvider.open(dir, root());
    await Promise.all([p.destroyEpoch(1), other.destroyEpoch(1)]); // two replicas at once
    await other.close();
    const destroyedBy = Date.now();
    await p.destroyEpoch(1); // idempotent
    // beside the signing keys a brand-new keyring makes at opening (signing-keys.test.ts)
    expect((await readdir(dir)).filter((f) => f !== 'destroyed' && f !== 'certificate-signing')).toEqual(['epoch-00000002.kek']);
    // what is left of epoch 1 is a tombstone holding when it was destroyed (the first destruction's time), nothing secret
    expect(await readdir(path.join(dir, 'destroyed'))).toEqual(['epoch-00000001.json']);
    expect(Object.keys(JSON.parse(readFileSync(path.join(dir, 'destroyed', 'epoch-00000001.json'), 'utf8')) as object).sort()).toEqual([
      'destroyedAt',
      'epoch',
    ]);
    const at = await p.destroyedAt(1);
    expect(at).toBeInstanceOf(Date);
    expect(at!.getTime()).toBeLessThanOrEqual(destroyedBy);
    expect(at!.getTime()).toBeGreaterThan(destroyedBy - 60_000);
    expect(await p.destroyedAt(2)).toBeUndefined();
    const err = await p.unwrap(1, wrapped, 'key_a', 'subject').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LetheError);
    expect((err as LetheError).code).toBe('epoch_unavailable');
    // a second process over the same keyring cannot unwrap it either
    const q = await LocalKeyringProvider.open(dir, root());
    await expect(q.unwrap(1, wrapped, 'key_a', 'subject')).rejects.toMatchObject({ code: 'epoch_unavailable' });
    await p.close();
    await q.close();
  });

  it('refuses to open a keyring sealed under another root key', async () => {
    const dir = tempDir();
    const p = await LocalKeyringProvider.open(dir, root());
    await p.createEpoch(1);
    await p.close();
    await expect(LocalKeyringProvider.open(dir, new Uint8Array(32).fill(1))).rejects.toMatchObject({ code: 'epoch_unavailable' });
  });

  it('an unwrap that was loading the KEK when its epoch was destroyed is refused and caches nothing (the key never comes back)', async () => {
    const dir = tempDir();
    const p = await LocalKeyringProvider.open(dir, root());
    await p.createEpoch(1);
    await p.createEpoch(2);
    const wrapped = await p.wrap(1, new Uint8Array(32).fill(7), 'key_a', 'subject');
    // a fresh process: epoch 1's KEK is not in memory, so the unwrap reads it from the file
    const q = await LocalKeyringProvider.open(dir, root());
    const inFlight = q.unwrap(1, wrapped, 'key_a', 'subject').then(
      (dek) => ({ dek }),
      (e: unknown) => ({ error: e }),
    );
    // destroyEpoch forgets synchronously before its first await: the read above is still in flight
    const destroyed = q.destroyEpoch(1);
    const outcome = await inFlight;
    await destroyed;
    expect(outcome).toMatchObject({ error: { code: 'epoch_unavailable' } });
    // nothing of epoch 1 stayed in q's memory: a wrap or unwrap under it is refused
    await expect(q.unwrap(1, wrapped, 'key_a', 'subject')).rejects.toMatchObject({ code: 'epoch_unavailable' });
    await expect(q.wrap(1, new Uint8Array(32), 'key_b', 'subject')).rejects.toMatchObject({ code: 'epoch_unavailable' });
    await p.close();
    await q.close();
  });

  it('forget drops the cached KEK but the file still serves it', async () => {
    const p = await LocalKeyringProvider.open(tempDir(), root());
    await p.createEpoch(1);
    const wrapped = await p.wrap(1, new Uint8Array(32).fill(5), 'k', 'subject');
    p.forget(1);
    expect(await p.unwrap(1, wrapped, 'k', 'subject')).toEqual(new Uint8Array(32).fill(5));
    await p.close();
  });
});

describe('the root key', () => {
  const warnings: string[] = [];
  const warn = (m: string) => warnings.push(m);

  it('is generated for development with a loud warning, then reused', () => {
    const dataDir = tempDir();
    const first = loadRootKey({ rootKey: undefined, rootKeyFile: undefined, dataDir, production: false }, warn);
    expect(first.origin).toBe('dev-generated');
    expect(warnings.at(-1)).toMatch(/GENERATED A NEW DEVELOPMENT ROOT KEY/);
    const second = loadRootKey({ rootKey: undefined, rootKeyFile: undefined, dataDir, production: false }, warn);
    expect(second.origin).toBe('dev-file');
    expect(second.key).toEqual(first.key);
  });

  it('is never generated in production', () => {
    expect(() => loadRootKey({ rootKey: undefined, rootKeyFile: undefined, dataDir: tempDir(), production: true }, warn)).toThrow(/LETHE_ROOT_KEY/);
  });

  it('is read from LETHE_ROOT_KEY_FILE, and a bad file is refused without echoing it', () => {
    const dir = tempDir();
    const good = path.join(dir, 'root.key');
    writeFileSync(good, `${Buffer.alloc(32, 3).toString('base64')}\n`);
    const loaded = loadRootKey({ rootKey: undefined, rootKeyFile: good, dataDir: dir, production: true }, warn);
    expect(loaded).toMatchObject({ origin: 'file' });
    expect(loaded.key).toEqual(new Uint8Array(32).fill(3));
    const bad = path.join(dir, 'bad.key');
    writeFileSync(bad, 'c2VjcmV0LXRvby1zaG9ydA==');
    let message = '';
    try {
      loadRootKey({ rootKey: undefined, rootKeyFile: bad, dataDir: dir, production: true }, warn);
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/32 bytes/);
    expect(message).not.toContain('c2VjcmV0');
  });

  it('says a destroyed epoch is gone, even once a KEK is made again under its number (another key)', async () => {
    const dir = tempDir();
    const p = await LocalKeyringProvider.open(dir, root());
    await p.createEpoch(1);
    expect(await p.destructionState(1)).toEqual({ state: 'present' });
    const wrapped = await p.wrap(1, randomBytes(32), 'key_g', 'subject');
    await p.destroyEpoch(1);
    expect(await p.destructionState(1)).toEqual({ state: 'gone' });
    // a fresh database on this keyring makes epoch 1 again: a different KEK, which opens nothing the first wrapped
    await p.createEpoch(1);
    expect(await p.listEpochs()).toEqual([1]);
    expect(await p.destructionState(1)).toEqual({ state: 'gone' });
    await expect(p.unwrap(1, wrapped, 'key_g', 'subject')).rejects.toBeInstanceOf(LetheError);
    expect(await p.destructionState(2)).toEqual({ state: 'gone' });
    await p.close();
  });
});

/**
 * The local keyring's certificate-signing keys (Ed25519), in the folder
 * `certificate-signing/` of the keyring directory:
 *
 * - `keys.sealed`: the list of keys — id, public key, state, times; never a private
 *   key — sealed under the root key (associated data: `certificate-signing-keys`), so
 *   nobody without the root key can slip a key of their own into what the vault
 *   publishes. Replaced whole: written beside, flushed, renamed over, directory flushed.
 * - `<keyId>.key`: the current key's 32-byte private key, sealed under the root key
 *   with its key id as associated data, exactly as an epoch KEK is. Only the current
 *   key has a file: retiring a key overwrites its file with random bytes, renames and
 *   unlinks it (media remanence: see local.ts).
 * - `change.lock`: created exclusively while the list changes (first key, rotation),
 *   so that replicas sharing the keyring change it one at a time; a lock older than
 *   30 s belongs to a process that died and is broken.
 *
 * A brand-new keyring gets its first key when it is opened (`startFresh`), and lists
 * that key alone: nothing was ever signed with it before. A keyring from before
 * signing keys (epochs, no `certificate-signing/`) gets its first key on first use, and
 * lists, as retired, the key derived from the root key (`certificate-signing` subkey)
 * that signed its certificates before signing keys existed: those still verify against
 * the list. A missing list is always made that second way, so a list lost or never
 * made can only add that retired key, never drop it from a vault that used it. A key's
 * id is derived from its public key.
 *
 * Nothing is cached: every signature reads the current key from the files (and zeroes
 * it), so a rotation made by one replica or by the CLI holds on every replica at once.
 */
import { randomBytes as nodeRandomBytes } from 'node:crypto';
import { mkdir, open as openFile, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import {
  type Certificate,
  CERTIFICATE_KEY_ID_PATTERN,
  certificateKeyId,
  certificatePublicKey,
  deriveSubkey,
  encodeContext,
  type Json,
  open,
  randomBytes,
  seal,
  signCertificate,
  SIGNING_KEY_ID_FIELD,
  toBase64Url,
  utf8,
  zeroize,
} from '../crypto/index.js';
import { isLetheError, LetheError } from '../errors.js';
import { fsyncDir, shredFile } from './files.js';
import type { SigningKeyInfo } from './provider.js';

/** The keyring's folder for certificate-signing keys. */
export const SIGNING_FOLDER = 'certificate-signing';
const LIST_FILE = 'keys.sealed';
/** The list's path under the keyring: a keyring holding it has signing keys. */
export const SIGNING_LIST = path.join(SIGNING_FOLDER, LIST_FILE);
const LOCK_FILE = 'change.lock';
const ROOT_KEY_ID = 'root';
const KEY_FILE = /^(csk_[A-Za-z0-9_-]{22})\.key$/;
const STALE_LOCK_MS = 30_000;
const LOCK_WAIT_MS = 15_000;

const KeyListSchema = z.object({
  format: z.literal(1),
  keys: z.array(
    z.object({
      keyId: z.string().regex(CERTIFICATE_KEY_ID_PATTERN),
      algorithm: z.literal('Ed25519'),
      publicKey: z.string(),
      state: z.enum(['current', 'retired']),
      origin: z.enum(['keyring', 'root-derived']),
      createdAt: z.string().nullable(),
      retiredAt: z.string().nullable(),
    }),
  ),
});

function errnoCode(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | null)?.code;
}

/** Writes `bytes` to `file` durably: a private temporary file, flushed, renamed over it, the directory flushed. */
async function writeDurably(file: string, bytes: Uint8Array): Promise<void> {
  const tmp = `${file}.${nodeRandomBytes(6).toString('hex')}.tmp`;
  try {
    await writeFile(tmp, bytes, { mode: 0o600, flag: 'wx' });
    const handle = await openFile(tmp, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, file);
    await fsyncDir(path.dirname(file));
  } finally {
    await unlink(tmp).catch(() => {});
  }
}

function currentOf(keys: readonly SigningKeyInfo[]): SigningKeyInfo {
  const current = keys.filter((k) => k.state === 'current');
  if (current.length !== 1) throw new LetheError('internal', `the certificate-signing key list holds ${current.length} current keys, not one`);
  return current[0]!;
}

export class SigningKeyring {
  readonly #dir: string;
  /** The root key: borrowed from the keyring provider, which owns and zeroes it. */
  readonly #root: Uint8Array;
  /** Changes made by this process, one at a time (the lock file orders processes). */
  #changes: Promise<unknown> = Promise.resolve();

  constructor(keyringDir: string, rootKey: Uint8Array) {
    this.#dir = path.join(keyringDir, SIGNING_FOLDER);
    this.#root = rootKey;
  }

  /** The current key first, then the retired ones, most recently retired first. */
  async list(): Promise<SigningKeyInfo[]> {
    const keys = await this.#keys();
    const retired = keys.filter((k) => k.state === 'retired').sort((a, b) => (b.retiredAt ?? '').localeCompare(a.retiredAt ?? ''));
    return [currentOf(keys), ...retired];
  }

  /** Signs with the current key; the payload names it (`signingKeyId`) inside what is signed. */
  async sign(payload: { [key: string]: Json }): Promise<Certificate> {
    // a rotation between reading the list and reading the key file removes that file: read the list again
    for (let attempt = 1; ; attempt++) {
      const current = currentOf(await this.#keys());
      let secret: Uint8Array;
      try {
        secret = await this.#secret(current.keyId);
      } catch (e) {
        if (errnoCode(e) === 'ENOENT' && attempt < 3) continue;
        if (errnoCode(e) === 'ENOENT')
          throw new LetheError('unavailable', `the current certificate-signing key ${current.keyId} is missing from the keyring`, { retryable: false });
        throw e;
      }
      try {
        if (certificateKeyId(certificatePublicKey(secret)) !== current.keyId) {
          throw new LetheError('internal', `the key file of certificate-signing key ${current.keyId} holds another key`);
        }
        return signCertificate({ ...payload, [SIGNING_KEY_ID_FIELD]: current.keyId }, secret);
      } finally {
        zeroize(secret);
      }
    }
  }

  /** A new current key; the previous one is retired and its private part destroyed. */
  async rotate(): Promise<{ current: SigningKeyInfo; retired: SigningKeyInfo }> {
    await this.#keys();
    return this.#locked(async () => {
      const keys = (await this.#read())!;
      const previous = currentOf(keys);
      const now = new Date().toISOString();
      const fresh = await this.#newKey(now);
      const retired: SigningKeyInfo = { ...previous, state: 'retired', retiredAt: now };
      await this.#write([...keys.map((k) => (k.keyId === previous.keyId ? retired : k)), fresh]);
      await this.#sweep(fresh.keyId);
      return { current: fresh, retired };
    });
  }

  /**
   * Makes the list of a brand-new keyring (one that never sealed anything, so never
   * signed with the root-derived key): a first key of its own, alone. A list already
   * there (another replica made it) is kept.
   */
  async startFresh(): Promise<void> {
    if (!(await this.#read())) await this.#create({ rootDerived: false });
  }

  /** The list; missing, it is made for a keyring from before signing keys: the root-derived key (retired) and a first key of its own. */
  async #keys(): Promise<SigningKeyInfo[]> {
    return (await this.#read()) ?? this.#create({ rootDerived: true });
  }

  async #create(options: { rootDerived: boolean }): Promise<SigningKeyInfo[]> {
    return this.#locked(async () => {
      const again = await this.#read();
      if (again) return again;
      const now = new Date().toISOString();
      const first = await this.#newKey(now);
      const keys = options.rootDerived ? [this.#rootDerived(now), first] : [first];
      await this.#write(keys);
      await this.#sweep(first.keyId);
      return keys;
    });
  }

  /** The root-derived key's public part, listed retired (it signed certificates before keys had ids). */
  #rootDerived(now: string): SigningKeyInfo {
    const secret = deriveSubkey(this.#root, 'certificate-signing');
    try {
      const publicKey = certificatePublicKey(secret);
      return {
        keyId: certificateKeyId(publicKey),
        algorithm: 'Ed25519',
        publicKey: toBase64Url(publicKey),
        state: 'retired',
        origin: 'root-derived',
        createdAt: null,
        retiredAt: now,
      };
    } finally {
      zeroize(secret);
    }
  }

  /** A fresh key, its private part sealed into its own file (before any list names it). */
  async #newKey(now: string): Promise<SigningKeyInfo> {
    const secret = randomBytes(32);
    try {
      const publicKey = certificatePublicKey(secret);
      const keyId = certificateKeyId(publicKey);
      const sealed = seal({ key: this.#root, keyId: ROOT_KEY_ID, plaintext: secret, associatedData: encodeContext('certificate-signing-key', { keyId }) });
      await writeDurably(path.join(this.#dir, `${keyId}.key`), sealed);
      return { keyId, algorithm: 'Ed25519', publicKey: toBase64Url(publicKey), state: 'current', origin: 'keyring', createdAt: now, retiredAt: null };
    } finally {
      zeroize(secret);
    }
  }

  /** Destroys every private key file but the current one's (the retired key, and what a crash left behind). */
  async #sweep(currentKeyId: string): Promise<void> {
    for (const name of await readdir(this.#dir)) {
      const keyId = KEY_FILE.exec(name)?.[1];
      if (keyId !== undefined && keyId !== currentKeyId) await shredFile(path.join(this.#dir, name));
    }
  }

  async #secret(keyId: string): Promise<Uint8Array> {
    const sealed = new Uint8Array(await readFile(path.join(this.#dir, `${keyId}.key`)));
    try {
      return open({ key: this.#root, envelope: sealed, expectedKeyId: ROOT_KEY_ID, associatedData: encodeContext('certificate-signing-key', { keyId }) });
    } catch (e) {
      if (isLetheError(e))
        throw new LetheError('unavailable', 'the certificate-signing key cannot be unsealed: the root key does not match this keyring', { retryable: false });
      throw e;
    }
  }

  async #read(): Promise<SigningKeyInfo[] | undefined> {
    let sealed: Uint8Array;
    try {
      sealed = new Uint8Array(await readFile(path.join(this.#dir, LIST_FILE)));
    } catch (e) {
      if (errnoCode(e) === 'ENOENT') return undefined;
      throw e;
    }
    let plain: Uint8Array;
    try {
      plain = open({ key: this.#root, envelope: sealed, expectedKeyId: ROOT_KEY_ID, associatedData: encodeContext('certificate-signing-keys') });
    } catch (e) {
      if (isLetheError(e))
        throw new LetheError('unavailable', 'the certificate-signing keys cannot be unsealed: the root key does not match this keyring', { retryable: false });
      throw e;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(utf8.decode(plain));
    } catch {
      parsed = undefined;
    }
    const list = KeyListSchema.safeParse(parsed);
    if (!list.success) throw new LetheError('internal', 'the certificate-signing key list is malformed');
    return list.data.keys;
  }

  async #write(keys: readonly SigningKeyInfo[]): Promise<void> {
    const plaintext = utf8.encode(JSON.stringify({ format: 1, keys }));
    const sealed = seal({ key: this.#root, keyId: ROOT_KEY_ID, plaintext, associatedData: encodeContext('certificate-signing-keys') });
    await writeDurably(path.join(this.#dir, LIST_FILE), sealed);
  }

  /** Runs `fn` holding the change lock: one change at a time in this process, and across processes. */
  #locked<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#changes.then(() => this.#withLockFile(fn));
    this.#changes = run.catch(() => {});
    return run;
  }

  async #withLockFile<T>(fn: () => Promise<T>): Promise<T> {
    await mkdir(this.#dir, { recursive: true, mode: 0o700 });
    const lock = path.join(this.#dir, LOCK_FILE);
    const deadline = Date.now() + LOCK_WAIT_MS;
    for (;;) {
      try {
        await (await openFile(lock, 'wx', 0o600)).close();
        break;
      } catch (e) {
        if (errnoCode(e) !== 'EEXIST') throw e;
      }
      const age = await stat(lock).then(
        (s) => Date.now() - s.mtimeMs,
        () => 0,
      );
      if (age > STALE_LOCK_MS) {
        // its holder died mid-change; every change is safe to redo
        await unlink(lock).catch(() => {});
        continue;
      }
      if (Date.now() > deadline) throw new LetheError('unavailable', 'another process is changing the certificate-signing keys; try again');
      await new Promise((r) => setTimeout(r, 25));
    }
    try {
      return await fn();
    } finally {
      await unlink(lock).catch(() => {});
    }
  }
}

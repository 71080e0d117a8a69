/**
 * The local keyring provider (the embedded default): one file per epoch KEK in a
 * directory outside the database, each an envelope sealed under the root key with
 * the epoch number as associated data.
 *
 * Destroying an epoch overwrites its file with random bytes, flushes, unlinks it and
 * flushes the directory. (On copy-on-write or journaling file systems and SSDs an
 * overwrite is best effort; the guarantee that matters is that no KEK file survives
 * in the keyring or in anything that copies it afterwards. Keep the keyring out of
 * database backups.) It then leaves a tombstone, destroyed/epoch-NNNNNNNN.json, holding
 * only the epoch and when it was destroyed: a restore refused for a retired epoch says
 * when the epoch died.
 *
 * Certificate-signing keys live in the same directory (folder `certificate-signing/`),
 * sealed the same way: signing-keys.ts.
 */
import { randomBytes as nodeRandomBytes } from 'node:crypto';
import { link, mkdir, open as openFile, readdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { type Certificate, deriveSubkey, encodeContext, type Json, KeyWrapper, open, randomBytes, seal, type SubkeyLabel, zeroize } from '../crypto/index.js';
import { ensurePrivateDir, tightenTree } from '../config/files.js';
import { LetheError, isLetheError } from '../errors.js';
import { type DestructionState, type KeyProvider, type KeyPurpose, kekId, type SigningKeyInfo, type UnwrapOptions } from './provider.js';
import { fsyncDir, shredFile } from './files.js';
import { SIGNING_LIST, SigningKeyring } from './signing-keys.js';

const FILE_PATTERN = /^epoch-(\d{8})\.kek$/;
const TOMBSTONE_DIR = 'destroyed';
const ROOT_KEY_ID = 'root';

function fileName(epoch: number): string {
  return `epoch-${String(epoch).padStart(8, '0')}.kek`;
}

function tombstonePath(dir: string, epoch: number): string {
  return path.join(dir, TOMBSTONE_DIR, `epoch-${String(epoch).padStart(8, '0')}.json`);
}

/**
 * Whether the keyring holds nothing lethe seals in it: no epoch KEK, no tombstone, no
 * certificate-signing keys. A keyring from before signing keys always holds its epochs
 * (a rotation makes the next one before it destroys one).
 */
async function isBrandNew(dir: string): Promise<boolean> {
  // the signing folder alone proves nothing: a first open that died before its list was written leaves it
  if (existsSync(path.join(dir, SIGNING_LIST))) return false;
  return (await readdir(dir)).every((name) => !FILE_PATTERN.test(name) && name !== TOMBSTONE_DIR);
}

function checkEpoch(epoch: number): void {
  if (!Number.isSafeInteger(epoch) || epoch < 1 || epoch > 99_999_999) {
    throw new LetheError('validation_failed', 'epoch must be an integer from 1 to 99999999');
  }
}

export class LocalKeyringProvider implements KeyProvider {
  readonly name = 'local-keyring';
  readonly #dir: string;
  readonly #root: Uint8Array;
  readonly #keks = new Map<number, Uint8Array>();
  /**
   * Each epoch's KEK ready to wrap (its key schedule derived once: envelope algorithm 2),
   * made on first use; dropped and wiped with the KEK (`forget`).
   */
  readonly #wrappers = new Map<number, KeyWrapper>();
  /**
   * How many times each epoch was forgotten (`forget`, which destroyEpoch calls first).
   * A load of a KEK or a wrapper that awaited across a forget is discarded, never
   * cached: a destroyed epoch's key must not come back into memory.
   */
  readonly #forgotten = new Map<number, number>();
  /** Certificate-signing keys, in the keyring's `certificate-signing/` folder (signing-keys.ts). */
  readonly #signing: SigningKeyring;

  /** Takes ownership of `rootKey` (zeroed on close). */
  private constructor(dir: string, rootKey: Uint8Array) {
    this.#dir = dir;
    this.#root = rootKey;
    this.#signing = new SigningKeyring(dir, rootKey);
  }

  static async open(dir: string, rootKey: Uint8Array): Promise<LocalKeyringProvider> {
    // private to the service: created 0700, refused when others may write into it, files 0600
    ensurePrivateDir(dir, 'the keyring directory (LETHE_KEYRING_DIR)');
    tightenTree(dir);
    const provider = new LocalKeyringProvider(dir, rootKey);
    // Fail at start-up, not at the first request, when the root key does not match.
    const epochs = await provider.listEpochs();
    const last = epochs.at(-1);
    if (last !== undefined) zeroize(await provider.#kek(last));
    // A keyring that never sealed anything never signed with the root-derived key: its signing keys
    // are made now, its own key alone, so that no later opening takes it for a keyring from before signing keys.
    if (await isBrandNew(dir)) await provider.#signing.startFresh();
    return provider;
  }

  async createEpoch(epoch: number): Promise<void> {
    checkEpoch(epoch);
    const file = path.join(this.#dir, fileName(epoch));
    const kek = randomBytes(32);
    const sealed = seal({
      key: this.#root,
      keyId: ROOT_KEY_ID,
      plaintext: kek,
      associatedData: encodeContext('epoch-kek', { epoch }),
    });
    const tmp = `${file}.${nodeRandomBytes(6).toString('hex')}.tmp`;
    try {
      await writeFile(tmp, sealed, { mode: 0o600, flag: 'wx' });
      const h = await openFile(tmp, 'r');
      await h.sync();
      await h.close();
      // link-then-unlink is atomic and never replaces an existing epoch file
      try {
        await link(tmp, file);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      await fsyncDir(this.#dir);
    } finally {
      zeroize(kek);
      await unlink(tmp).catch(() => {});
    }
  }

  async wrap(epoch: number, dek: Uint8Array, keyId: string, purpose: KeyPurpose): Promise<Uint8Array> {
    // synchronous once the wrapper is in hand: a forget() in between wipes it, and it refuses (epoch_unavailable)
    return (await this.#wrapper(epoch)).wrap(dek, keyId, purpose);
  }

  async unwrap(epoch: number, wrapped: Uint8Array, keyId: string, purpose: KeyPurpose, options: UnwrapOptions = {}): Promise<Uint8Array> {
    return (await this.#wrapper(epoch)).unwrap(wrapped, keyId, purpose, { acceptLegacy: options.acceptLegacy === true });
  }

  /** The epoch's KeyWrapper, made from its KEK on first use. */
  async #wrapper(epoch: number): Promise<KeyWrapper> {
    checkEpoch(epoch);
    const cached = this.#wrappers.get(epoch);
    if (cached) return cached;
    const generation = this.#forgotten.get(epoch) ?? 0;
    const kek = await this.#kek(epoch);
    try {
      if ((this.#forgotten.get(epoch) ?? 0) !== generation) throw forgottenMeanwhile(epoch);
      // another caller may have made it meanwhile; keep one
      const again = this.#wrappers.get(epoch);
      if (again) return again;
      const wrapper = new KeyWrapper(kek, kekId(epoch));
      this.#wrappers.set(epoch, wrapper);
      return wrapper;
    } finally {
      zeroize(kek);
    }
  }

  async destroyEpoch(epoch: number): Promise<void> {
    checkEpoch(epoch);
    this.forget(epoch);
    // shredded here, or already by another replica (which writes its own tombstone)
    if (!(await shredFile(path.join(this.#dir, fileName(epoch))))) return;
    await this.#tombstone(epoch);
  }

  async destroyedAt(epoch: number): Promise<Date | undefined> {
    checkEpoch(epoch);
    let text: string;
    try {
      text = await readFile(tombstonePath(this.#dir, epoch), 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
    try {
      const at = new Date(String((JSON.parse(text) as { destroyedAt?: unknown }).destroyedAt));
      return Number.isNaN(at.getTime()) ? undefined : at;
    } catch {
      return undefined; // a tombstone cut short by a crash says nothing
    }
  }

  /** Records when the epoch's KEK was destroyed; the first record stays (written once). */
  async #tombstone(epoch: number): Promise<void> {
    const dir = path.join(this.#dir, TOMBSTONE_DIR);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    try {
      await writeFile(tombstonePath(this.#dir, epoch), JSON.stringify({ epoch, destroyedAt: new Date().toISOString() }), { mode: 0o600, flag: 'wx' });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    await fsyncDir(dir);
  }

  async destructionState(epoch: number): Promise<DestructionState> {
    checkEpoch(epoch);
    // destroyed here once (its tombstone): gone for good, even if a KEK has been made under the number since
    // (a fresh database on this keyring) — that one is another key, which opens nothing the first one wrapped
    if ((await this.destroyedAt(epoch)) !== undefined) return { state: 'gone' };
    return (await this.listEpochs()).includes(epoch) ? { state: 'present' } : { state: 'gone' };
  }

  async listEpochs(): Promise<number[]> {
    const names = await readdir(this.#dir);
    return names
      .map((n) => FILE_PATTERN.exec(n)?.[1])
      .filter((n): n is string => n !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
  }

  forget(epoch: number): void {
    this.#forgotten.set(epoch, (this.#forgotten.get(epoch) ?? 0) + 1);
    const kek = this.#keks.get(epoch);
    if (kek) zeroize(kek);
    this.#keks.delete(epoch);
    this.#wrappers.get(epoch)?.destroy();
    this.#wrappers.delete(epoch);
  }

  signCertificate(payload: { [key: string]: Json }): Promise<Certificate> {
    return this.#signing.sign(payload);
  }

  listSigningKeys(): Promise<SigningKeyInfo[]> {
    return this.#signing.list();
  }

  rotateSigningKey(): Promise<{ current: SigningKeyInfo; retired: SigningKeyInfo }> {
    return this.#signing.rotate();
  }

  async deriveSystemKey(label: SubkeyLabel): Promise<Uint8Array> {
    return deriveSubkey(this.#root, label);
  }

  async close(): Promise<void> {
    for (const epoch of new Set([...this.#keks.keys(), ...this.#wrappers.keys()])) this.forget(epoch);
    zeroize(this.#root);
  }

  /**
   * A private copy of the epoch's KEK, taken synchronously from the cache so that a
   * concurrent forget() (which zeroes the cached copy) can never hand a zeroed key to
   * wrap. The caller zeroes the copy.
   */
  async #kek(epoch: number): Promise<Uint8Array> {
    checkEpoch(epoch);
    const cached = this.#keks.get(epoch);
    if (cached) return cached.slice();
    const generation = this.#forgotten.get(epoch) ?? 0;
    let sealed: Uint8Array;
    try {
      sealed = new Uint8Array(await readFile(path.join(this.#dir, fileName(epoch))));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new LetheError('epoch_unavailable', `KEK epoch ${epoch} does not exist in the keyring (destroyed or never created)`);
      }
      throw e;
    }
    let kek: Uint8Array;
    try {
      kek = open({ key: this.#root, envelope: sealed, expectedKeyId: ROOT_KEY_ID, associatedData: encodeContext('epoch-kek', { epoch }) });
    } catch (e) {
      if (isLetheError(e)) {
        throw new LetheError('epoch_unavailable', `KEK epoch ${epoch} cannot be unsealed: the root key does not match this keyring`);
      }
      throw e;
    }
    // forgotten (destroyed) while it was read: never cache it again
    if ((this.#forgotten.get(epoch) ?? 0) !== generation) {
      zeroize(kek);
      throw forgottenMeanwhile(epoch);
    }
    // Another caller may have loaded it meanwhile; keep one copy.
    const again = this.#keks.get(epoch);
    if (again) {
      zeroize(kek);
      return again.slice();
    }
    this.#keks.set(epoch, kek);
    return kek.slice();
  }
}

/** A KEK load that awaited across the epoch's forget (its destruction): refused, and nothing cached. */
function forgottenMeanwhile(epoch: number): LetheError {
  return new LetheError('epoch_unavailable', `KEK epoch ${epoch} was dropped from memory while it was being loaded (destroyed or being destroyed)`);
}

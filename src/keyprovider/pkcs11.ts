/**
 * The PKCS#11 epoch store: epoch KEKs are AES-256 secret keys generated inside a
 * PKCS#11 token (an HSM, or SoftHSM2 in the tests) and never extractable. lethe sends
 * the token a DEK to encrypt and gets it back on decrypt; the KEK bytes never exist in
 * lethe's memory or files.
 *
 * Wrap mechanism: CKM_AES_GCM, 12-byte random IV (randomBytes), 128-bit tag, with
 * associated data binding the epoch, the key object's id and `wrapContext(keyId,
 * purpose)` (src/crypto/wrap.ts). AES key wrap (CKM_AES_KEY_WRAP_PAD) is not used: it
 * takes no associated data, so a wrapped DEK copied onto another key's row, or used for
 * another purpose or under another epoch number, could not be told apart. With 12-byte
 * random IVs a KEK must not encrypt much more than 2^32 DEKs; an epoch wraps far fewer.
 *
 * Wrapped form (77 bytes): version 0x01 | key object id (16) | IV (12) | ciphertext (32)
 * + tag (16). Anything else is refused with `envelope_malformed`.
 *
 * Key objects: label `${prefix}-epoch-NNNNNNNN`, CKA_ID 16 random bytes (the key object
 * id written into each wrap). PKCS#11 has no "create if absent": two replicas that
 * create the same epoch at the same moment may both generate a key under the label.
 * Both are kept — a DEK may already be wrapped under either — and every wrap names the
 * key object it used, so unwrap picks it exactly; new wraps use the key with the lowest
 * CKA_ID (the same choice in every replica); destroying an epoch destroys every key
 * under its label. Nothing is ever destroyed to resolve a race, so no wrap is lost.
 *
 * Destroying an epoch: C_DestroyObject on its key(s), then a tombstone, a CKO_DATA
 * object labelled `${prefix}-destroyed-NNNNNNNN` whose value is the ISO time (nothing
 * secret), so `destroyedAt` can answer. A crash between the two leaves no tombstone
 * (`destroyedAt` then cannot say); the KEK is gone either way.
 *
 * Sessions: the module is loaded and C_Initialize'd once per process (shared by every
 * store on it, finalized when the last one closes). Login is per application and
 * token, so the first store on a token logs in and the last to close logs out; a later
 * store on the same token must present the same PIN (compared as an HMAC under a
 * per-process random key). Each store holds a few sessions; operations on one session
 * run one at a time. Key object handles are cached per epoch and checked (label and
 * id) right before each use, in the same synchronous step as the C_EncryptInit /
 * C_DecryptInit that uses them, so a stale or reused handle is never used for a wrap.
 */
import { realpathSync } from 'node:fs';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import pkcs11js from 'pkcs11js';
import { constantTimeEqual, encodeContext, randomBytes, wrapContext, zeroize } from '../crypto/index.js';
import { LetheError, isLetheError } from '../errors.js';
import type { EpochKeyStore } from './epoch-store.js';
import type { DestructionState, KeyPurpose } from './provider.js';

type Handle = Buffer;
type PKCS11 = InstanceType<typeof pkcs11js.PKCS11>;

const VERSION = 0x01;
const KID_LENGTH = 16;
const IV_LENGTH = 12;
const DEK_LENGTH = 32;
const TAG_LENGTH = 16;
const WRAPPED_LENGTH = 1 + KID_LENGTH + IV_LENGTH + DEK_LENGTH + TAG_LENGTH;
const DEFAULT_SESSIONS = 4;

export interface Pkcs11Options {
  /** Path of the PKCS#11 module (shared library). */
  readonly module: string;
  /** Label of the token to use (exactly one present token must carry it). */
  readonly tokenLabel: string;
  /** The user PIN (UTF-8). Copied at once: the caller may zero its buffer when open returns. */
  readonly pin: Uint8Array | string;
  /** Prefix of every object label lethe makes in the token (several deployments may share one token). */
  readonly prefix: string;
  /** Sessions this store opens (default 4). */
  readonly sessions?: number;
}

/* ---------------------------------------------------------------- module registry */

interface TokenLogin {
  refs: number;
  /** HMAC-SHA256 of the PIN under PIN_DIGEST_KEY: a later store must present the same PIN. */
  readonly pinDigest: Uint8Array;
}

interface LoadedModule {
  readonly lib: PKCS11;
  refs: number;
  /** Whether C_Initialize was ours (only then do we C_Finalize). */
  readonly initializedHere: boolean;
  readonly logins: Map<string, TokenLogin>;
}

/** Modules loaded in this process, by real path. */
const MODULES = new Map<string, LoadedModule>();
const PIN_DIGEST_KEY = randomBytes(32);

function code(e: unknown): number | undefined {
  return e instanceof pkcs11js.Pkcs11Error ? e.code : undefined;
}

function ckr(e: unknown): string {
  return e instanceof Error ? e.message.split('\n')[0]! : 'unknown error';
}

function acquireModule(modulePath: string): { key: string; entry: LoadedModule } {
  let key: string;
  try {
    key = realpathSync(modulePath);
  } catch (e) {
    throw new LetheError('validation_failed', `the PKCS#11 module ${modulePath} cannot be loaded: ${(e as NodeJS.ErrnoException).code ?? 'not found'}`);
  }
  const known = MODULES.get(key);
  if (known) {
    known.refs++;
    return { key, entry: known };
  }
  const lib = new pkcs11js.PKCS11();
  try {
    lib.load(key);
  } catch (e) {
    throw new LetheError('validation_failed', `the PKCS#11 module ${modulePath} cannot be loaded: ${ckr(e)}`);
  }
  let initializedHere = true;
  try {
    // OS locking: pkcs11js runs the *Async calls on libuv worker threads
    lib.C_Initialize({ flags: pkcs11js.CKF_OS_LOCKING_OK });
  } catch (e) {
    if (code(e) !== pkcs11js.CKR_CRYPTOKI_ALREADY_INITIALIZED) {
      try {
        lib.close();
      } catch {
        // nothing more to release
      }
      throw new LetheError('unavailable', `the PKCS#11 module ${modulePath} failed to initialize: ${ckr(e)}`, { retryable: false });
    }
    initializedHere = false; // initialized by someone else in this process: theirs to finalize
  }
  const entry: LoadedModule = { lib, refs: 1, initializedHere, logins: new Map() };
  MODULES.set(key, entry);
  return { key, entry };
}

function releaseModule(key: string): void {
  const entry = MODULES.get(key);
  if (!entry || --entry.refs > 0) return;
  MODULES.delete(key);
  try {
    if (entry.initializedHere) entry.lib.C_Finalize();
    entry.lib.close();
  } catch {
    // the process keeps going; the module is unusable either way
  }
}

/* ---------------------------------------------------------------- helpers */

function checkEpoch(epoch: number): void {
  if (!Number.isSafeInteger(epoch) || epoch < 1 || epoch > 99_999_999) {
    throw new LetheError('validation_failed', 'epoch must be an integer from 1 to 99999999');
  }
}

const pad = (epoch: number): string => String(epoch).padStart(8, '0');

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The associated data of a wrap: what this store binds (version, epoch, key object) and then the port's wrap context. */
function associatedData(epoch: number, kid: Uint8Array, keyId: string, purpose: KeyPurpose): Buffer {
  const store = encodeContext('pkcs11-epoch-wrap', { version: VERSION, epoch, kid: bytesToHex(kid) });
  const port = wrapContext(keyId, purpose);
  // encodeContext output is self-delimiting, so the concatenation is unambiguous
  return Buffer.concat([store, port]);
}

function gcm(iv: Buffer, aad: Buffer) {
  return {
    mechanism: pkcs11js.CKM_AES_GCM,
    parameter: { type: pkcs11js.CK_PARAMS_AES_GCM, iv, ivBits: IV_LENGTH * 8, aad, tagBits: TAG_LENGTH * 8 },
  };
}

const HANDLE_GONE = new Set<number>([pkcs11js.CKR_OBJECT_HANDLE_INVALID, pkcs11js.CKR_KEY_HANDLE_INVALID]);
const SESSION_LOST = new Set<number>([
  pkcs11js.CKR_SESSION_HANDLE_INVALID,
  pkcs11js.CKR_SESSION_CLOSED,
  pkcs11js.CKR_USER_NOT_LOGGED_IN,
  pkcs11js.CKR_DEVICE_REMOVED,
  pkcs11js.CKR_TOKEN_NOT_PRESENT,
  pkcs11js.CKR_DEVICE_ERROR,
]);
/**
 * What a token answers when a GCM tag does not verify. The standard says
 * CKR_ENCRYPTED_DATA_INVALID; SoftHSM 2.6 answers CKR_GENERAL_ERROR.
 */
const AUTH_FAILED = new Set<number>([pkcs11js.CKR_ENCRYPTED_DATA_INVALID, pkcs11js.CKR_ENCRYPTED_DATA_LEN_RANGE, pkcs11js.CKR_GENERAL_ERROR]);

/** A token failure no better code describes; never carries secrets (PKCS#11 errors are return-code names). */
function tokenFailure(what: string, e: unknown): LetheError {
  if (isLetheError(e)) return e;
  const c = code(e);
  if (c !== undefined && SESSION_LOST.has(c)) {
    return new LetheError('unavailable', `the PKCS#11 token could not ${what}: ${ckr(e)} (session lost or token removed)`, { cause: e });
  }
  return new LetheError('unavailable', `the PKCS#11 token could not ${what}: ${ckr(e)}`, { cause: e, retryable: false });
}

/**
 * The attributes of an epoch KEK generated in the token: AES-256, on the token, private,
 * sensitive, never extractable or modifiable, for encrypt/decrypt only; `label` names
 * the epoch, `kid` (16 bytes) is the CKA_ID every wrap records.
 */
export function epochKeyTemplate(label: string, kid: Buffer): pkcs11js.Template {
  return [
    { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
    { type: pkcs11js.CKA_KEY_TYPE, value: pkcs11js.CKK_AES },
    { type: pkcs11js.CKA_VALUE_LEN, value: 32 },
    { type: pkcs11js.CKA_TOKEN, value: true },
    { type: pkcs11js.CKA_PRIVATE, value: true },
    { type: pkcs11js.CKA_SENSITIVE, value: true },
    { type: pkcs11js.CKA_EXTRACTABLE, value: false },
    { type: pkcs11js.CKA_MODIFIABLE, value: false },
    { type: pkcs11js.CKA_ENCRYPT, value: true },
    { type: pkcs11js.CKA_DECRYPT, value: true },
    { type: pkcs11js.CKA_WRAP, value: false },
    { type: pkcs11js.CKA_UNWRAP, value: false },
    { type: pkcs11js.CKA_SIGN, value: false },
    { type: pkcs11js.CKA_VERIFY, value: false },
    { type: pkcs11js.CKA_DERIVE, value: false },
    { type: pkcs11js.CKA_LABEL, value: label },
    { type: pkcs11js.CKA_ID, value: kid },
  ];
}

interface KeyRef {
  readonly handle: Handle;
  readonly kid: Buffer;
}

interface Session {
  readonly handle: Handle;
  /** Operations on a session run one at a time: each waits for the one before. */
  tail: Promise<unknown>;
  pending: number;
}

/* ---------------------------------------------------------------- the store */

export class Pkcs11EpochStore implements EpochKeyStore {
  readonly name = 'pkcs11';
  readonly #lib: PKCS11;
  readonly #moduleKey: string;
  readonly #loginKey: string;
  readonly #prefix: string;
  readonly #sessions: Session[];
  /** Key objects per epoch, lowest CKA_ID first; checked before each use. */
  readonly #keys = new Map<number, KeyRef[]>();
  #closed = false;

  private constructor(lib: PKCS11, moduleKey: string, loginKey: string, prefix: string, sessions: Session[]) {
    this.#lib = lib;
    this.#moduleKey = moduleKey;
    this.#loginKey = loginKey;
    this.#prefix = prefix;
    this.#sessions = sessions;
  }

  static async open(opts: Pkcs11Options): Promise<Pkcs11EpochStore> {
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(opts.prefix)) {
      throw new LetheError('validation_failed', 'the PKCS#11 key prefix must be 1 to 64 letters, digits, ".", "_" or "-"');
    }
    const count = opts.sessions ?? DEFAULT_SESSIONS;
    if (!Number.isSafeInteger(count) || count < 1 || count > 64) throw new LetheError('validation_failed', 'PKCS#11 sessions must be from 1 to 64');
    // our own copy of the PIN, zeroed before returning; the PIN never enters a message
    const pin = typeof opts.pin === 'string' ? new TextEncoder().encode(opts.pin) : opts.pin.slice();
    const { key: moduleKey, entry } = acquireModule(opts.module);
    const lib = entry.lib;
    const opened: Handle[] = [];
    let loginKey: string | undefined;
    try {
      const slot = findSlot(lib, opts.module, opts.tokenLabel);
      for (let i = 0; i < count; i++) opened.push(lib.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION));
      loginKey = `${bytesToHex(slot)}`;
      login(lib, entry, loginKey, opened[0]!, pin, opts.tokenLabel);
    } catch (e) {
      for (const s of opened) {
        try {
          lib.C_CloseSession(s);
        } catch {
          // already gone
        }
      }
      releaseModule(moduleKey);
      throw isLetheError(e) ? e : tokenFailure(`open token ${opts.tokenLabel}`, e);
    } finally {
      zeroize(pin);
    }
    const sessions = opened.map((handle) => ({ handle, tail: Promise.resolve(), pending: 0 }));
    return new Pkcs11EpochStore(lib, moduleKey, loginKey, opts.prefix, sessions);
  }

  #label(epoch: number): string {
    return `${this.#prefix}-epoch-${pad(epoch)}`;
  }

  #tombstoneLabel(epoch: number): string {
    return `${this.#prefix}-destroyed-${pad(epoch)}`;
  }

  /** Runs `op` on the least busy session, after the operations already queued on it. */
  #run<T>(what: string, op: (session: Handle) => Promise<T> | T): Promise<T> {
    if (this.#closed) return Promise.reject(new LetheError('unavailable', 'the PKCS#11 epoch store is closed', { retryable: false }));
    let session = this.#sessions[0]!;
    for (const s of this.#sessions) if (s.pending < session.pending) session = s;
    session.pending++;
    const result = session.tail.then(() => op(session.handle));
    session.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result.then(
      (v) => {
        session.pending--;
        return v;
      },
      (e: unknown) => {
        session.pending--;
        throw tokenFailure(what, e);
      },
    );
  }

  #find(session: Handle, template: pkcs11js.Template): Handle[] {
    const lib = this.#lib;
    lib.C_FindObjectsInit(session, template);
    const found: Handle[] = [];
    try {
      for (;;) {
        const batch = lib.C_FindObjects(session, 64);
        if (batch.length === 0) break;
        found.push(...batch);
      }
    } finally {
      lib.C_FindObjectsFinal(session);
    }
    return found;
  }

  /** The epoch's key objects, lowest CKA_ID first (from the cache unless `fresh`). */
  #keyRefs(session: Handle, epoch: number, fresh: boolean): KeyRef[] {
    const cached = this.#keys.get(epoch);
    if (cached && !fresh) return cached;
    const refs: KeyRef[] = [];
    for (const handle of this.#find(session, [
      { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
      { type: pkcs11js.CKA_LABEL, value: this.#label(epoch) },
    ])) {
      try {
        const [id] = this.#lib.C_GetAttributeValue(session, handle, [{ type: pkcs11js.CKA_ID }]);
        if (id && id.value.length === KID_LENGTH) refs.push({ handle, kid: Buffer.from(id.value) });
      } catch (e) {
        if (!HANDLE_GONE.has(code(e) ?? -1)) throw e; // destroyed meanwhile
      }
    }
    refs.sort((a, b) => Buffer.compare(a.kid, b.kid));
    if (refs.length > 0) this.#keys.set(epoch, refs);
    else this.#keys.delete(epoch);
    return refs;
  }

  /** Whether the handle still names this epoch's key object `kid` (a handle may go stale or be reused). */
  #current(session: Handle, epoch: number, ref: KeyRef): boolean {
    try {
      const attrs = this.#lib.C_GetAttributeValue(session, ref.handle, [{ type: pkcs11js.CKA_LABEL }, { type: pkcs11js.CKA_ID }]);
      return attrs[0]?.value.toString('utf8') === this.#label(epoch) && attrs[1]?.value.equals(ref.kid) === true;
    } catch (e) {
      if (HANDLE_GONE.has(code(e) ?? -1)) return false;
      throw e;
    }
  }

  /**
   * Finds the key object (the one named `kid`, or the wrapping choice) and runs `init`
   * with it in the same synchronous step as the check that the handle is still it.
   */
  #withKey(session: Handle, epoch: number, kid: Buffer | undefined, init: (ref: KeyRef) => void): KeyRef {
    for (const fresh of [false, true]) {
      const refs = this.#keyRefs(session, epoch, fresh);
      if (refs.length === 0) break;
      const ref = kid === undefined ? refs[0] : refs.find((r) => r.kid.equals(kid));
      if (!ref) {
        if (!fresh) continue;
        // a key of this epoch number that was destroyed (the number taken again since): another KEK, not damage
        if (kid !== undefined && this.#destroyedKids(session, epoch).some((k) => k.equals(kid))) {
          throw new LetheError('key_commitment_mismatch', `the wrapped key was made under an earlier, destroyed key of epoch ${epoch}, not one the token holds now`);
        }
        throw new LetheError('decrypt_failed', `the wrapped key was not made under any key of epoch ${epoch} in this token`);
      }
      if (!this.#current(session, epoch, ref)) continue;
      init(ref);
      return ref;
    }
    throw new LetheError('epoch_unavailable', `KEK epoch ${epoch} does not exist in the PKCS#11 token (destroyed or never created)`);
  }

  async createEpoch(epoch: number): Promise<void> {
    checkEpoch(epoch);
    await this.#run(`create epoch ${epoch}`, async (session) => {
      if (this.#keyRefs(session, epoch, true).length > 0) return; // never a second key when one is seen
      await this.#lib.C_GenerateKeyAsync(session, { mechanism: pkcs11js.CKM_AES_KEY_GEN }, epochKeyTemplate(this.#label(epoch), Buffer.from(randomBytes(KID_LENGTH))));
      // see what the token holds now, including a key another replica made meanwhile
      this.#keyRefs(session, epoch, true);
    });
  }

  async wrap(epoch: number, dek: Uint8Array, keyId: string, purpose: KeyPurpose): Promise<Uint8Array> {
    checkEpoch(epoch);
    if (dek.length !== DEK_LENGTH) throw new LetheError('validation_failed', `wrapped key must be ${DEK_LENGTH} bytes`);
    wrapContext(keyId, purpose); // refuses an unknown purpose before touching the token
    return this.#run(`wrap under epoch ${epoch}`, async (session) => {
      const iv = Buffer.from(randomBytes(IV_LENGTH));
      const ref = this.#withKey(session, epoch, undefined, (r) => {
        this.#lib.C_EncryptInit(session, gcm(iv, associatedData(epoch, r.kid, keyId, purpose)), r.handle);
      });
      const input = Buffer.from(dek);
      const out = Buffer.alloc(DEK_LENGTH + TAG_LENGTH + 16);
      try {
        const sealed = await this.#lib.C_EncryptAsync(session, input, out);
        if (sealed.length !== DEK_LENGTH + TAG_LENGTH) throw new LetheError('internal', `the PKCS#11 token returned ${sealed.length} bytes for a wrap, not ${DEK_LENGTH + TAG_LENGTH}`);
        const wrapped = new Uint8Array(WRAPPED_LENGTH);
        wrapped[0] = VERSION;
        wrapped.set(ref.kid, 1);
        wrapped.set(iv, 1 + KID_LENGTH);
        wrapped.set(sealed, 1 + KID_LENGTH + IV_LENGTH);
        return wrapped;
      } finally {
        zeroize(input);
      }
    });
  }

  async unwrap(epoch: number, wrapped: Uint8Array, keyId: string, purpose: KeyPurpose): Promise<Uint8Array> {
    checkEpoch(epoch);
    if (wrapped.length !== WRAPPED_LENGTH || wrapped[0] !== VERSION) {
      throw new LetheError('envelope_malformed', `a PKCS#11-wrapped key is ${WRAPPED_LENGTH} bytes starting with version ${VERSION}`);
    }
    wrapContext(keyId, purpose); // refuses an unknown purpose before touching the token
    const kid = Buffer.from(wrapped.subarray(1, 1 + KID_LENGTH));
    const iv = Buffer.from(wrapped.subarray(1 + KID_LENGTH, 1 + KID_LENGTH + IV_LENGTH));
    const sealed = Buffer.from(wrapped.subarray(1 + KID_LENGTH + IV_LENGTH));
    return this.#run(`unwrap under epoch ${epoch}`, async (session) => {
      this.#withKey(session, epoch, kid, (r) => {
        this.#lib.C_DecryptInit(session, gcm(iv, associatedData(epoch, r.kid, keyId, purpose)), r.handle);
      });
      const out = Buffer.alloc(DEK_LENGTH + TAG_LENGTH);
      try {
        let plain: Buffer;
        try {
          plain = await this.#lib.C_DecryptAsync(session, sealed, out);
        } catch (e) {
          if (AUTH_FAILED.has(code(e) ?? -1)) {
            throw new LetheError('decrypt_failed', `the wrapped key does not open under epoch ${epoch} as this key id and purpose`);
          }
          throw e;
        }
        if (plain.length !== DEK_LENGTH) throw new LetheError('envelope_malformed', 'wrapped key has the wrong length');
        return new Uint8Array(plain);
      } finally {
        zeroize(out);
      }
    });
  }

  async destroyEpoch(epoch: number): Promise<void> {
    checkEpoch(epoch);
    await this.#run(`destroy epoch ${epoch}`, (session) => {
      this.#keys.delete(epoch);
      const destroyed: Buffer[] = [];
      for (const ref of this.#keyRefs(session, epoch, true)) {
        try {
          this.#lib.C_DestroyObject(session, ref.handle);
          destroyed.push(ref.kid);
        } catch (e) {
          if (!HANDLE_GONE.has(code(e) ?? -1)) throw e; // destroyed meanwhile by another replica
        }
      }
      this.#keys.delete(epoch);
      // destroyed here, or already by another replica (which writes its own tombstone)
      if (destroyed.length === 0) return;
      // the time, then the CKA_IDs of the keys destroyed (nothing secret): a wrap naming one is told apart from a damaged one
      const record = `${new Date().toISOString()}\n${destroyed.map((k) => k.toString('hex')).join(',')}`;
      this.#lib.C_CreateObject(session, [
        { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_DATA },
        { type: pkcs11js.CKA_TOKEN, value: true },
        { type: pkcs11js.CKA_PRIVATE, value: true },
        { type: pkcs11js.CKA_MODIFIABLE, value: false },
        { type: pkcs11js.CKA_APPLICATION, value: 'lethe' },
        { type: pkcs11js.CKA_LABEL, value: this.#tombstoneLabel(epoch) },
        { type: pkcs11js.CKA_VALUE, value: Buffer.from(record, 'utf8') },
      ]);
    });
  }

  /** The CKA_IDs of the epoch's destroyed keys, from its tombstones. */
  #destroyedKids(session: Handle, epoch: number): Buffer[] {
    const kids: Buffer[] = [];
    for (const handle of this.#tombstones(session, epoch)) {
      try {
        const [value] = this.#lib.C_GetAttributeValue(session, handle, [{ type: pkcs11js.CKA_VALUE }]);
        const list = value ? (value.value.toString('utf8').split('\n')[1] ?? '') : '';
        for (const hex of list.split(',')) if (/^[0-9a-f]+$/.test(hex)) kids.push(Buffer.from(hex, 'hex'));
      } catch (e) {
        if (!HANDLE_GONE.has(code(e) ?? -1)) throw e;
      }
    }
    return kids;
  }

  #tombstones(session: Handle, epoch: number): Handle[] {
    return this.#find(session, [
      { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_DATA },
      { type: pkcs11js.CKA_LABEL, value: this.#tombstoneLabel(epoch) },
    ]);
  }

  async listEpochs(): Promise<number[]> {
    const pattern = new RegExp(`^${escapeRegExp(this.#prefix)}-epoch-(\\d{8})$`);
    return this.#run('list epochs', (session) => {
      const epochs = new Set<number>();
      for (const handle of this.#find(session, [{ type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY }])) {
        try {
          const [label] = this.#lib.C_GetAttributeValue(session, handle, [{ type: pkcs11js.CKA_LABEL }]);
          const m = label ? pattern.exec(label.value.toString('utf8')) : null;
          if (m) epochs.add(Number(m[1]));
        } catch (e) {
          if (!HANDLE_GONE.has(code(e) ?? -1)) throw e;
        }
      }
      return [...epochs].sort((a, b) => a - b);
    });
  }

  async destructionState(epoch: number): Promise<DestructionState> {
    checkEpoch(epoch);
    // C_DestroyObject is final: with a tombstone the destroyed keys are gone, whatever was made under the number
    // since (another key, refused as key_commitment_mismatch); without one, a key object under the label is present
    return this.#run(`look up epoch ${epoch}`, (session) =>
      this.#tombstones(session, epoch).length > 0 || this.#keyRefs(session, epoch, true).length === 0 ? { state: 'gone' as const } : { state: 'present' as const },
    );
  }

  async destroyedAt(epoch: number): Promise<Date | undefined> {
    checkEpoch(epoch);
    return this.#run(`read the tombstone of epoch ${epoch}`, (session) => {
      let earliest: Date | undefined;
      for (const handle of this.#tombstones(session, epoch)) {
        try {
          const [value] = this.#lib.C_GetAttributeValue(session, handle, [{ type: pkcs11js.CKA_VALUE }]);
          const at = new Date(value ? (value.value.toString('utf8').split('\n')[0] ?? '') : '');
          if (!Number.isNaN(at.getTime()) && (earliest === undefined || at < earliest)) earliest = at;
        } catch (e) {
          if (!HANDLE_GONE.has(code(e) ?? -1)) throw e;
        }
      }
      return earliest;
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all(this.#sessions.map((s) => s.tail));
    this.#keys.clear();
    const entry = MODULES.get(this.#moduleKey);
    const login = entry?.logins.get(this.#loginKey);
    if (login && --login.refs === 0) {
      entry!.logins.delete(this.#loginKey);
      try {
        this.#lib.C_Logout(this.#sessions[0]!.handle);
      } catch {
        // logged out already (session lost)
      }
    }
    for (const s of this.#sessions) {
      try {
        this.#lib.C_CloseSession(s.handle);
      } catch {
        // already closed
      }
    }
    releaseModule(this.#moduleKey);
  }
}

/** The slot of the one present token labelled `tokenLabel`; errors name the labels present. */
function findSlot(lib: PKCS11, modulePath: string, tokenLabel: string): Handle {
  const slots = lib.C_GetSlotList(true);
  if (slots.length === 0) {
    throw new LetheError('unavailable', `no token is present in any slot of the PKCS#11 module ${modulePath}`);
  }
  const labelled = slots.flatMap((slot) => {
    const info = lib.C_GetTokenInfo(slot);
    // a slot with an uninitialized token (SoftHSM always offers one) has no label to name
    return info.flags & pkcs11js.CKF_TOKEN_INITIALIZED ? [{ slot, label: info.label.replace(/[ \0]+$/, '') }] : [];
  });
  const matching = labelled.filter((t) => t.label === tokenLabel);
  if (matching.length === 1) return matching[0]!.slot;
  const names = labelled.map((t) => JSON.stringify(t.label)).join(', ') || 'none initialized';
  if (matching.length > 1) {
    throw new LetheError('validation_failed', `${matching.length} tokens of the PKCS#11 module ${modulePath} are labelled ${JSON.stringify(tokenLabel)}; give each a distinct label`);
  }
  throw new LetheError('validation_failed', `no token labelled ${JSON.stringify(tokenLabel)} in the PKCS#11 module ${modulePath}; tokens present: ${names}`);
}

/** Logs the application in to the token once; a later store on the same token must present the same PIN. */
function login(lib: PKCS11, entry: LoadedModule, loginKey: string, session: Handle, pin: Uint8Array, tokenLabel: string): void {
  const digest = hmac(sha256, PIN_DIGEST_KEY, pin);
  const refused = new LetheError('validation_failed', `the PKCS#11 token ${JSON.stringify(tokenLabel)} refused the PIN (CKR_PIN_INCORRECT)`);
  const known = entry.logins.get(loginKey);
  if (known) {
    if (!constantTimeEqual(known.pinDigest, digest)) throw refused;
    known.refs++;
    return;
  }
  try {
    // pkcs11js passes the PIN as a JavaScript string, which cannot be zeroed
    lib.C_Login(session, pkcs11js.CKU_USER, new TextDecoder().decode(pin));
  } catch (e) {
    const c = code(e);
    if (c === pkcs11js.CKR_PIN_INCORRECT || c === pkcs11js.CKR_PIN_INVALID || c === pkcs11js.CKR_PIN_LEN_RANGE) throw refused;
    if (c === pkcs11js.CKR_PIN_LOCKED) {
      throw new LetheError('unavailable', `the PKCS#11 token ${JSON.stringify(tokenLabel)} has locked its user PIN (CKR_PIN_LOCKED)`, { retryable: false });
    }
    // logged in by other code of this process that does not use this registry: its PIN is not ours to check
    if (c !== pkcs11js.CKR_USER_ALREADY_LOGGED_IN) throw new LetheError('unavailable', `the PKCS#11 token ${JSON.stringify(tokenLabel)} refused the login: ${ckr(e)}`, { retryable: false });
  }
  entry.logins.set(loginKey, { refs: 1, pinDigest: digest });
}

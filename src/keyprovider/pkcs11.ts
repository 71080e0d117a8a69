import pkcs11js from 'pkcs11js';
import { randomBytes, wrapContext, zeroize } from '../crypto/index.js';
import { LetheError } from '../errors.js';
import type { EpochKeyStore } from './epoch-store.js';
import type { DestructionState, KeyPurpose } from './provider.js';
export type { Pkcs11Options } from './pkcs11-module.js';
import { type Handle, type PKCS11, MODULES, code, releaseModule, HANDLE_GONE, AUTH_FAILED, tokenFailure } from './pkcs11-module.js';
import {
  VERSION,
  KID_LENGTH,
  IV_LENGTH,
  DEK_LENGTH,
  TAG_LENGTH,
  WRAPPED_LENGTH,
  checkEpoch,
  pad,
  escapeRegExp,
  associatedData,
  gcm,
  epochKeyTemplate,
} from './pkcs11-format.js';
import { type KeyRef, openSessions, type Pkcs11Options, type Session } from './pkcs11-module.js';

export { epochKeyTemplate } from './pkcs11-format.js';

const DEFAULT_SESSIONS = 4;

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
    const { lib, moduleKey, loginKey, sessions } = openSessions(opts, count);
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
          throw new LetheError(
            'key_commitment_mismatch',
            `the wrapped key was made under an earlier, destroyed key of epoch ${epoch}, not one the token holds now`,
          );
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
      await this.#lib.C_GenerateKeyAsync(
        session,
        { mechanism: pkcs11js.CKM_AES_KEY_GEN },
        epochKeyTemplate(this.#label(epoch), Buffer.from(randomBytes(KID_LENGTH))),
      );
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
        if (sealed.length !== DEK_LENGTH + TAG_LENGTH)
          throw new LetheError('internal', `the PKCS#11 token returned ${sealed.length} bytes for a wrap, not ${DEK_LENGTH + TAG_LENGTH}`);
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
      this.#tombstones(session, epoch).length > 0 || this.#keyRefs(session, epoch, true).length === 0
        ? { state: 'gone' as const }
        : { state: 'present' as const },
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

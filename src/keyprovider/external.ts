/**
 * A key provider whose epoch KEKs live outside the process: in a PKCS#11 token or in
 * AWS KMS (an `EpochKeyStore`, epoch-store.ts). New epochs are always created in the
 * store, so their KEKs never exist in lethe's memory or files.
 *
 * The local keyring stays behind it for what is not an epoch KEK — the
 * certificate-signing keys and the system subkeys, both under the root key — and for
 * the epochs created before the store was configured. Those keep unwrapping from the
 * keyring until a KEK rotation re-wraps every key under a new epoch in the store and
 * retires them (destroyed in the keyring): that rotation is the migration
 * (`lethe kek migrate`). Each epoch lives in exactly one of the two; an epoch still
 * in the keyring is always looked up there first.
 */
import type { Certificate, Json, SubkeyLabel } from '../crypto/index.js';
import type { EpochKeyStore } from './epoch-store.js';
import type { LocalKeyringProvider } from './local.js';
import type { DestructionState, KeyProvider, KeyPurpose, SigningKeyInfo, UnwrapOptions } from './provider.js';

export class ExternalKeyProvider implements KeyProvider {
  readonly name: string;
  readonly #store: EpochKeyStore;
  readonly #local: LocalKeyringProvider;
  /** Epochs still in the local keyring (made before the store): it only shrinks, as rotations retire them. */
  readonly #inKeyring: Set<number>;

  private constructor(store: EpochKeyStore, local: LocalKeyringProvider, inKeyring: readonly number[]) {
    this.name = store.name;
    this.#store = store;
    this.#local = local;
    this.#inKeyring = new Set(inKeyring);
  }

  /** Takes ownership of both (closed with it). */
  static async open(store: EpochKeyStore, local: LocalKeyringProvider): Promise<ExternalKeyProvider> {
    return new ExternalKeyProvider(store, local, await local.listEpochs());
  }

  /** Epochs whose KEK is still in the local keyring: a rotation (`lethe kek migrate`) moves their keys into the store. */
  keyringEpochs(): number[] {
    return [...this.#inKeyring].sort((a, b) => a - b);
  }

  createEpoch(epoch: number): Promise<void> {
    // a keyring epoch being resumed (a rotation interrupted before the store was configured) stays in the keyring
    return this.#inKeyring.has(epoch) ? this.#local.createEpoch(epoch) : this.#store.createEpoch(epoch);
  }

  wrap(epoch: number, dek: Uint8Array, keyId: string, purpose: KeyPurpose): Promise<Uint8Array> {
    return this.#inKeyring.has(epoch) ? this.#local.wrap(epoch, dek, keyId, purpose) : this.#store.wrap(epoch, dek, keyId, purpose);
  }

  unwrap(epoch: number, wrapped: Uint8Array, keyId: string, purpose: KeyPurpose, options: UnwrapOptions = {}): Promise<Uint8Array> {
    // legacy (purpose-less) wraps exist only under keyring epochs of wrap format 1; the store never made one
    return this.#inKeyring.has(epoch) ? this.#local.unwrap(epoch, wrapped, keyId, purpose, options) : this.#store.unwrap(epoch, wrapped, keyId, purpose);
  }

  async destroyEpoch(epoch: number): Promise<void> {
    if (this.#inKeyring.has(epoch)) {
      await this.#local.destroyEpoch(epoch);
      this.#inKeyring.delete(epoch);
    }
    // and whatever the store holds under the number (nothing, for a keyring epoch made before it)
    await this.#store.destroyEpoch(epoch);
  }

  async listEpochs(): Promise<number[]> {
    const [local, stored] = await Promise.all([this.#local.listEpochs(), this.#store.listEpochs()]);
    return [...new Set([...local, ...stored])].sort((a, b) => a - b);
  }

  async destroyedAt(epoch: number): Promise<Date | undefined> {
    return (await this.#local.destroyedAt(epoch)) ?? (await this.#store.destroyedAt(epoch));
  }

  async destructionState(epoch: number): Promise<DestructionState> {
    // present in either place is present; a number the store never had is gone there
    const local = await this.#local.destructionState(epoch);
    return local.state === 'present' ? local : this.#store.destructionState(epoch);
  }

  forget(epoch: number): void {
    // another replica destroyed it: a keyring epoch drops its cached KEK; the store caches no key material
    this.#local.forget(epoch);
  }

  signCertificate(payload: { [key: string]: Json }): Promise<Certificate> {
    return this.#local.signCertificate(payload);
  }

  listSigningKeys(): Promise<SigningKeyInfo[]> {
    return this.#local.listSigningKeys();
  }

  rotateSigningKey(): Promise<{ current: SigningKeyInfo; retired: SigningKeyInfo }> {
    return this.#local.rotateSigningKey();
  }

  deriveSystemKey(label: SubkeyLabel): Promise<Uint8Array> {
    return this.#local.deriveSystemKey(label);
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.#store.close(), this.#local.close()]);
  }
}

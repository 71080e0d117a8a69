/**
 * The epoch half of the key-provider port, for roots of trust outside the process (a
 * PKCS#11 token, AWS KMS): epoch KEKs are created, used and destroyed inside the
 * store and never exist in lethe's memory or files. `ExternalKeyProvider`
 * (external.ts) puts one in front of the local keyring, which keeps what is not an
 * epoch KEK (certificate-signing keys, system subkeys) and any epoch made before the
 * store was configured, until a rotation retires it.
 */
import type { DestructionState, KeyPurpose } from './provider.js';

export interface EpochKeyStore {
  /** Short name for logs, /readyz, audit rows and residuals ("pkcs11", "aws-kms"). */
  readonly name: string;
  /**
   * Creates epoch `epoch`'s KEK inside the store. Idempotent: an epoch that already
   * exists is kept as it is (DEKs may already be wrapped under it), never overwritten.
   */
  createEpoch(epoch: number): Promise<void>;
  /**
   * Wraps the 32-byte `dek` under the epoch's KEK, binding `wrapContext(keyId, purpose)`
   * (src/crypto/wrap.ts) and the epoch as associated data (or encryption context): the
   * result unwraps only as that key, for that purpose, under that epoch.
   */
  wrap(epoch: number, dek: Uint8Array, keyId: string, purpose: KeyPurpose): Promise<Uint8Array>;
  /**
   * The wrapped key back; the caller zeroes it. Throws LetheError `decrypt_failed` for
   * a wrap made for another id, purpose or epoch (or tampered with), and
   * `epoch_unavailable` when the epoch's KEK is destroyed, scheduled for deletion or
   * was never created.
   */
  unwrap(epoch: number, wrapped: Uint8Array, keyId: string, purpose: KeyPurpose): Promise<Uint8Array>;
  /**
   * Destroys the epoch's KEK in the store (PKCS#11: C_DestroyObject; AWS KMS:
   * ScheduleKeyDeletion with the configured window). Idempotent; from its return on,
   * `unwrap` under the epoch fails with `epoch_unavailable`.
   */
  destroyEpoch(epoch: number): Promise<void>;
  /** Epochs whose KEK exists and can unwrap, ascending. */
  listEpochs(): Promise<number[]>;
  /**
   * When the epoch's KEK is gone for good, if the store can say: the time of
   * C_DestroyObject for a token (a record lethe keeps in the token, nothing secret), the
   * deletion date for AWS KMS — which lies in the future while the deletion is pending
   * (an account administrator could still cancel it until then). Undefined when the
   * epoch was never destroyed or the store cannot say.
   */
  destroyedAt(epoch: number): Promise<Date | undefined>;
  /**
   * What the store says of the epoch's KEK now: `present` (it can unwrap, or could
   * again: AWS KMS's cancelled deletion leaves a disabled key that can be re-enabled),
   * `pending` with the date the deletion takes effect, or `gone`.
   */
  destructionState(epoch: number): Promise<DestructionState>;
  /** Closes sessions and connections. */
  close(): Promise<void>;
}

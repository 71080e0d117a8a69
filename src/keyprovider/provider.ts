/**
 * The key-provider port: where epoch KEKs live. KEKs never enter PostgreSQL; the
 * database only holds DEKs wrapped under them. Destroying an epoch in the provider is
 * what makes every old copy of every DEK it wrapped (dead tuples, WAL, base backups,
 * PITR archives, replicas) inert.
 */
import type { Certificate, Json, KeyPurpose, SubkeyLabel } from '../crypto/index.js';

export type { KeyPurpose } from '../crypto/index.js';

export interface UnwrapOptions {
  /** Also accept the legacy, purpose-less wrap context (epochs of wrap format 1 only). */
  readonly acceptLegacy?: boolean;
}

/**
 * A certificate-signing key as anyone may see it: never its private part. `keyId` is
 * derived from the public key (`certificateKeyId`), so it is stable and checkable.
 */
export interface SigningKeyInfo {
  readonly keyId: string;
  readonly algorithm: 'Ed25519';
  /** base64url of the 32-byte Ed25519 public key. */
  readonly publicKey: string;
  /** `current` signs new certificates; `retired` keys sign nothing and stay listed so older certificates verify. */
  readonly state: 'current' | 'retired';
  /** `keyring`: a key of its own; `root-derived`: the key derived from the root key that signed certificates before there were signing keys. */
  readonly origin: 'keyring' | 'root-derived';
  /** ISO times; the root-derived key has no creation time of its own. */
  readonly createdAt: string | null;
  readonly retiredAt: string | null;
}

export interface KeyProvider {
  /** Short name for logs and /readyz ("local-keyring", "vault-transit", ...). */
  readonly name: string;
  /**
   * Creates epoch `epoch`'s KEK. Idempotent: when the epoch already exists it is kept
   * as it is (never overwritten: DEKs may already be wrapped under it).
   */
  createEpoch(epoch: number): Promise<void>;
  /**
   * Wraps `dek` (identified by `keyId`) under the epoch's KEK, binding its id and its
   * purpose (what it is for) in the wrap: it unwraps only as that key, for that purpose.
   */
  wrap(epoch: number, dek: Uint8Array, keyId: string, purpose: KeyPurpose): Promise<Uint8Array>;
  /**
   * Unwraps a key the caller expects to be `purpose`; the caller zeroes the returned
   * key. Throws decrypt_failed for a key wrapped for another purpose or id, and
   * epoch_unavailable for a destroyed epoch. `acceptLegacy` also accepts a wrap made
   * before purposes were bound — only for an epoch whose wrap format is 1.
   */
  unwrap(epoch: number, wrapped: Uint8Array, keyId: string, purpose: KeyPurpose, options?: UnwrapOptions): Promise<Uint8Array>;
  /** Irreversibly destroys the epoch's KEK. Idempotent. */
  destroyEpoch(epoch: number): Promise<void>;
  /** Epochs whose KEK currently exists in the provider, ascending. */
  listEpochs(): Promise<number[]>;
  /**
   * When the provider destroyed the epoch's KEK, if it kept a record of it (the local
   * keyring keeps a tombstone: a date, nothing secret); undefined when it cannot say.
   * A KEK later created under the same number does not clear it.
   */
  destroyedAt(epoch: number): Promise<Date | undefined>;
  /**
   * Whether a destroyed epoch's KEK is gone for good, asked of the provider itself
   * (never of lethe's own records): `gone`; `pending` while a deletion window runs
   * (AWS KMS), with the date it ends; `present` when the KEK exists — never destroyed,
   * or a scheduled deletion cancelled since. A certificate turns final only on `gone`.
   */
  destructionState(epoch: number): Promise<DestructionState>;
  /** Drops any cached copy of the epoch's KEK (another replica destroyed it). */
  forget(epoch: number): void;
  /**
   * Signs an erasure certificate with the current certificate-signing key (created on
   * first use): `payload` gains that key's id as `signingKeyId` before it is signed.
   * The private key never leaves the provider.
   */
  signCertificate(payload: { [key: string]: Json }): Promise<Certificate>;
  /** Every certificate-signing key, the current one first, then the retired ones newest first (public parts only). */
  listSigningKeys(): Promise<SigningKeyInfo[]>;
  /**
   * A new current certificate-signing key. The previous one retires: its private part
   * is destroyed, its public part stays listed so that what it signed still verifies.
   */
  rotateSigningKey(): Promise<{ current: SigningKeyInfo; retired: SigningKeyInfo }>;
  /** A 32-byte subkey for one system purpose; the caller zeroes it when done. */
  deriveSystemKey(label: SubkeyLabel): Promise<Uint8Array>;
  /** Zeroes every cached secret. */
  close(): Promise<void>;
}

/** What the provider says of an epoch's KEK (`KeyProvider.destructionState`). */
export type DestructionState = { readonly state: 'gone' } | { readonly state: 'pending'; readonly goneAt: Date } | { readonly state: 'present' };

/** The envelope key id of an epoch KEK. */
export function kekId(epoch: number): string {
  return `kek-${epoch}`;
}

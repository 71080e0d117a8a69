/**
 * The key-provider port: where epoch KEKs live. KEKs never enter PostgreSQL; the
 * database only holds DEKs wrapped under them. Destroying an epoch in the provider is
 * what makes every old copy of every DEK it wrapped (dead tuples, WAL, base backups,
 * PITR archives, replicas) inert.
 */
import type { SubkeyLabel } from '../crypto/index.js';

export interface KeyProvider {
  /** Short name for logs and /readyz ("local-keyring", "vault-transit", ...). */
  readonly name: string;
  /**
   * Creates epoch `epoch`'s KEK. Idempotent: when the epoch already exists it is kept
   * as it is (never overwritten: DEKs may already be wrapped under it).
   */
  createEpoch(epoch: number): Promise<void>;
  /** Wraps `dek` (identified by `keyId`) under the epoch's KEK. */
  wrap(epoch: number, dek: Uint8Array, keyId: string): Promise<Uint8Array>;
  /** Unwraps; the caller zeroes the returned key. Throws epoch_unavailable for a destroyed epoch. */
  unwrap(epoch: number, wrapped: Uint8Array, keyId: string): Promise<Uint8Array>;
  /** Irreversibly destroys the epoch's KEK. Idempotent. */
  destroyEpoch(epoch: number): Promise<void>;
  /** Epochs whose KEK currently exists in the provider, ascending. */
  listEpochs(): Promise<number[]>;
  /** Drops any cached copy of the epoch's KEK (another replica destroyed it). */
  forget(epoch: number): void;
  /** A 32-byte subkey for one system purpose; the caller zeroes it when done. */
  deriveSystemKey(label: SubkeyLabel): Promise<Uint8Array>;
  /** Zeroes every cached secret. */
  close(): Promise<void>;
}

/** The envelope key id of an epoch KEK. */
export function kekId(epoch: number): string {
  return `kek-${epoch}`;
}

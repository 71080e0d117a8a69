/**
 * Subkeys derived from a root secret (RFC 5869 HKDF-SHA256) and keyed hashes
 * (RFC 2104 HMAC-SHA256). Used for the subject-id hash (how the database names a
 * subject without holding its id) and the audit chain's MAC key.
 */
import { hkdf } from '@noble/hashes/hkdf.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { utf8 } from './bytes.js';

export type SubkeyLabel = 'subject-hash' | 'audit-chain' | 'read-fence' | 'certificate-signing';

/** A 32-byte subkey of `root` for one purpose; the caller zeroes it when done. */
export function deriveSubkey(root: Uint8Array, label: SubkeyLabel): Uint8Array {
  return hkdf(sha256, root, undefined, utf8.encode(`lethe/v1/subkey/${label}`), 32);
}

/**
 * HMAC-SHA256 under one long-lived key, keyed once: each message clones the keyed
 * state instead of re-deriving the inner and outer pads.
 */
export class KeyedHasher {
  readonly #keyed: ReturnType<typeof hmac.create>;

  constructor(key: Uint8Array) {
    this.#keyed = hmac.create(sha256, key);
  }

  hash(message: Uint8Array): Uint8Array {
    return this.#keyed.clone().update(message).digest();
  }

  /** Wipes the keyed state. */
  destroy(): void {
    this.#keyed.destroy();
  }
}

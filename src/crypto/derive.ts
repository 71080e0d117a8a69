/**
 * Subkeys derived from a root secret (RFC 5869 HKDF-SHA256) and keyed hashes
 * (RFC 2104 HMAC-SHA256). Used for the subject-id hash (how the database names a
 * subject without holding its id), the audit chain's MAC key, read fences, and the
 * erasure probe's keyed shingle fingerprints.
 */
import { hkdf } from '@noble/hashes/hkdf.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { toBase64Url, utf8 } from './bytes.js';

export type SubkeyLabel =
  | 'subject-hash'
  | 'audit-chain'
  | 'audit-head'
  | 'read-fence'
  | 'certificate-signing'
  | 'shingle-index'
  | 'ledger-chain'
  | 'report-link'
  | 'principal'
  | 'store-item'
  | 'replica-call';

/** A 32-byte subkey of `root` for one purpose; the caller zeroes it when done. */
export function deriveSubkey(root: Uint8Array, label: SubkeyLabel): Uint8Array {
  return hkdf(sha256, root, undefined, utf8.encode(`lethe/v1/subkey/${label}`), 32);
}

/**
 * A 32-byte key for one purpose derived from another key (HKDF-SHA256, no salt,
 * `info` naming the purpose); the caller zeroes it when done.
 */
export function deriveKey(key: Uint8Array, info: string): Uint8Array {
  return hkdf(sha256, key, undefined, utf8.encode(info), 32);
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

  /** The first `bytes` bytes of each message's MAC, base64url: short keyed fingerprints that cannot be reversed without the key. */
  truncated(messages: Iterable<string>, bytes: number): Set<string> {
    const out = new Set<string>();
    for (const m of messages) out.add(toBase64Url(this.hash(utf8.encode(m)).subarray(0, bytes)));
    return out;
  }

  /** Wipes the keyed state. */
  destroy(): void {
    this.#keyed.destroy();
  }
}

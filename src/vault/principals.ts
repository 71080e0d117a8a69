/**
 * Principals: who presented a token, named so that two people's rulings can be told
 * apart across restarts and replicas (a dismissal's proposer, its approver, an
 * erasure's requester). A principal's name is `prn_` and the first 16 bytes of
 * HMAC-SHA256 under the `principal` system subkey over the token's SHA-256 digest,
 * base64url: stable while the token is, no function of the token without the key (a
 * database reader cannot test guesses of a weak token against it), and never the
 * token. Comparing two names compares identities, not secrets.
 */
import { KeyedHasher, toBase64Url } from '../crypto/index.js';

export class Principals {
  readonly #mac: KeyedHasher;

  /** `key`: the `principal` system subkey; the caller zeroes it after (the hasher keeps its own keyed state). */
  constructor(key: Uint8Array) {
    this.#mac = new KeyedHasher(key);
  }

  /** The name of the principal holding the token whose SHA-256 digest is `tokenDigest`. */
  name(tokenDigest: Uint8Array): string {
    return `prn_${toBase64Url(this.#mac.hash(tokenDigest).subarray(0, 16))}`;
  }

  close(): void {
    this.#mac.destroy();
  }
}

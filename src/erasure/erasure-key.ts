/**
 * An erasure's own key: a version key (an `artifact_keys` row keyed by the erasure
 * id, wrapped under the epoch KEK and re-wrapped by rotation) that seals what the
 * erasure must keep but must not hold in the clear — the request's reason and public
 * attributes, and the probe fingerprints (embeddings and the lexical index's keyed
 * shingles of the erased records). Destroyed when a probe finds no match left; with
 * it the sealed request and fingerprints become noise.
 */
import { encodeContext, open, seal, zeroize } from '../crypto/index.js';
import { LetheError } from '../errors.js';
import type { VersionKeys } from '../vault/version-keys.js';

export type SealedPart = 'request' | 'fingerprints';

function context(erasureId: string, what: SealedPart, keyId: string): Uint8Array {
  return encodeContext('erasure', { erasureId, what, keyId });
}

/** Seals `plaintext` (zeroed after) under an erasure's key bytes. */
export function sealWithErasureKey(key: Uint8Array, at: { erasureId: string; keyId: string }, what: SealedPart, plaintext: Uint8Array): Uint8Array {
  try {
    return seal({ key, keyId: at.keyId, plaintext, associatedData: context(at.erasureId, what, at.keyId) });
  } finally {
    plaintext.fill(0);
  }
}

/** The erasure's key, unwrapped for one step: seal and open. `close()` zeroes it. */
export class ErasureKey {
  readonly #key: Uint8Array;
  readonly #at: { erasureId: string; keyId: string };

  private constructor(key: Uint8Array, at: { erasureId: string; keyId: string }) {
    this.#key = key;
    this.#at = at;
  }

  /** The erasure's key; conflict once it was destroyed. */
  static async unwrap(versionKeys: VersionKeys, row: { erasureId: string; sealKeyId: string | null }): Promise<ErasureKey> {
    if (!row.sealKeyId) throw new LetheError('conflict', 'the erasure key was destroyed');
    return new ErasureKey(await versionKeys.unwrap(row.sealKeyId, 'erasure'), { erasureId: row.erasureId, keyId: row.sealKeyId });
  }

  seal(what: SealedPart, plaintext: Uint8Array): Uint8Array {
    return sealWithErasureKey(this.#key, this.#at, what, plaintext);
  }

  open(what: SealedPart, envelope: Uint8Array): Uint8Array {
    return open({ key: this.#key, envelope, associatedData: context(this.#at.erasureId, what, this.#at.keyId), expectedKeyId: this.#at.keyId });
  }

  close(): void {
    zeroize(this.#key);
  }
}

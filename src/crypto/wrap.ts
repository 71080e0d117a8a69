/**
 * Key wrapping: a key sealed in an envelope under a key-encryption key. The
 * associated data names the wrapped key's id and its purpose — what the key is for
 * — so a wrapped key copied onto another key's row, or onto a row of another kind
 * of key (an erasure key into the subject keys, say), does not unwrap.
 *
 * Context: ("wrapped-key", { keyId, purpose }). Keys wrapped before purposes were
 * bound carry the legacy context ("dek", { keyId }) whatever their kind; `unwrapKey`
 * accepts it only when the caller says the epoch may still hold such wraps
 * (`acceptLegacy`), and nothing wraps under it any more.
 */
import { LetheError, isLetheError } from '../errors.js';
import { zeroize } from './bytes.js';
import { encodeContext } from './context.js';
import { ALG_XCHACHA20POLY1305_PREPARED, KEY_LENGTH, open, openPrepared, parseEnvelope, PreparedKey, seal, sealPrepared } from './envelope.js';

/**
 * What a wrapped key is for. A closed set: a new kind of wrapped key gets a purpose
 * here, never the purpose of another kind.
 * - `subject`: a subject's data key (DEK), leased to writers;
 * - `artifact-version`: the key of one version of a derived artifact;
 * - `erasure`: an erasure's own key (its sealed request and probe fingerprints);
 * - `record`: one log entry's own key, wrapped under its subject's DEK (never under a KEK).
 */
export const KEY_PURPOSES = ['subject', 'artifact-version', 'erasure', 'record'] as const;
export type KeyPurpose = (typeof KEY_PURPOSES)[number];

/** The associated data of a purpose-bound wrap. */
export function wrapContext(keyId: string, purpose: KeyPurpose): Uint8Array {
  if (!(KEY_PURPOSES as readonly string[]).includes(purpose)) throw new LetheError('validation_failed', 'unknown key purpose');
  return encodeContext('wrapped-key', { keyId, purpose });
}

/** The associated data of a wrap made before purposes were bound (read only, for migration). */
function legacyWrapContext(keyId: string): Uint8Array {
  return encodeContext('dek', { keyId });
}

export interface WrapInput {
  readonly kek: Uint8Array;
  /** Identifier of the KEK (e.g. "kek-3"), written into the envelope header. */
  readonly kekId: string;
  readonly dek: Uint8Array;
  /** Identifier of the wrapped key, bound as associated data. */
  readonly keyId: string;
  /** What the wrapped key is for, bound as associated data. */
  readonly purpose: KeyPurpose;
}

export function wrapKey(input: WrapInput): Uint8Array {
  if (input.dek.length !== KEY_LENGTH) throw new LetheError('validation_failed', `wrapped key must be ${KEY_LENGTH} bytes`);
  return seal({
    key: input.kek,
    keyId: input.kekId,
    plaintext: input.dek,
    associatedData: wrapContext(input.keyId, input.purpose),
  });
}

export interface UnwrapInput {
  readonly kek: Uint8Array;
  readonly kekId: string;
  readonly wrapped: Uint8Array;
  readonly keyId: string;
  /** The purpose the caller expects the key to have; a key wrapped for another does not unwrap. */
  readonly purpose: KeyPurpose;
  /**
   * Also accept the legacy context ("dek", { keyId }), which binds no purpose: only
   * for keys under an epoch created before purposes were bound (wrap format 1).
   */
  readonly acceptLegacy?: boolean;
}

/** Returns the plaintext key; the caller zeroes it when done. */
export function unwrapKey(input: UnwrapInput): Uint8Array {
  let dek: Uint8Array;
  try {
    dek = open({ key: input.kek, envelope: input.wrapped, expectedKeyId: input.kekId, associatedData: wrapContext(input.keyId, input.purpose) });
  } catch (e) {
    // only a failed authentication can mean "wrapped under the legacy context"
    if (!input.acceptLegacy || !isLetheError(e, 'decrypt_failed')) throw e;
    dek = open({ key: input.kek, envelope: input.wrapped, expectedKeyId: input.kekId, associatedData: legacyWrapContext(input.keyId) });
  }
  if (dek.length !== KEY_LENGTH) {
    dek.fill(0);
    throw new LetheError('envelope_malformed', 'wrapped key has the wrong length');
  }
  return dek;
}

/**
 * A KEK ready to wrap many keys: the key schedule of envelope algorithm 2 is derived
 * from it once (`PreparedKey`), instead of an HKDF per wrap — what the local keyring
 * does with each epoch's KEK. Wraps are algorithm 2 with the same associated data as
 * `wrapKey` (the wrapped key's id and purpose); unwraps read both algorithms: the wraps
 * made before (algorithm 1, the legacy context included when `acceptLegacy`) open with
 * the KEK itself, kept here for that. `destroy` wipes it all; a destroyed wrapper
 * refuses (epoch_unavailable).
 */
export class KeyWrapper {
  readonly #kek: Uint8Array;
  readonly #kekId: string;
  readonly #prepared: PreparedKey;

  /** Copies `kek` (the caller keeps and zeroes its own). */
  constructor(kek: Uint8Array, kekId: string) {
    if (kek.length !== KEY_LENGTH) throw new LetheError('validation_failed', `a KEK must be ${KEY_LENGTH} bytes`);
    this.#prepared = new PreparedKey(kek);
    this.#kek = kek.slice();
    this.#kekId = kekId;
  }

  wrap(dek: Uint8Array, keyId: string, purpose: KeyPurpose): Uint8Array {
    if (this.#prepared.destroyed) throw dropped();
    if (dek.length !== KEY_LENGTH) throw new LetheError('validation_failed', `wrapped key must be ${KEY_LENGTH} bytes`);
    return sealPrepared({ prepared: this.#prepared, keyId: this.#kekId, plaintext: dek, associatedData: wrapContext(keyId, purpose) });
  }

  /** The plaintext key (the caller zeroes it). */
  unwrap(wrapped: Uint8Array, keyId: string, purpose: KeyPurpose, options: { acceptLegacy?: boolean } = {}): Uint8Array {
    if (this.#prepared.destroyed) throw dropped();
    if (parseEnvelope(wrapped).algorithm !== ALG_XCHACHA20POLY1305_PREPARED) {
      return unwrapKey({ kek: this.#kek, kekId: this.#kekId, wrapped, keyId, purpose, acceptLegacy: options.acceptLegacy === true });
    }
    // algorithm 2 came after purposes were bound: never the legacy context
    const dek = openPrepared({ prepared: this.#prepared, envelope: wrapped, expectedKeyId: this.#kekId, associatedData: wrapContext(keyId, purpose) });
    if (dek.length !== KEY_LENGTH) {
      dek.fill(0);
      throw new LetheError('envelope_malformed', 'wrapped key has the wrong length');
    }
    return dek;
  }

  destroy(): void {
    this.#prepared.destroy();
    zeroize(this.#kek);
  }
}

const dropped = () => new LetheError('epoch_unavailable', 'the KEK was dropped from memory (its epoch destroyed or the provider closed)');

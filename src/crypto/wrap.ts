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
import { encodeContext } from './context.js';
import { KEY_LENGTH, open, seal } from './envelope.js';

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

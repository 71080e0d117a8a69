/**
 * Key wrapping: a data key sealed in an envelope under a key-encryption key.
 * The associated data names the wrapped key's id, so a wrapped DEK copied onto
 * another key's row does not unwrap.
 */
import { LetheError } from '../errors.js';
import { encodeContext } from './context.js';
import { KEY_LENGTH, open, seal } from './envelope.js';

export interface WrapInput {
  readonly kek: Uint8Array;
  /** Identifier of the KEK (e.g. "kek-3"), written into the envelope header. */
  readonly kekId: string;
  readonly dek: Uint8Array;
  /** Identifier of the wrapped key, bound as associated data. */
  readonly keyId: string;
  /** Context purpose; "dek" for subject data keys. */
  readonly purpose?: string;
}

export function wrapKey(input: WrapInput): Uint8Array {
  if (input.dek.length !== KEY_LENGTH) throw new LetheError('validation_failed', `wrapped key must be ${KEY_LENGTH} bytes`);
  return seal({
    key: input.kek,
    keyId: input.kekId,
    plaintext: input.dek,
    associatedData: encodeContext(input.purpose ?? 'dek', { keyId: input.keyId }),
  });
}

export interface UnwrapInput {
  readonly kek: Uint8Array;
  readonly kekId: string;
  readonly wrapped: Uint8Array;
  readonly keyId: string;
  readonly purpose?: string;
}

/** Returns the plaintext key; the caller zeroes it when done. */
export function unwrapKey(input: UnwrapInput): Uint8Array {
  const dek = open({
    key: input.kek,
    envelope: input.wrapped,
    expectedKeyId: input.kekId,
    associatedData: encodeContext(input.purpose ?? 'dek', { keyId: input.keyId }),
  });
  if (dek.length !== KEY_LENGTH) {
    dek.fill(0);
    throw new LetheError('envelope_malformed', 'wrapped key has the wrong length');
  }
  return dek;
}

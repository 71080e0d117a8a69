/** The AWS KMS wrap's stored layout and the encryption context KMS binds it to. */
import { KEY_PURPOSES } from '../crypto/index.js';
import { LetheError } from '../errors.js';
import type { KeyPurpose } from './provider.js';

/**
 * The stored wrap: "LK", layout version 1, the length and ASCII id of the KMS key that
 * made it (also bound in the encryption context as `kek`), then the KMS CiphertextBlob.
 * The id tells a wrap made under another key of the same epoch number (the number
 * taken again after a destroy) from a damaged one.
 */
export const HEADER = Uint8Array.of(0x4c, 0x4b, 0x01);
export const KMS_KEY_ID = /^(?:mrk-)?[0-9a-f-]{32,36}$/;

/** The key id part of a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>). */
export function keyIdOf(arn: string): string {
  return arn.slice(arn.lastIndexOf('/') + 1);
}

/** The KMS encryption context of a wrap: wrapContext's ("wrapped-key", { keyId, purpose }) and the epoch. */
export function encryptionContext(epoch: number, keyId: string, purpose: KeyPurpose): Record<string, string> {
  if (!(KEY_PURPOSES as readonly string[]).includes(purpose)) throw new LetheError('validation_failed', 'unknown key purpose');
  if (typeof keyId !== 'string' || keyId.length === 0) throw new LetheError('validation_failed', 'a wrapped key needs a key id');
  return { lethe: 'wrapped-key', keyId, purpose, epoch: String(epoch) };
}

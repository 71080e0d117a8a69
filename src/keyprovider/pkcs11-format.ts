/**
 * What an epoch KEK in the token looks like and what a wrap under it is.
 *
 * Wrap mechanism: CKM_AES_GCM, 12-byte random IV (randomBytes), 128-bit tag, with
 * associated data binding the epoch, the key object's id and `wrapContext(keyId,
 * purpose)` (src/crypto/wrap.ts). AES key wrap (CKM_AES_KEY_WRAP_PAD) is not used: it
 * takes no associated data, so a wrapped DEK copied onto another key's row, or used for
 * another purpose or under another epoch number, could not be told apart. With 12-byte
 * random IVs a KEK must not encrypt much more than 2^32 DEKs; an epoch wraps far fewer.
 *
 * Wrapped form (77 bytes): version 0x01 | key object id (16) | IV (12) | ciphertext (32)
 * + tag (16). Anything else is refused with `envelope_malformed`.
 */
import { bytesToHex } from '@noble/hashes/utils.js';
import pkcs11js from 'pkcs11js';
import { encodeContext, wrapContext } from '../crypto/index.js';
import { LetheError } from '../errors.js';
import type { KeyPurpose } from './provider.js';

export const VERSION = 0x01;

export const KID_LENGTH = 16;

export const IV_LENGTH = 12;

export const DEK_LENGTH = 32;

export const TAG_LENGTH = 16;

export const WRAPPED_LENGTH = 1 + KID_LENGTH + IV_LENGTH + DEK_LENGTH + TAG_LENGTH;

export function checkEpoch(epoch: number): void {
  if (!Number.isSafeInteger(epoch) || epoch < 1 || epoch > 99_999_999) {
    throw new LetheError('validation_failed', 'epoch must be an integer from 1 to 99999999');
  }
}

export const pad = (epoch: number): string => String(epoch).padStart(8, '0');

export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The associated data of a wrap: what this store binds (version, epoch, key object) and then the port's wrap context. */
export function associatedData(epoch: number, kid: Uint8Array, keyId: string, purpose: KeyPurpose): Buffer {
  const store = encodeContext('pkcs11-epoch-wrap', { version: VERSION, epoch, kid: bytesToHex(kid) });
  const port = wrapContext(keyId, purpose);
  // encodeContext output is self-delimiting, so the concatenation is unambiguous
  return Buffer.concat([store, port]);
}

export function gcm(iv: Buffer, aad: Buffer) {
  return {
    mechanism: pkcs11js.CKM_AES_GCM,
    parameter: { type: pkcs11js.CK_PARAMS_AES_GCM, iv, ivBits: IV_LENGTH * 8, aad, tagBits: TAG_LENGTH * 8 },
  };
}

/**
 * The attributes of an epoch KEK generated in the token: AES-256, on the token, private,
 * sensitive, never extractable or modifiable, for encrypt/decrypt only; `label` names
 * the epoch, `kid` (16 bytes) is the CKA_ID every wrap records.
 */
export function epochKeyTemplate(label: string, kid: Buffer): pkcs11js.Template {
  return [
    { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
    { type: pkcs11js.CKA_KEY_TYPE, value: pkcs11js.CKK_AES },
    { type: pkcs11js.CKA_VALUE_LEN, value: 32 },
    { type: pkcs11js.CKA_TOKEN, value: true },
    { type: pkcs11js.CKA_PRIVATE, value: true },
    { type: pkcs11js.CKA_SENSITIVE, value: true },
    { type: pkcs11js.CKA_EXTRACTABLE, value: false },
    { type: pkcs11js.CKA_MODIFIABLE, value: false },
    { type: pkcs11js.CKA_ENCRYPT, value: true },
    { type: pkcs11js.CKA_DECRYPT, value: true },
    { type: pkcs11js.CKA_WRAP, value: false },
    { type: pkcs11js.CKA_UNWRAP, value: false },
    { type: pkcs11js.CKA_SIGN, value: false },
    { type: pkcs11js.CKA_VERIFY, value: false },
    { type: pkcs11js.CKA_DERIVE, value: false },
    { type: pkcs11js.CKA_LABEL, value: label },
    { type: pkcs11js.CKA_ID, value: kid },
  ];
}

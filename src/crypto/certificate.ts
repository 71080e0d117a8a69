/**
 * Erasure certificates: Ed25519 (RFC 8032, `@noble/curves`) signatures over the
 * canonical JSON of a payload. Canonical JSON here: object keys sorted by UTF-16 code
 * unit, no insignificant whitespace, strings and numbers as JSON.stringify writes them
 * (the subset of RFC 8785 that lethe's payloads use: no floats that print
 * differently, no undefined). The same payload always signs the same bytes, so a
 * certificate verifies offline with nothing but the public key.
 *
 * No I/O here; the signing key is derived from the root key by the caller (the
 * key provider's `certificate-signing` subkey).
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { LetheError } from '../errors.js';
import { fromBase64Url, toBase64Url, utf8 } from './bytes.js';

export const CERTIFICATE_ALGORITHM = 'Ed25519';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface Certificate {
  readonly payload: { [key: string]: Json };
  /** base64url of the 64-byte signature over canonicalJson(payload). */
  readonly signature: string;
  /** base64url of the 32-byte public key. */
  readonly publicKey: string;
  readonly algorithm: typeof CERTIFICATE_ALGORITHM;
}

export function canonicalJson(value: Json): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new LetheError('validation_failed', 'certificate payloads hold finite numbers only');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys
      .filter((k) => value[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k]!)}`)
      .join(',')}}`;
  }
  throw new LetheError('validation_failed', 'certificate payloads hold JSON values only');
}

/** The public key of a 32-byte Ed25519 secret key. */
export function certificatePublicKey(secretKey: Uint8Array): Uint8Array {
  return ed25519.getPublicKey(secretKey);
}

export function signCertificate(payload: { [key: string]: Json }, secretKey: Uint8Array): Certificate {
  const message = utf8.encode(canonicalJson(payload));
  return {
    payload,
    signature: toBase64Url(ed25519.sign(message, secretKey)),
    publicKey: toBase64Url(ed25519.getPublicKey(secretKey)),
    algorithm: CERTIFICATE_ALGORITHM,
  };
}

/**
 * Whether the certificate's signature holds over its payload — under `expectedPublicKey`
 * when given (a certificate carrying some other key proves nothing about lethe).
 */
export function verifyCertificate(certificate: unknown, expectedPublicKey?: string): { valid: boolean; reason?: string } {
  const c = certificate as Partial<Certificate> | null;
  if (!c || typeof c !== 'object' || typeof c.payload !== 'object' || c.payload === null || Array.isArray(c.payload)) {
    return { valid: false, reason: 'not a certificate: no payload object' };
  }
  if (c.algorithm !== CERTIFICATE_ALGORITHM) return { valid: false, reason: `unsupported algorithm ${String(c.algorithm)}` };
  const signature = typeof c.signature === 'string' ? fromBase64Url(c.signature) : undefined;
  const publicKey = typeof c.publicKey === 'string' ? fromBase64Url(c.publicKey) : undefined;
  if (!signature || signature.length !== 64) return { valid: false, reason: 'the signature is not 64 bytes of base64url' };
  if (!publicKey || publicKey.length !== 32) return { valid: false, reason: 'the public key is not 32 bytes of base64url' };
  if (expectedPublicKey !== undefined && c.publicKey !== expectedPublicKey) return { valid: false, reason: 'signed by another key than the one expected' };
  let message: Uint8Array;
  try {
    message = utf8.encode(canonicalJson(c.payload as Json));
  } catch {
    return { valid: false, reason: 'the payload is not canonical JSON' };
  }
  let ok = false;
  try {
    ok = ed25519.verify(signature, message, publicKey);
  } catch {
    ok = false;
  }
  return ok ? { valid: true } : { valid: false, reason: 'the signature does not match the payload' };
}

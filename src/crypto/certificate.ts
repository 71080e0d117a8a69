/**
 * Erasure certificates: Ed25519 (RFC 8032, `@noble/curves`) signatures over the
 * canonical JSON of a payload. Canonical JSON here: object keys sorted by UTF-16 code
 * unit, no insignificant whitespace, strings and numbers as JSON.stringify writes them
 * (the subset of RFC 8785 that lethe's payloads use: no floats that print
 * differently, no undefined). The same payload always signs the same bytes, so a
 * certificate verifies offline with nothing but the signer's public key.
 *
 * A certificate also carries a public key, but that key proves nothing: anyone can
 * sign anything with a key of their own and embed it. Verification therefore always
 * takes a trusted set of public keys (the vault's, from GET /v1/certificates/keys or
 * its operator): the payload's `signingKeyId` selects the key in that set (ids are
 * derived from the public key, `certificateKeyId`), and the signature must hold under
 * the trusted key — a certificate whose key is not in the set is invalid. A
 * certificate from before signing keys had ids (no `signingKeyId`) is selected by the
 * id of its embedded key, which again must be in the trusted set.
 *
 * No I/O here; the signing keys are held by the key provider, which signs.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { LetheError } from '../errors.js';
import { constantTimeEqual, fromBase64Url, toBase64Url, utf8 } from './bytes.js';

export const CERTIFICATE_ALGORITHM = 'Ed25519';

/** The payload field naming the key that signed it (inside the signed bytes). */
export const SIGNING_KEY_ID_FIELD = 'signingKeyId';

/** `csk_` and 22 base64url characters: how a certificate-signing key id looks. */
export const CERTIFICATE_KEY_ID_PATTERN = /^csk_[A-Za-z0-9_-]{22}$/;

const KEY_ID_DOMAIN = utf8.encode('lethe/v1/certificate-key-id');

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

/**
 * The stable id of a certificate-signing public key: `csk_` and the first 128 bits of
 * SHA-256 over a domain label and the key, base64url. Anyone holding the public key
 * computes the same id, so an id can never name two keys without a hash collision.
 */
export function certificateKeyId(publicKey: Uint8Array): string {
  const input = new Uint8Array(KEY_ID_DOMAIN.length + publicKey.length);
  input.set(KEY_ID_DOMAIN, 0);
  input.set(publicKey, KEY_ID_DOMAIN.length);
  return `csk_${toBase64Url(sha256(input).subarray(0, 16))}`;
}

/**
 * The digest of a certificate's signed bytes: SHA-256 over the canonical JSON of its
 * payload, hex. What the audit chain records of a certificate when it is signed, so a
 * stored certificate can later be checked against what the vault signed.
 */
export function certificateDigest(payload: { [key: string]: Json }): string {
  return bytesToHex(sha256(utf8.encode(canonicalJson(payload))));
}

/** Signs `payload` as it is (the caller puts the signing key's id in it: `signingKeyId`). */
export function signCertificate(payload: { [key: string]: Json }, secretKey: Uint8Array): Certificate {
  const message = utf8.encode(canonicalJson(payload));
  return {
    payload,
    signature: toBase64Url(ed25519.sign(message, secretKey)),
    publicKey: toBase64Url(ed25519.getPublicKey(secretKey)),
    algorithm: CERTIFICATE_ALGORITHM,
  };
}

export interface CertificateVerdict {
  readonly valid: boolean;
  /** The signing key the certificate names (or, before key ids, the id of its embedded key). */
  readonly keyId?: string;
  readonly reason?: string;
}

/** A trusted public key (base64url) and, when its list says so, when it was retired (ISO time). */
export interface TrustedKey {
  readonly publicKey: string;
  readonly retiredAt?: string | null | undefined;
}

/**
 * Whether the certificate was signed by one of the `trusted` public keys (base64url):
 * its key id selects the trusted key, and the signature must hold over the payload
 * under that key. A key embedded in the certificate is never trusted for itself. A
 * trusted key given with its retirement time signs nothing after it: a certificate
 * whose `issuedAt` is later (or unreadable) is invalid — a retired key's private part
 * is destroyed, so such a certificate was not signed by the vault, or its date is forged.
 */
export function verifyCertificate(certificate: unknown, trusted: string | ReadonlyArray<string | TrustedKey>): CertificateVerdict {
  const trustedKeys = new Map<string, Uint8Array>();
  const retiredAt = new Map<string, string>();
  for (const entry of typeof trusted === 'string' ? [trusted] : trusted) {
    const given: TrustedKey = typeof entry === 'string' ? { publicKey: entry } : entry;
    const key = fromBase64Url(given.publicKey);
    if (key?.length !== 32) continue;
    const id = certificateKeyId(key);
    trustedKeys.set(id, key);
    if (typeof given.retiredAt === 'string') retiredAt.set(id, given.retiredAt);
  }
  if (trustedKeys.size === 0) {
    return { valid: false, reason: 'no trusted public key to check it against (a key embedded in a certificate proves nothing)' };
  }
  const c = certificate as Partial<Certificate> | null;
  if (!c || typeof c !== 'object' || typeof c.payload !== 'object' || c.payload === null || Array.isArray(c.payload)) {
    return { valid: false, reason: 'not a certificate: no payload object' };
  }
  if (c.algorithm !== CERTIFICATE_ALGORITHM) return { valid: false, reason: `unsupported algorithm ${String(c.algorithm)}` };
  const signature = typeof c.signature === 'string' ? fromBase64Url(c.signature) : undefined;
  const embedded = typeof c.publicKey === 'string' ? fromBase64Url(c.publicKey) : undefined;
  if (!signature || signature.length !== 64) return { valid: false, reason: 'the signature is not 64 bytes of base64url' };
  if (!embedded || embedded.length !== 32) return { valid: false, reason: 'the public key is not 32 bytes of base64url' };
  const named = (c.payload as Record<string, unknown>)[SIGNING_KEY_ID_FIELD];
  if (named !== undefined && (typeof named !== 'string' || !CERTIFICATE_KEY_ID_PATTERN.test(named))) {
    return { valid: false, reason: `the payload's ${SIGNING_KEY_ID_FIELD} is not a signing key id (csk_…)` };
  }
  // before signing keys had ids, a certificate is selected by its embedded key: still only a trusted key verifies it
  const keyId = named ?? certificateKeyId(embedded);
  const key = trustedKeys.get(keyId);
  if (!key) return { valid: false, keyId, reason: `signed by key ${keyId}, which is not one of the ${trustedKeys.size} trusted key(s)` };
  if (!constantTimeEqual(embedded, key)) return { valid: false, keyId, reason: `the public key it carries is not the trusted key ${keyId}` };
  let message: Uint8Array;
  try {
    message = utf8.encode(canonicalJson(c.payload as Json));
  } catch {
    return { valid: false, keyId, reason: 'the payload is not canonical JSON' };
  }
  let ok = false;
  try {
    ok = ed25519.verify(signature, message, key);
  } catch {
    ok = false;
  }
  if (!ok) return { valid: false, keyId, reason: `the signature does not match the payload under trusted key ${keyId}` };
  const retired = retiredAt.get(keyId);
  if (retired !== undefined) {
    const issuedAt = (c.payload as Record<string, unknown>).issuedAt;
    const issued = typeof issuedAt === 'string' ? Date.parse(issuedAt) : Number.NaN;
    if (Number.isNaN(issued))
      return { valid: false, keyId, reason: `key ${keyId} was retired at ${retired} and the certificate does not say when it was issued (issuedAt)` };
    if (issued > Date.parse(retired))
      return { valid: false, keyId, reason: `issued at ${String(issuedAt)}, after its signing key ${keyId} was retired at ${retired}` };
  }
  return { valid: true, keyId };
}

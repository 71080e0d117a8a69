/**
 * The lethe envelope, format version 1: authenticated, key-committing encryption of
 * one payload under one 256-bit key.
 *
 *   offset  size  field
 *   0       2     magic "LE" (0x4c 0x45)
 *   2       1     format version (1)
 *   3       1     algorithm id (1 = XChaCha20-Poly1305, HKDF-SHA256 subkey + commitment)
 *   4       1     key id length L (1..255)
 *   5       L     key id (printable ASCII)
 *   5+L     24    nonce (random, 192 bits)
 *   29+L    32    key-commitment tag
 *   61+L    n+16  ciphertext and Poly1305 tag
 *
 * Algorithm 1 (RFC 5869 HKDF, draft-irtf-cfrg-xchacha, RFC 8439):
 *   prk    = HKDF-Extract(SHA-256, salt = nonce, ikm = key)
 *   encKey = HKDF-Expand(prk, "lethe/v1/enc", 32)
 *   commit = HKDF-Expand(prk, "lethe/v1/commit", 32)
 *   ct     = XChaCha20-Poly1305(encKey, nonce).encrypt(pt, aad = header || associatedData)
 *
 * The commitment tag makes an envelope open under exactly one key: without it,
 * Poly1305 lets an attacker craft a ciphertext that decrypts under two keys. The
 * per-envelope subkey also keeps the XChaCha20 key's use to a single message.
 * The header (with the key id) is authenticated as part of the associated data, so
 * a ciphertext relabelled with another key id fails.
 *
 * Nonce policy: random 24-byte nonces; with per-message subkeys there is no practical
 * limit on messages per key.
 */
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { expand, extract } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { LetheError } from '../errors.js';
import { constantTimeEqual, randomBytes, utf8, zeroize } from './bytes.js';

export const ENVELOPE_MAGIC_0 = 0x4c;
export const ENVELOPE_MAGIC_1 = 0x45;
export const FORMAT_VERSION = 1;
export const ALG_XCHACHA20POLY1305_HKDF_SHA256 = 1;
export const KEY_LENGTH = 32;
export const NONCE_LENGTH = 24;
export const COMMITMENT_LENGTH = 32;
export const TAG_LENGTH = 16;
export const MAX_KEY_ID_LENGTH = 255;
const FIXED_HEADER = 5;

const INFO_ENC = utf8.encode('lethe/v1/enc');
const INFO_COMMIT = utf8.encode('lethe/v1/commit');
const KEY_ID_PATTERN = /^[\x21-\x7e]+$/;

/** A parsed envelope. `header` is the exact bytes authenticated as associated data. */
export interface EnvelopeParts {
  readonly version: number;
  readonly algorithm: number;
  readonly keyId: string;
  readonly nonce: Uint8Array;
  readonly commitment: Uint8Array;
  readonly ciphertext: Uint8Array;
  readonly header: Uint8Array;
}

export interface SealInput {
  /** 32-byte key. Not modified; the caller owns and zeroes it. */
  readonly key: Uint8Array;
  /** Identifier of `key`, recorded in the header (1..255 printable ASCII bytes). */
  readonly keyId: string;
  readonly plaintext: Uint8Array;
  /** Bytes binding the ciphertext to its place (see context.ts). */
  readonly associatedData: Uint8Array;
  /** Test hook for known-answer vectors only. Never pass in production code. */
  readonly nonce?: Uint8Array;
}

export interface OpenInput {
  readonly key: Uint8Array;
  readonly envelope: Uint8Array;
  readonly associatedData: Uint8Array;
  /** When given, the envelope must name this key id. */
  readonly expectedKeyId?: string;
}

function checkKey(key: Uint8Array, name = 'key'): void {
  if (!(key instanceof Uint8Array) || key.length !== KEY_LENGTH) {
    throw new LetheError('validation_failed', `${name} must be ${KEY_LENGTH} bytes`);
  }
}

function checkKeyId(keyId: string): Uint8Array {
  if (typeof keyId !== 'string' || !KEY_ID_PATTERN.test(keyId)) {
    throw new LetheError('validation_failed', 'keyId must be printable ASCII without spaces');
  }
  const bytes = utf8.encode(keyId);
  if (bytes.length > MAX_KEY_ID_LENGTH) {
    throw new LetheError('validation_failed', `keyId must be at most ${MAX_KEY_ID_LENGTH} bytes`);
  }
  return bytes;
}

function deriveKeys(key: Uint8Array, nonce: Uint8Array): { encKey: Uint8Array; commitment: Uint8Array } {
  const prk = extract(sha256, key, nonce);
  try {
    return { encKey: expand(sha256, prk, INFO_ENC, KEY_LENGTH), commitment: expand(sha256, prk, INFO_COMMIT, COMMITMENT_LENGTH) };
  } finally {
    zeroize(prk);
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

/** Encrypts `plaintext` into a fresh envelope. */
export function seal(input: SealInput): Uint8Array {
  checkKey(input.key);
  const keyIdBytes = checkKeyId(input.keyId);
  if (!(input.plaintext instanceof Uint8Array)) throw new LetheError('validation_failed', 'plaintext must be bytes');
  if (!(input.associatedData instanceof Uint8Array)) throw new LetheError('validation_failed', 'associatedData must be bytes');
  const nonce = input.nonce ?? randomBytes(NONCE_LENGTH);
  if (!(nonce instanceof Uint8Array) || nonce.length !== NONCE_LENGTH) throw new LetheError('validation_failed', `nonce must be ${NONCE_LENGTH} bytes`);

  const { encKey, commitment } = deriveKeys(input.key, nonce);
  try {
    const headerLength = FIXED_HEADER + keyIdBytes.length + NONCE_LENGTH + COMMITMENT_LENGTH;
    const out = new Uint8Array(headerLength + input.plaintext.length + TAG_LENGTH);
    out[0] = ENVELOPE_MAGIC_0;
    out[1] = ENVELOPE_MAGIC_1;
    out[2] = FORMAT_VERSION;
    out[3] = ALG_XCHACHA20POLY1305_HKDF_SHA256;
    out[4] = keyIdBytes.length;
    out.set(keyIdBytes, FIXED_HEADER);
    out.set(nonce, FIXED_HEADER + keyIdBytes.length);
    out.set(commitment, FIXED_HEADER + keyIdBytes.length + NONCE_LENGTH);
    const header = out.subarray(0, headerLength);
    const aad = concat(header, input.associatedData);
    // encrypt straight into the output buffer after the header
    xchacha20poly1305(encKey, nonce, aad).encrypt(input.plaintext, out.subarray(headerLength));
    return out;
  } finally {
    zeroize(encKey, commitment);
  }
}

/**
 * Parses an envelope without decrypting it. The returned byte fields are views into
 * `envelope`, not copies: copy them before changing either. Every length is checked against the
 * input; unknown versions and algorithms are a typed error, never a crash.
 */
export function parseEnvelope(envelope: Uint8Array): EnvelopeParts {
  if (!(envelope instanceof Uint8Array)) throw new LetheError('envelope_malformed', 'envelope must be bytes');
  if (envelope.length < FIXED_HEADER) throw new LetheError('envelope_malformed', 'envelope is truncated (header)');
  if (envelope[0] !== ENVELOPE_MAGIC_0 || envelope[1] !== ENVELOPE_MAGIC_1) {
    throw new LetheError('envelope_malformed', 'not a lethe envelope (bad magic)');
  }
  const version = envelope[2]!;
  if (version !== FORMAT_VERSION) throw new LetheError('envelope_unsupported', `unsupported envelope format version ${version}`);
  const algorithm = envelope[3]!;
  if (algorithm !== ALG_XCHACHA20POLY1305_HKDF_SHA256) {
    throw new LetheError('envelope_unsupported', `unsupported envelope algorithm ${algorithm}`);
  }
  const keyIdLength = envelope[4]!;
  if (keyIdLength === 0) throw new LetheError('envelope_malformed', 'envelope key id is empty');
  const nonceAt = FIXED_HEADER + keyIdLength;
  const commitAt = nonceAt + NONCE_LENGTH;
  const bodyAt = commitAt + COMMITMENT_LENGTH;
  if (envelope.length < bodyAt + TAG_LENGTH) throw new LetheError('envelope_malformed', 'envelope is truncated');
  const keyIdBytes = envelope.subarray(FIXED_HEADER, nonceAt);
  for (const b of keyIdBytes) {
    if (b < 0x21 || b > 0x7e) throw new LetheError('envelope_malformed', 'envelope key id is not printable ASCII');
  }
  return {
    version,
    algorithm,
    keyId: utf8.decode(keyIdBytes),
    nonce: envelope.subarray(nonceAt, commitAt),
    commitment: envelope.subarray(commitAt, bodyAt),
    ciphertext: envelope.subarray(bodyAt),
    header: envelope.subarray(0, bodyAt),
  };
}

/** Decrypts an envelope; returns a fresh plaintext buffer the caller owns. */
export function open(input: OpenInput): Uint8Array {
  checkKey(input.key);
  if (!(input.associatedData instanceof Uint8Array)) throw new LetheError('validation_failed', 'associatedData must be bytes');
  const parts = parseEnvelope(input.envelope);
  if (input.expectedKeyId !== undefined && parts.keyId !== input.expectedKeyId) {
    throw new LetheError('decrypt_failed', 'envelope names a different key id than expected');
  }
  const { encKey, commitment } = deriveKeys(input.key, parts.nonce);
  try {
    if (!constantTimeEqual(commitment, parts.commitment)) {
      throw new LetheError('key_commitment_mismatch', 'envelope is not committed to this key');
    }
    const aad = concat(parts.header, input.associatedData);
    try {
      return xchacha20poly1305(encKey, parts.nonce, aad).decrypt(parts.ciphertext);
    } catch (cause) {
      throw new LetheError('decrypt_failed', 'envelope failed authentication', { cause });
    }
  } finally {
    zeroize(encKey, commitment);
  }
}

/**
 * Whether the envelope is committed to `key`: its key-commitment tag matches, so it
 * opens under this key and under no other. Decrypts nothing (and needs no associated
 * data): a backup can be checked against a key without reading a record.
 */
export function isCommittedTo(key: Uint8Array, envelope: Uint8Array): boolean {
  checkKey(key);
  const parts = parseEnvelope(envelope);
  const { encKey, commitment } = deriveKeys(key, parts.nonce);
  try {
    return constantTimeEqual(commitment, parts.commitment);
  } finally {
    zeroize(encKey, commitment);
  }
}

/** The key id an envelope names, without decrypting it. */
export function envelopeKeyId(envelope: Uint8Array): string {
  return parseEnvelope(envelope).keyId;
}

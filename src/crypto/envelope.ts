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
 *
 * Algorithm 2 (the same layout; for keys that seal many small envelopes — the key
 * provider's epoch KEKs wrapping DEKs): the key schedule is derived once per key
 * (`PreparedKey`), not once per envelope:
 *   prk       = HKDF-Extract(SHA-256, salt = "lethe/v1/prepared", ikm = key)
 *   encKey    = HKDF-Expand(prk, "lethe/v1/prepared/enc", 32)
 *   commitKey = HKDF-Expand(prk, "lethe/v1/prepared/commit", 32)
 *   commit    = HMAC-SHA256(commitKey, nonce)
 *   ct        = XChaCha20-Poly1305(encKey, nonce).encrypt(pt, aad = header || associatedData)
 * The commitment still makes an envelope open under exactly one key (two keys with the
 * same tag for a nonce is an HMAC-SHA256 collision). XChaCha20-Poly1305 takes a long-term
 * key with random 192-bit nonces by design (HChaCha20 derives a subkey per nonce), so
 * dropping the per-envelope HKDF changes no bound that matters here. The algorithm id is
 * in the authenticated header and the two derive different keys: an envelope relabelled
 * from one algorithm to the other fails its commitment. `open` reads both.
 */
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { expand, extract } from '@noble/hashes/hkdf.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { LetheError } from '../errors.js';
import { constantTimeEqual, randomBytes, utf8, zeroize } from './bytes.js';

/**
 * One envelope's AEAD: what `xchacha20poly1305(key, nonce, aad)` answers. Named here so
 * that the declarations import nothing of @noble/ciphers, an ES-module-only package a
 * CommonJS consumer's types could not import under moduleResolution node16.
 */
export interface EnvelopeCipher {
  encrypt(plaintext: Uint8Array, output?: Uint8Array): Uint8Array;
  decrypt(ciphertext: Uint8Array, output?: Uint8Array): Uint8Array;
}

export const ENVELOPE_MAGIC_0 = 0x4c;
export const ENVELOPE_MAGIC_1 = 0x45;
export const FORMAT_VERSION = 1;
export const ALG_XCHACHA20POLY1305_HKDF_SHA256 = 1;
/** Algorithm 2: XChaCha20-Poly1305 under a key schedule derived once per key (PreparedKey). */
export const ALG_XCHACHA20POLY1305_PREPARED = 2;
export const KEY_LENGTH = 32;
export const NONCE_LENGTH = 24;
export const COMMITMENT_LENGTH = 32;
export const TAG_LENGTH = 16;
export const MAX_KEY_ID_LENGTH = 255;
const FIXED_HEADER = 5;

const INFO_ENC = utf8.encode('lethe/v1/enc');
const INFO_COMMIT = utf8.encode('lethe/v1/commit');
const PREPARED_SALT = utf8.encode('lethe/v1/prepared');
const PREPARED_INFO_ENC = utf8.encode('lethe/v1/prepared/enc');
const PREPARED_INFO_COMMIT = utf8.encode('lethe/v1/prepared/commit');
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

/** The checked key id bytes and nonce of a seal (either algorithm). */
function checkSealInput(input: { keyId: string; plaintext: Uint8Array; associatedData: Uint8Array; nonce?: Uint8Array | undefined }): {
  keyIdBytes: Uint8Array;
  nonce: Uint8Array;
} {
  const keyIdBytes = checkKeyId(input.keyId);
  if (!(input.plaintext instanceof Uint8Array)) throw new LetheError('validation_failed', 'plaintext must be bytes');
  if (!(input.associatedData instanceof Uint8Array)) throw new LetheError('validation_failed', 'associatedData must be bytes');
  const nonce = input.nonce ?? randomBytes(NONCE_LENGTH);
  if (!(nonce instanceof Uint8Array) || nonce.length !== NONCE_LENGTH) throw new LetheError('validation_failed', `nonce must be ${NONCE_LENGTH} bytes`);
  return { keyIdBytes, nonce };
}

/**
 * An envelope's bytes: the header (algorithm, key id, nonce, commitment), then
 * `plaintext` encrypted straight into the buffer after it by the cipher `cipherFor`
 * makes for the authenticated data (header || associatedData).
 */
function writeEnvelope(
  algorithm: number,
  keyIdBytes: Uint8Array,
  nonce: Uint8Array,
  commitment: Uint8Array,
  plaintext: Uint8Array,
  associatedData: Uint8Array,
  cipherFor: (aad: Uint8Array) => EnvelopeCipher,
): Uint8Array {
  const headerLength = FIXED_HEADER + keyIdBytes.length + NONCE_LENGTH + COMMITMENT_LENGTH;
  const out = new Uint8Array(headerLength + plaintext.length + TAG_LENGTH);
  out[0] = ENVELOPE_MAGIC_0;
  out[1] = ENVELOPE_MAGIC_1;
  out[2] = FORMAT_VERSION;
  out[3] = algorithm;
  out[4] = keyIdBytes.length;
  out.set(keyIdBytes, FIXED_HEADER);
  out.set(nonce, FIXED_HEADER + keyIdBytes.length);
  out.set(commitment, FIXED_HEADER + keyIdBytes.length + NONCE_LENGTH);
  cipherFor(concat(out.subarray(0, headerLength), associatedData)).encrypt(plaintext, out.subarray(headerLength));
  return out;
}

/** Encrypts `plaintext` into a fresh envelope. */
export function seal(input: SealInput): Uint8Array {
  checkKey(input.key);
  const { keyIdBytes, nonce } = checkSealInput(input);
  const { encKey, commitment } = deriveKeys(input.key, nonce);
  try {
    return writeEnvelope(ALG_XCHACHA20POLY1305_HKDF_SHA256, keyIdBytes, nonce, commitment, input.plaintext, input.associatedData, (aad) =>
      xchacha20poly1305(encKey, nonce, aad),
    );
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
  if (algorithm !== ALG_XCHACHA20POLY1305_HKDF_SHA256 && algorithm !== ALG_XCHACHA20POLY1305_PREPARED) {
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

/** Decrypts an envelope (either algorithm); returns a fresh plaintext buffer the caller owns. */
export function open(input: OpenInput): Uint8Array {
  checkKey(input.key);
  if (!(input.associatedData instanceof Uint8Array)) throw new LetheError('validation_failed', 'associatedData must be bytes');
  const parts = parseEnvelope(input.envelope);
  if (input.expectedKeyId !== undefined && parts.keyId !== input.expectedKeyId) {
    throw new LetheError('decrypt_failed', 'envelope names a different key id than expected');
  }
  if (parts.algorithm === ALG_XCHACHA20POLY1305_PREPARED) {
    const prepared = new PreparedKey(input.key);
    try {
      return openParts(prepared, parts, input.associatedData);
    } finally {
      prepared.destroy();
    }
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
  if (parts.algorithm === ALG_XCHACHA20POLY1305_PREPARED) {
    const prepared = new PreparedKey(key);
    try {
      return constantTimeEqual(prepared.commitment(parts.nonce), parts.commitment);
    } finally {
      prepared.destroy();
    }
  }
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

/**
 * Algorithm 2's key schedule for one 32-byte key, derived once (HKDF) for many
 * envelopes: the XChaCha20-Poly1305 key and the keyed commitment state. Keeps no copy
 * of the key itself. `destroy` wipes both; a destroyed PreparedKey refuses to seal or open.
 */
export class PreparedKey {
  readonly #encKey: Uint8Array;
  readonly #commit: ReturnType<typeof hmac.create>;
  #destroyed = false;

  /** Derives from `key` (not modified; the caller owns and zeroes it). */
  constructor(key: Uint8Array) {
    checkKey(key);
    const prk = extract(sha256, key, PREPARED_SALT);
    const commitKey = expand(sha256, prk, PREPARED_INFO_COMMIT, KEY_LENGTH);
    try {
      this.#encKey = expand(sha256, prk, PREPARED_INFO_ENC, KEY_LENGTH);
      this.#commit = hmac.create(sha256, commitKey);
    } finally {
      zeroize(prk, commitKey);
    }
  }

  /** The commitment tag of an envelope with this nonce. */
  commitment(nonce: Uint8Array): Uint8Array {
    this.#live();
    return this.#commit.clone().update(nonce).digest();
  }

  /** The cipher for one envelope (caller-internal: seal/open of algorithm 2). */
  cipher(nonce: Uint8Array, aad: Uint8Array): EnvelopeCipher {
    this.#live();
    return xchacha20poly1305(this.#encKey, nonce, aad);
  }

  get destroyed(): boolean {
    return this.#destroyed;
  }

  destroy(): void {
    if (this.#destroyed) return;
    this.#destroyed = true;
    zeroize(this.#encKey);
    this.#commit.destroy();
  }

  #live(): void {
    if (this.#destroyed) throw new LetheError('epoch_unavailable', 'the key was dropped (its prepared schedule is wiped)');
  }
}

export interface SealPreparedInput {
  readonly prepared: PreparedKey;
  /** Identifier of the key `prepared` was derived from, recorded in the header. */
  readonly keyId: string;
  readonly plaintext: Uint8Array;
  readonly associatedData: Uint8Array;
  /** Test hook for known-answer vectors only. Never pass in production code. */
  readonly nonce?: Uint8Array;
}

/** Encrypts `plaintext` into a fresh envelope of algorithm 2 under a prepared key. */
export function sealPrepared(input: SealPreparedInput): Uint8Array {
  const { keyIdBytes, nonce } = checkSealInput(input);
  const commitment = input.prepared.commitment(nonce);
  return writeEnvelope(ALG_XCHACHA20POLY1305_PREPARED, keyIdBytes, nonce, commitment, input.plaintext, input.associatedData, (aad) =>
    input.prepared.cipher(nonce, aad),
  );
}

export interface OpenPreparedInput {
  readonly prepared: PreparedKey;
  readonly envelope: Uint8Array;
  readonly associatedData: Uint8Array;
  readonly expectedKeyId?: string;
}

/** Decrypts an envelope of algorithm 2 under a prepared key (one of algorithm 1 is refused: `open` it with the key). */
export function openPrepared(input: OpenPreparedInput): Uint8Array {
  if (!(input.associatedData instanceof Uint8Array)) throw new LetheError('validation_failed', 'associatedData must be bytes');
  const parts = parseEnvelope(input.envelope);
  if (input.expectedKeyId !== undefined && parts.keyId !== input.expectedKeyId) {
    throw new LetheError('decrypt_failed', 'envelope names a different key id than expected');
  }
  if (parts.algorithm !== ALG_XCHACHA20POLY1305_PREPARED) throw new LetheError('envelope_unsupported', 'not an envelope of a prepared key (algorithm 2)');
  return openParts(input.prepared, parts, input.associatedData);
}

function openParts(prepared: PreparedKey, parts: EnvelopeParts, associatedData: Uint8Array): Uint8Array {
  if (!constantTimeEqual(prepared.commitment(parts.nonce), parts.commitment)) {
    throw new LetheError('key_commitment_mismatch', 'envelope is not committed to this key');
  }
  try {
    return prepared.cipher(parts.nonce, concat(parts.header, associatedData)).decrypt(parts.ciphertext);
  } catch (cause) {
    throw new LetheError('decrypt_failed', 'envelope failed authentication', { cause });
  }
}

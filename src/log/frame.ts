/**
 * Frames: one log entry sealed in an envelope. Since record keys, each entry has a key
 * of its own (32 random bytes) that seals its frame, and that key is wrapped under the
 * subject's DEK and kept in the entry's index row: forgetting one entry re-wraps the
 * other entries' record keys under a new subject key and destroys the old one — no
 * frame is read or rewritten. The frame's associated data binds its entry id and
 * sequence number; the wrap's binds the subject key id and the entry id (purpose
 * `record`), so a frame moved to another entry or place, a record key copied onto
 * another entry's row, or a wrap relabelled with another subject key fails to open.
 *
 * Frames written before record keys were sealed directly under the subject's DEK
 * (associated data: key id, entry id, seq); they open with `openEntry` and a null
 * wrapped key, and the next re-key converts them.
 *
 * Everything about the entry that came from its writer — text, kind, metadata — is
 * inside the ciphertext; the index holds none of it.
 */
import { encodeContext, KEY_LENGTH, open, randomBytes, seal, unwrapKey, utf8, wrapKey, zeroize } from '../crypto/index.js';
import { LetheError } from '../errors.js';

export interface FramePayload {
  readonly text: string;
  readonly kind: string | null;
  readonly metadata: Record<string, unknown> | null;
}

export interface FramePlaceIds {
  /** The subject key the entry is indexed under (which wraps its record key). */
  readonly keyId: string;
  readonly entryId: string;
  readonly seq: number;
}

/** A frame sealed under a record key of its own, and that key wrapped under the subject's DEK. */
export interface SealedEntry {
  readonly envelope: Uint8Array;
  readonly wrappedKey: Uint8Array;
}

function legacyContext(ids: FramePlaceIds): Uint8Array {
  return encodeContext('frame', { keyId: ids.keyId, entryId: ids.entryId, seq: ids.seq });
}

function recordContext(ids: Pick<FramePlaceIds, 'entryId' | 'seq'>): Uint8Array {
  return encodeContext('record-frame', { entryId: ids.entryId, seq: ids.seq });
}

function encodePayload(payload: FramePayload): Uint8Array {
  return utf8.encode(JSON.stringify(payload));
}

function decodePayload(plaintext: Uint8Array): FramePayload {
  try {
    const parsed = JSON.parse(utf8.decode(plaintext)) as FramePayload;
    if (typeof parsed.text !== 'string') throw new LetheError('decrypt_failed', 'frame payload is not an entry');
    return parsed;
  } finally {
    plaintext.fill(0);
  }
}

/** Wraps a record key under the subject key `keyId` (its DEK `dek`). */
export function wrapRecordKey(dek: Uint8Array, keyId: string, entryId: string, recordKey: Uint8Array): Uint8Array {
  return wrapKey({ kek: dek, kekId: keyId, dek: recordKey, keyId: entryId, purpose: 'record' });
}

/** The entry's record key (the caller zeroes it). */
export function unwrapRecordKey(dek: Uint8Array, keyId: string, entryId: string, wrapped: Uint8Array): Uint8Array {
  return unwrapKey({ kek: dek, kekId: keyId, wrapped, keyId: entryId, purpose: 'record' });
}

/** Seals an entry under a fresh record key, returned wrapped under the subject's DEK. */
export function sealEntry(dek: Uint8Array, ids: FramePlaceIds, payload: FramePayload): SealedEntry {
  const recordKey = randomBytes(KEY_LENGTH);
  try {
    return { envelope: sealRecordFrame(recordKey, ids, payload), wrappedKey: wrapRecordKey(dek, ids.keyId, ids.entryId, recordKey) };
  } finally {
    zeroize(recordKey);
  }
}

function sealRecordFrame(recordKey: Uint8Array, ids: Pick<FramePlaceIds, 'entryId' | 'seq'>, payload: FramePayload): Uint8Array {
  const plaintext = encodePayload(payload);
  try {
    return seal({ key: recordKey, keyId: ids.entryId, plaintext, associatedData: recordContext(ids) });
  } finally {
    plaintext.fill(0);
  }
}

/**
 * Opens an entry's frame: its record key unwrapped under the subject's DEK, or — a
 * frame written before record keys (`wrappedKey` null) — under the DEK itself.
 */
export function openEntry(dek: Uint8Array, ids: FramePlaceIds, wrappedKey: Uint8Array | null, envelope: Uint8Array): FramePayload {
  if (wrappedKey === null) return decodePayload(open({ key: dek, envelope, expectedKeyId: ids.keyId, associatedData: legacyContext(ids) }));
  const recordKey = unwrapRecordKey(dek, ids.keyId, ids.entryId, wrappedKey);
  try {
    return decodePayload(open({ key: recordKey, envelope, expectedKeyId: ids.entryId, associatedData: recordContext(ids) }));
  } finally {
    zeroize(recordKey);
  }
}

/** A record key moved from one subject key to another (a re-key): unwrapped under the old DEK, wrapped under the new. */
export function rewrapRecordKey(
  from: { dek: Uint8Array; keyId: string },
  to: { dek: Uint8Array; keyId: string },
  entryId: string,
  wrapped: Uint8Array,
): Uint8Array {
  const recordKey = unwrapRecordKey(from.dek, from.keyId, entryId, wrapped);
  try {
    return wrapRecordKey(to.dek, to.keyId, entryId, recordKey);
  } finally {
    zeroize(recordKey);
  }
}

/** A frame sealed directly under the subject's DEK, as before record keys (tests of the legacy path only). */
export function sealLegacyFrame(dek: Uint8Array, ids: FramePlaceIds, payload: FramePayload): Uint8Array {
  const plaintext = encodePayload(payload);
  try {
    return seal({ key: dek, keyId: ids.keyId, plaintext, associatedData: legacyContext(ids) });
  } finally {
    plaintext.fill(0);
  }
}

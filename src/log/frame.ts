/**
 * Frames: one log entry sealed under its subject's DEK. The associated data binds
 * the frame to its key id, entry id and sequence number, so a frame moved to another
 * entry, another place in the log, or relabelled with another key fails to open.
 * Everything about the entry that came from its writer — text, kind, metadata — is
 * inside the ciphertext; the index holds none of it.
 */
import { encodeContext, open, seal, utf8 } from '../crypto/index.js';
import { LetheError } from '../errors.js';

export interface FramePayload {
  readonly text: string;
  readonly kind: string | null;
  readonly metadata: Record<string, unknown> | null;
}

export interface FramePlaceIds {
  readonly keyId: string;
  readonly entryId: string;
  readonly seq: number;
}

function context(ids: FramePlaceIds): Uint8Array {
  return encodeContext('frame', { keyId: ids.keyId, entryId: ids.entryId, seq: ids.seq });
}

export function sealFrame(dek: Uint8Array, ids: FramePlaceIds, payload: FramePayload): Uint8Array {
  const plaintext = utf8.encode(JSON.stringify(payload));
  try {
    return seal({ key: dek, keyId: ids.keyId, plaintext, associatedData: context(ids) });
  } finally {
    plaintext.fill(0);
  }
}

export function openFrame(dek: Uint8Array, ids: FramePlaceIds, envelope: Uint8Array): FramePayload {
  const plaintext = open({ key: dek, envelope, expectedKeyId: ids.keyId, associatedData: context(ids) });
  try {
    const parsed = JSON.parse(utf8.decode(plaintext)) as FramePayload;
    if (typeof parsed.text !== 'string') throw new LetheError('decrypt_failed', 'frame payload is not an entry');
    return parsed;
  } finally {
    plaintext.fill(0);
  }
}

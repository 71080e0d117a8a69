/**
 * The objects a backup copies, as bytes: which live-bucket prefixes it covers, their
 * content address (sha256: objects/<sha256> in the backup bucket, shared by backups,
 * and what verify and restore check them against), and the key ids whose data each
 * holds — read from the ciphertext's own envelope headers, so neither taking nor
 * verifying a backup needs a plaintext key or the database to know them.
 */
import { createHash } from 'node:crypto';
import { envelopeKeyId } from '../crypto/index.js';
import { decodeSegment } from '../log/segment.js';

/** What the backup copies from the live bucket (and what a restore wants empty there). */
export const BACKED_UP_PREFIXES = ['log/', 'artifacts/'] as const;

export const sha256Hex = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** The envelopes an object holds: a segment's frames, or the object itself. */
export function envelopesOf(objectKey: string, bytes: Uint8Array): Uint8Array[] {
  return objectKey.startsWith('log/') ? decodeSegment(bytes).map((f) => f.envelope) : [bytes];
}

/** The key ids whose data an object holds, read from its envelopes' own headers. */
export function keyIdsOf(objectKey: string, bytes: Uint8Array): string[] {
  return [...new Set(envelopesOf(objectKey, bytes).map(envelopeKeyId))].sort();
}

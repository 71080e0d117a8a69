/**
 * The objects a backup copies, as bytes: which live-bucket prefixes it covers, their
 * content address (sha256: objects/<sha256> in the backup bucket, shared by backups,
 * and what verify and restore check them against), and the key ids whose data each
 * holds — read from the ciphertext's own envelope headers, so neither taking nor
 * verifying a backup needs a plaintext key or the database to know them.
 */
import { createHash } from 'node:crypto';
import { envelopeKeyId } from '../crypto/index.js';
import { ID_PATTERNS } from '../ids.js';
import { decodeSegment } from '../log/segment.js';
import { type DatabaseExport, decodeValue } from './database.js';

/** What the backup copies from the live bucket (and what a restore wants empty there). */
export const BACKED_UP_PREFIXES = ['log/', 'artifacts/'] as const;

export const sha256Hex = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** The envelopes an object holds: a segment's frames, or the object itself. */
export function envelopesOf(objectKey: string, bytes: Uint8Array): Uint8Array[] {
  return objectKey.startsWith('log/') ? decodeSegment(bytes).map((f) => f.envelope) : [bytes];
}

/** Where a record frame's key is: the subject key that wraps it, and the wrapped copy (from the backup's log index). */
export interface RecordOwner {
  readonly keyId: string;
  readonly wrappedKey: Uint8Array;
}

/**
 * The owners of the record frames a database export indexes, by entry id. A log frame's
 * envelope names its own record key (the entry id, src/log/frame.ts); the subject key
 * whose destruction makes it unreadable is the one its index row wraps that key under.
 */
export function recordOwnersOf(dump: DatabaseExport): Map<string, RecordOwner> {
  const out = new Map<string, RecordOwner>();
  for (const row of dump.tables.log_entries) {
    const wrapped = decodeValue(row.wrappedKey);
    if (typeof row.entryId === 'string' && typeof row.keyId === 'string' && wrapped instanceof Uint8Array)
      out.set(row.entryId, { keyId: row.keyId, wrappedKey: wrapped });
  }
  return out;
}

/**
 * The key ids whose data an object holds, read from its envelopes' own headers — a
 * record frame's through its owner: the subject key it is under in the backup's index.
 * A record frame no index row of the backup names (written after its snapshot) holds
 * data of no key the backup can bring back: it has no wrapped record key there.
 */
export function keyIdsOf(objectKey: string, bytes: Uint8Array, owners: ReadonlyMap<string, RecordOwner>): string[] {
  const ids = new Set<string>();
  for (const id of envelopesOf(objectKey, bytes).map(envelopeKeyId)) {
    if (!ID_PATTERNS.entry.test(id)) ids.add(id);
    else {
      const owner = owners.get(id);
      if (owner) ids.add(owner.keyId);
    }
  }
  return [...ids].sort();
}

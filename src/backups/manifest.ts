/**
 * The backup manifest: what a backup holds, self-described, in the backup bucket.
 * Every object with its sha256 and the key ids whose data it holds (read from the
 * ciphertext's own envelope headers, not from the database), and every key with its
 * state. A destruction after the backup writes a new version of the manifest marking
 * the key destroyed. Keys are named by key id only — never by subject.
 *
 * Also the backup bucket's layout (where each part of a backup is stored) and reading
 * a manifest's current version back from it.
 */
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { constantTimeEqual, type KeyedHasher, utf8 } from '../crypto/index.js';
import { LetheError } from '../errors.js';
import type { ObjectStore } from '../storage/store.js';

export const MANIFEST_FORMAT = 'lethe-backup-manifest/1';

export interface ManifestObject {
  /** The object's key in the live bucket. */
  readonly key: string;
  readonly sha256: string;
  readonly size: number;
  /** Where its bytes are in the backup bucket (content-addressed, shared by backups). */
  readonly stored: string;
  readonly keyIds: string[];
}

export interface ManifestKey {
  readonly keyId: string;
  readonly kind: 'subject' | 'artifact-version' | 'unknown';
  readonly state: 'active' | 'destroyed';
  readonly destroyedAt?: string;
}

export interface Manifest {
  readonly format: typeof MANIFEST_FORMAT;
  readonly backupId: string;
  readonly version: number;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** The export of the key table (wrapped keys and their epochs) in the backup bucket. */
  readonly keyTable: { readonly key: string; readonly sha256: string; readonly keys: number };
  /** The export of lethe's tables (ciphertext and metadata only) a restore loads. */
  readonly database: { readonly key: string; readonly sha256: string };
  /** Destruction-ledger rows when the backup was taken; each is also a ledger/<keyId>.json object. */
  readonly ledgerEntries: number;
  readonly objects: ManifestObject[];
  readonly keys: ManifestKey[];
  /** The ledger chain's last record when the backup was taken: a restore refuses a chain cut back behind it. */
  readonly ledgerHead?: { readonly seq: number; readonly mac: string };
  /**
   * HMAC-SHA256 (hex) under the ledger-chain subkey over the manifest's canonical JSON
   * without this field: an edited manifest does not verify. Absent on manifests written
   * before manifests were MAC'd.
   */
  readonly mac?: string;
}

/**
 * The MAC covers the manifest's JSON as stored, without its `mac` field: what
 * JSON.stringify writes, which JSON.parse and JSON.stringify give back unchanged (key
 * order kept), so a verifier re-serialises what it read. Not canonical JSON: a
 * manifest of a million keys is hashed in one pass (a reordered manifest fails, which
 * only someone editing it produces). Domain-separated from the ledger chain's records
 * by the manifest's own format field.
 */
function manifestMac(mac: KeyedHasher, manifest: Manifest): string {
  const { mac: _omitted, ...rest } = manifest;
  return bytesToHex(mac.hash(utf8.encode(JSON.stringify(rest))));
}

/** The manifest with its MAC (any previous MAC replaced). */
export function sealManifest(mac: KeyedHasher, manifest: Manifest): Manifest {
  const { mac: _omitted, ...rest } = manifest;
  return { ...rest, mac: manifestMac(mac, rest) };
}

/** Whether the manifest carries a MAC that verifies: 'valid', 'invalid' (altered) or 'absent' (written before MACs). */
export function manifestMacState(mac: KeyedHasher, manifest: Manifest): 'valid' | 'invalid' | 'absent' {
  if (manifest.mac === undefined) return 'absent';
  if (typeof manifest.mac !== 'string' || !/^[0-9a-f]{64}$/.test(manifest.mac)) return 'invalid';
  return constantTimeEqual(hexToBytes(manifestMac(mac, manifest)), hexToBytes(manifest.mac)) ? 'valid' : 'invalid';
}

export function manifestKey(backupId: string): string {
  return `backups/${backupId}/manifest.json`;
}

/** The manifest's current version, as stored in the backup bucket. */
export async function readManifest(store: ObjectStore, backupId: string): Promise<Manifest> {
  const bytes = await store.get(manifestKey(backupId));
  let parsed: Manifest;
  try {
    parsed = JSON.parse(Buffer.from(bytes).toString('utf8')) as Manifest;
  } catch {
    throw new LetheError('conflict', `the stored manifest of backup ${backupId} is not JSON: it was damaged or replaced`);
  }
  if (parsed === null || typeof parsed !== 'object' || parsed.format !== MANIFEST_FORMAT || parsed.backupId !== backupId) {
    throw new LetheError('conflict', `the stored manifest at ${manifestKey(backupId)} is not backup ${backupId}'s: it was replaced`);
  }
  return parsed;
}

export function keyTableKey(backupId: string): string {
  return `backups/${backupId}/keys.json`;
}

export function databaseKey(backupId: string): string {
  return `backups/${backupId}/database.json`;
}

export function storedObjectKey(sha256: string): string {
  return `objects/${sha256}`;
}

/** What a manifest's base lacks and the ledger chain holds: the destructions after the backup was taken. */
export interface ManifestOverlay {
  /** How many of the backup's keys the chain marks destroyed that the base lists as active. */
  readonly destroyed: number;
  /** The newest chain record among them (null: none). */
  readonly through: number | null;
}

/**
 * The folded view: the base manifest with every key the ledger chain records destroyed
 * marked so, and the overlay that says how many marks came from the chain. The base's
 * MAC covers the base only, so the view carries it as `base` (with the base version),
 * not as its own `mac`.
 */
export type FoldedManifest = Omit<Manifest, 'mac'> & {
  readonly base: { readonly version: number; readonly mac: string | null };
  readonly overlay: ManifestOverlay;
};

export function foldManifest(
  manifest: Manifest,
  destroyed: ReadonlyMap<string, { readonly destroyedAt: Date | string; readonly seq?: number }>,
): FoldedManifest {
  const { mac, ...base } = manifest;
  let marked = 0;
  let through: number | null = null;
  const keys = manifest.keys.map((k) => {
    const d = destroyed.get(k.keyId);
    if (!d || k.state === 'destroyed') return k;
    marked++;
    if (d.seq !== undefined) through = Math.max(through ?? 0, d.seq);
    return { ...k, state: 'destroyed' as const, destroyedAt: new Date(d.destroyedAt).toISOString() };
  });
  return { ...base, keys, base: { version: manifest.version, mac: mac ?? null }, overlay: { destroyed: marked, through } };
}

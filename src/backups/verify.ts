/**
 * Verifying a backup: every stored object against its sha256, and for every key in the
 * manifest whether its data in the backup still decrypts with what lethe holds and
 * whether the backup's own wrapped copy of the key still unwraps. Nothing is
 * decrypted: a live key is checked against an envelope's key-commitment tag, and keys
 * unwrapped to check them are zeroized at once. Also the manifest's MAC and the backup
 * bucket's ledger chain, verified as a restore would — and folded into the manifest:
 * a key the chain records destroyed is checked as destroyed (its data must be
 * unreadable), whatever the manifest's base says.
 */
import { envelopeKeyId, isCommittedTo, zeroize } from '../crypto/index.js';
import { isLetheError } from '../errors.js';
import type { BackupContext } from './context.js';
import { readKeyTable } from './key-table.js';
import { readChain, type VerifiedChain } from './ledger-chain.js';
import { type Manifest, manifestMacState } from './manifest.js';
import { parseDatabaseExport } from './database.js';
import { unwrapRecordKey } from '../log/frame.js';
import { envelopesOf, recordOwnersOf, sha256Hex } from './objects.js';
import { unwrapAs } from '../vault/wrapping.js';

export interface VerifiedKey {
  readonly keyId: string;
  /** The key's state: the manifest's, folded with the ledger chain (destroyed when either says so). */
  readonly state: 'active' | 'destroyed';
  /** Where a destroyed state comes from: the manifest's base, or the ledger chain (a destruction after the backup). */
  readonly destroyedBy?: 'manifest' | 'chain';
  /** decrypts: a live key lethe holds opens the key's data in this backup; unreadable: nothing lethe holds does. */
  readonly data: 'decrypts' | 'unreadable';
  /**
   * The backup's own key-table copy of the wrapped key: none (not in the export),
   * inert (its epoch is gone), or unwraps (its epoch still exists: the residual lasts
   * until that epoch is retired).
   */
  readonly wrappedCopy: 'none' | 'inert' | 'unwraps';
  readonly wrappedEpoch?: number;
}

export interface Verification {
  readonly backupId: string;
  readonly manifestVersion: number;
  readonly objectsChecked: number;
  /** Objects whose stored bytes are missing or do not match their sha256. */
  readonly corrupted: Array<{ key: string; stored: string; reason: 'missing' | 'sha256-mismatch' }>;
  readonly keys: VerifiedKey[];
  /** The manifest's MAC: valid, invalid (edited), or absent (written before manifests were MAC'd). */
  readonly manifestMac: 'valid' | 'invalid' | 'absent';
  /**
   * The backup bucket's ledger chain, verified from its genesis: what a restore would
   * replay, or what it would refuse; `folded`: how many of this backup's keys it marks
   * destroyed that the manifest's base lists as active.
   */
  readonly ledger: { readonly ok: boolean; readonly records: number; readonly destructions: number; readonly folded: number; readonly problem?: string };
  /** Every object intact, every active key's data decrypts, every destroyed key's data unreadable, the manifest's MAC valid, the ledger chain intact. */
  readonly ok: boolean;
}

/** Checks the backup `manifest` (its current version) describes. */
/** Whether the envelope is committed to the key — a record frame to the record key `key` unwraps from its wrapped copy. */
function opensUnder(key: Uint8Array, keyId: string, sample: { envelope: Uint8Array; record?: { entryId: string; wrappedKey: Uint8Array } }): boolean {
  if (!sample.record) return isCommittedTo(key, sample.envelope);
  let recordKey: Uint8Array | undefined;
  try {
    recordKey = unwrapRecordKey(key, keyId, sample.record.entryId, sample.record.wrappedKey);
    return isCommittedTo(recordKey, sample.envelope);
  } catch {
    return false;
  } finally {
    zeroize(recordKey);
  }
}

export async function verifyBackup(ctx: BackupContext, manifest: Manifest): Promise<Verification> {
  const corrupted: Verification['corrupted'] = [];
  // one envelope per key, to check against the live key (a record frame's through the record key its backed-up index row wraps)
  const owners = recordOwnersOf(parseDatabaseExport(await ctx.backup.get(manifest.database.key)));
  const sample = new Map<string, { envelope: Uint8Array; record?: { entryId: string; wrappedKey: Uint8Array } }>();
  for (const o of manifest.objects) {
    let bytes: Uint8Array;
    try {
      bytes = await ctx.backup.get(o.stored);
    } catch (e) {
      if (!isLetheError(e, 'not_found')) throw e;
      corrupted.push({ key: o.key, stored: o.stored, reason: 'missing' });
      continue;
    }
    if (sha256Hex(bytes) !== o.sha256) {
      corrupted.push({ key: o.key, stored: o.stored, reason: 'sha256-mismatch' });
      continue;
    }
    for (const envelope of envelopesOf(o.key, bytes)) {
      const id = envelopeKeyId(envelope);
      const owner = owners.get(id);
      const keyId = owner ? owner.keyId : id;
      if (!sample.has(keyId)) sample.set(keyId, owner ? { envelope, record: { entryId: id, wrappedKey: owner.wrappedKey } } : { envelope });
    }
  }
  // the ledger chain first: the overlay folded into the manifest's key states
  let chain: VerifiedChain | undefined;
  let problem: string | undefined;
  try {
    chain = await readChain(ctx.backup, ctx.ledgerMac);
    const knew = manifest.ledgerHead;
    problem = !chain.present
      ? 'the backup bucket holds no ledger chain'
      : knew && !chain.macs.get(knew.seq)?.includes(knew.mac)
        ? `the ledger chain does not hold record ${knew.seq}, at which this backup was taken, as the backup knew it`
        : (chain.manifests.get(manifest.backupId) ?? 0) > manifest.version
          ? `the manifest is version ${manifest.version}, older than the version ${chain.manifests.get(manifest.backupId)} the ledger chain records`
          : undefined;
  } catch (e) {
    if (!isLetheError(e, 'conflict')) throw e;
    problem = e.message;
  }
  const table = await readKeyTable(ctx.backup, manifest);
  const deks = await ctx.keys.deksFor(manifest.keys.filter((k) => k.kind !== 'artifact-version').map((k) => k.keyId));
  const keys: VerifiedKey[] = [];
  try {
    for (const k of manifest.keys) {
      let live = deks.get(k.keyId);
      if (!live && k.kind === 'artifact-version') {
        const purpose = await ctx.versionKeys.purposeOf(k.keyId);
        live =
          purpose === undefined
            ? undefined
            : await ctx.versionKeys.unwrap(k.keyId, purpose).catch((e: unknown) => {
                if (isLetheError(e, 'key_destroyed')) return undefined;
                throw e;
              });
      }
      const found = sample.get(k.keyId);
      const decrypts = live !== undefined && found !== undefined && opensUnder(live, k.keyId, found);
      if (live && k.kind === 'artifact-version') zeroize(live);
      const copy = table.get(k.keyId);
      let wrappedCopy: VerifiedKey['wrappedCopy'] = 'none';
      if (copy) {
        try {
          zeroize(await unwrapAs(ctx.db, ctx.provider, { keyId: k.keyId, epoch: copy.epoch, wrappedDek: copy.wrapped }, copy.purpose));
          wrappedCopy = 'unwraps';
        } catch (e) {
          if (!isLetheError(e, 'epoch_unavailable')) throw e;
          wrappedCopy = 'inert';
        }
      }
      const destroyedBy = k.state === 'destroyed' ? 'manifest' : chain?.entries.has(k.keyId) ? 'chain' : undefined;
      keys.push({
        keyId: k.keyId,
        state: destroyedBy ? 'destroyed' : 'active',
        ...(destroyedBy ? { destroyedBy } : {}),
        data: decrypts ? 'decrypts' : 'unreadable',
        wrappedCopy,
        ...(copy ? { wrappedEpoch: copy.epoch } : {}),
      });
    }
  } finally {
    for (const dek of deks.values()) zeroize(dek);
  }
  const manifestMac = manifestMacState(ctx.ledgerMac, manifest);
  const folded = keys.filter((k) => k.destroyedBy === 'chain').length;
  const ledger: Verification['ledger'] = {
    ok: problem === undefined,
    records: chain?.last ? chain.last.seq + 1 : 0,
    destructions: chain?.entries.size ?? 0,
    folded,
    ...(problem ? { problem } : {}),
  };
  const ok =
    corrupted.length === 0 &&
    keys.every((k) => (k.state === 'active' ? k.data === 'decrypts' : k.data === 'unreadable')) &&
    manifestMac === 'valid' &&
    ledger.ok;
  return { backupId: manifest.backupId, manifestVersion: manifest.version, objectsChecked: manifest.objects.length, corrupted, keys, manifestMac, ledger, ok };
}

/**
 * Restoring a backup into this vault's database and live bucket, which must both be
 * empty of lethe data. A restore brings no destroyed key back: the destruction ledger
 * is replayed first — every key the backup bucket's ledger copy, the manifest or the
 * backup's own ledger rows say was destroyed is left out of the restored key tables
 * (its data, restored byte for byte, stays unreadable) and recorded in the restored
 * ledger. Without a readable, complete ledger copy the restore refuses, unless forced
 * — and then says what it could not guarantee.
 */
import { sql } from 'drizzle-orm';
import { queryRows } from '../db/client.js';
import { isLetheError, LetheError } from '../errors.js';
import { clearForRestore, replayDestructions } from '../vault/restore.js';
import type { BackupContext } from './context.js';
import { importDatabase, occupiedTables, parseDatabaseExport } from './database.js';
import { readLedgerCopy } from './ledger-copy.js';
import { readManifest } from './manifest.js';
import { BACKED_UP_PREFIXES, sha256Hex } from './objects.js';

export interface RestoreResult {
  readonly backupId: string;
  readonly manifestVersion: number;
  readonly objects: number;
  /** Keys restored live. */
  readonly keys: number;
  readonly entries: number;
  readonly artifacts: number;
  /** Artifacts whose current version's key was destroyed after the backup. */
  readonly staleArtifacts: number;
  /** Of those, regenerated from the restored sources / erased for want of any. */
  readonly regeneratedArtifacts: number;
  readonly removedArtifacts: number;
  /** Keys known destroyed (ledger copy, manifest, the backup's own ledger): left out. */
  readonly destroyedKeys: number;
  /** Destructions written into the restored ledger that the backup's own rows did not have. */
  readonly replayed: number;
  readonly ledger: 'replayed' | 'forced';
  /** What a forced restore could not guarantee. */
  readonly warnings: string[];
}

export async function restoreBackup(ctx: BackupContext, backupId: string, options: { force?: boolean; actor: string }): Promise<RestoreResult> {
  const manifest = await readManifest(ctx.backup, backupId).catch((e: unknown) => {
    if (isLetheError(e, 'not_found')) throw new LetheError('not_found', `no manifest for backup ${backupId} in the backup bucket`);
    throw e;
  });
  const occupied = await occupiedTables(ctx.db);
  if (occupied.length > 0) throw new LetheError('conflict', `the target database is not empty (${occupied.join(', ')}): restore into a fresh one`);
  for (const prefix of BACKED_UP_PREFIXES) {
    for await (const _ of ctx.live.list(prefix)) throw new LetheError('conflict', `the target bucket already holds ${prefix} objects: restore into an empty one`);
  }

  const databaseBytes = await ctx.backup.get(manifest.database.key);
  if (sha256Hex(databaseBytes) !== manifest.database.sha256) throw new LetheError('validation_failed', 'the backup\'s database export does not match its sha256');
  const dump = parseDatabaseExport(databaseBytes);

  // the ledger: the append-only copy in the backup bucket, checked against what the backup knew
  const warnings: string[] = [];
  const { started, entries: destroyed } = await readLedgerCopy(ctx.backup);
  const knownAtBackup = dump.tables.destruction_ledger.map((r) => String(r.keyId));
  const missing = knownAtBackup.filter((k) => !destroyed.has(k));
  if (!started || missing.length > 0) {
    const problem = !started
      ? 'the ledger copy in the backup bucket is gone (ledger/genesis.json is missing)'
      : `the ledger copy in the backup bucket lacks ${missing.length} destruction(s) the backup itself records`;
    if (!options.force) {
      throw new LetheError('conflict', `${problem}: refusing to restore, since a key destroyed after this backup could come back. Restore with --force-without-ledger to proceed anyway.`);
    }
    warnings.push(
      `${problem}. Proceeding because forced: keys destroyed after this backup and recorded only in the lost ledger ARE RESTORED AS LIVE unless the manifest marks them; erase them again.`,
    );
  }
  // the manifest's marks and the backup's own ledger rows count as destructions too
  for (const k of manifest.keys) {
    if (k.state === 'destroyed' && !destroyed.has(k.keyId)) {
      destroyed.set(k.keyId, { keyId: k.keyId, keyKind: k.kind, subjectHash: null, destroyedAt: k.destroyedAt ?? manifest.updatedAt, reason: 'manifest', wrappedEpoch: -1, leasedUntil: null });
    }
  }

  // epochs: the keyring must still hold the export's active epoch, or every restored key is inert
  const activeEpoch = dump.tables.epochs.find((e) => e.state === 'active')?.epoch as number | undefined;
  const present = await ctx.provider.listEpochs();
  if (activeEpoch === undefined || !present.includes(activeEpoch)) {
    throw new LetheError('conflict', `the key provider no longer holds epoch ${activeEpoch ?? '?'}, under which this backup's keys are wrapped: they are inert and nothing would decrypt`);
  }

  const restoredKeyIds = new Set<string>();
  const counts = await ctx.db.transaction(async (tx) => {
    // a fresh database has its own first epoch and audit rows: the backup's replace them
    await clearForRestore(tx);
    const imported = await importDatabase(tx, dump, (table, row) => {
      if (table === 'subject_keys' || table === 'artifact_keys') {
        const keep = !destroyed.has(String(row.keyId));
        if (keep) restoredKeyIds.add(String(row.keyId));
        return keep;
      }
      if (table === 'embeddings') return !destroyed.has(String(row.keyId));
      return true;
    });
    const inLedger = new Set(knownAtBackup);
    const replay = [...destroyed.values()].filter((d) => !inLedger.has(d.keyId));
    await replayDestructions(
      tx,
      replay.map((d) => ({
        keyId: d.keyId,
        keyKind: d.keyKind === 'artifact-version' ? 'artifact-version' : 'subject',
        subjectHash: d.subjectHash ? Buffer.from(d.subjectHash, 'hex') : null,
        destroyedAt: new Date(d.destroyedAt),
        reason: `replayed at restore: ${d.reason}`,
        wrappedEpoch: d.wrappedEpoch,
        leasedUntil: d.leasedUntil ? new Date(d.leasedUntil) : null,
      })),
    );
    await ctx.audit.append(tx, [
      {
        actor: options.actor,
        action: 'backup.restore',
        detail: { backupId, manifestVersion: manifest.version, replayed: replay.length, forced: options.force === true && warnings.length > 0 },
      },
    ]);
    return { imported, replayed: replay.length };
  });

  // the objects, byte for byte (frames of destroyed keys included: nothing opens them)
  let objects = 0;
  for (const o of manifest.objects) {
    const bytes = await ctx.backup.get(o.stored);
    if (sha256Hex(bytes) !== o.sha256) throw new LetheError('validation_failed', `backup object ${o.stored} (${o.key}) does not match its sha256`);
    await ctx.live.put(o.key, bytes);
    objects++;
  }
  // An artifact whose current version's key was destroyed after the backup (an erasure's
  // cascade regenerated it) points at text nothing opens: regenerate it from the
  // restored sources that survive, as the erasure did, or erase it when none does.
  const stale = (
    await queryRows<{ artifact_id: string }>(
      ctx.db,
      sql`select a.artifact_id from artifacts a
           where a.state = 'live' and a.key_id is not null
             and not exists (select 1 from artifact_keys k where k.key_id = a.key_id)`,
    )
  ).map((r) => r.artifact_id);
  let repaired = { regenerated: 0, removed: 0 };
  if (stale.length > 0) {
    const result = await ctx.artifacts.regenerate(stale, { actor: 'restore', reason: 'restore: the version key was destroyed after the backup' });
    repaired = { regenerated: result.regenerated.length, removed: result.removed.length };
  }
  return {
    backupId,
    manifestVersion: manifest.version,
    objects,
    staleArtifacts: stale.length,
    regeneratedArtifacts: repaired.regenerated,
    removedArtifacts: repaired.removed,
    keys: restoredKeyIds.size,
    entries: counts.imported.log_entries,
    artifacts: counts.imported.artifacts,
    destroyedKeys: destroyed.size,
    replayed: counts.replayed,
    ledger: warnings.length > 0 ? 'forced' : 'replayed',
    warnings,
  };
}

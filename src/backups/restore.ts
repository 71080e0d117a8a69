/**
 * Restoring a backup into this vault's database and live bucket, which must both be
 * empty of lethe data. A restore brings no destroyed key back: the backup bucket's
 * ledger chain is verified from its genesis (every stored version of every record
 * read) and replayed first — every key the chain, the manifest or the backup's own
 * ledger rows say was destroyed is left out of the restored key tables (its data,
 * restored byte for byte, stays unreadable) and recorded in the restored ledger.
 * A missing or damaged chain, an edited or older manifest, a chain shorter than the
 * backup knew: refused, naming it; past a missing or damaged chain only when forced
 * — and then it says what it could not guarantee.
 */
import { sql } from 'drizzle-orm';
import { queryRows, type Transaction } from '../db/client.js';
import { isLetheError, LetheError } from '../errors.js';
import type { KeyPurpose } from '../keyprovider/provider.js';
import { zeroize } from '../crypto/index.js';
import { clearForRestore, replayDestructions } from '../vault/restore.js';
import type { Witness } from './anchor.js';
import type { BackupContext } from './context.js';
import { type DatabaseExport, decodeValue, importDatabase, occupiedTables, parseDatabaseExport, snapshotTables } from './database.js';
import { adoptChain } from './ledger-chain.js';
import { type Manifest, readManifest } from './manifest.js';
import { BACKED_UP_PREFIXES, sha256Hex } from './objects.js';
import { type RestoreLedger, restoreLedger } from './restore-ledger.js';
import { type BackupKeyRow, type Carried, carryPlan, carrySurvivors } from './restore-carry.js';
import type { LedgerEntry } from './ledger-record.js';
import { RestoreUndo } from './restore-undo.js';

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
  /**
   * Survivors of forgets made after the backup, brought back under the key their re-keys
   * lead to (`keys`, `entries`); `lost`, per subject: entries no re-key could carry.
   */
  readonly carried: Carried;
  readonly ledger: 'replayed' | 'forced';
  /** What a forced restore could not guarantee, and what was found and worked around in the ledger chain. */
  readonly warnings: string[];
}

export interface RestoreOptions {
  readonly force?: boolean;
  readonly actor: string;
  /** Points of the chain seen elsewhere (`--witness`: certificates, saved heads): the chain must reach each. */
  readonly witnesses?: readonly Witness[];
  /**
   * Resolves once the background work the restore may have set off has ended (the
   * propagation of destructions its regeneration made): awaited before a failed
   * restore puts the target back, so that nothing writes the target after that.
   */
  readonly settle?: () => Promise<void>;
}

export async function restoreBackup(ctx: BackupContext, backupId: string, options: RestoreOptions): Promise<RestoreResult> {
  const manifest = await readManifest(ctx.backup, backupId).catch((e: unknown) => {
    if (isLetheError(e, 'not_found')) throw new LetheError('not_found', `no manifest for backup ${backupId} in the backup bucket`);
    throw e;
  });
  const occupied = await occupiedTables(ctx.db);
  if (occupied.length > 0) throw new LetheError('conflict', `the target database is not empty (${occupied.join(', ')}): restore into a fresh one`);
  for (const prefix of BACKED_UP_PREFIXES) {
    for await (const _ of ctx.live.list(prefix))
      throw new LetheError('conflict', `the target bucket already holds ${prefix} objects: restore into an empty one`);
  }

  const databaseBytes = await ctx.backup.get(manifest.database.key);
  if (sha256Hex(databaseBytes) !== manifest.database.sha256)
    throw new LetheError('validation_failed', "the backup's database export does not match its sha256");
  const dump = parseDatabaseExport(databaseBytes);

  const ledger = await restoreLedger(ctx, backupId, manifest, dump, options);
  const { destroyed, warnings, forced } = ledger;

  // epochs: every epoch a restored key is wrapped under must still be in the key provider
  await refuseInertEpochs(ctx, backupId, dump, destroyed);

  // Nothing was written so far. From here every step can be undone, and a failure puts
  // the target back as it was found (RestoreUndo): the objects go first, then the
  // database in one transaction that saves what the target held before clearing it,
  // then the regeneration of stale artifacts.
  const undo = await RestoreUndo.start(ctx, backupId, options.settle);
  const restoredKeyIds = undo.keyIds;
  // the objects, byte for byte (frames of destroyed keys included: nothing opens them)
  const objects = await undo.step("copying the backup's objects into the live bucket", async () => {
    let copied = 0;
    for (const o of manifest.objects) {
      const bytes = await ctx.backup.get(o.stored);
      if (sha256Hex(bytes) !== o.sha256) throw new LetheError('validation_failed', `backup object ${o.stored} (${o.key}) does not match its sha256`);
      undo.written.add(o.key);
      await ctx.live.put(o.key, bytes);
      copied++;
    }
    return copied;
  });
  const counts = await undo.step('loading the database export', () =>
    ctx.db.transaction((tx) => loadExport(ctx, tx, undo, { backupId, manifest, dump, ledger, actor: options.actor })),
  );

  // An artifact whose current version's key was destroyed after the backup (an erasure's
  // cascade regenerated it) points at text nothing opens: regenerate it from the
  // restored sources that survive, as the erasure did, or erase it when none does.
  const { stale, repaired } = await undo.step('regenerating the artifacts whose version key was destroyed after the backup', () => regenerateStale(ctx));
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
    carried: counts.carried,
    ledger: forced ? 'forced' : 'replayed',
    warnings: [
      ...warnings,
      ...counts.carried.lost.map(
        (l) =>
          `subject ${l.subjectHash.slice(0, 16)}…: ${l.entries} entr${l.entries === 1 ? 'y' : 'ies'} of the backup could not be carried across a later re-key (frames converted into a segment written after the backup)`,
      ),
    ],
  };
}

/**
 * The backup's database, in the restore's one transaction: what the target held saved
 * (`undo`), the tables loaded without the destroyed keys, the destructions the backup's
 * own ledger lacks replayed, the bucket's chain adopted, the restore audited.
 */
async function loadExport(
  ctx: BackupContext,
  tx: Transaction,
  undo: RestoreUndo,
  load: { backupId: string; manifest: Manifest; dump: DatabaseExport; ledger: RestoreLedger; actor: string },
): Promise<{ imported: Awaited<ReturnType<typeof importDatabase>>; replayed: number; carried: Carried }> {
  const { backupId, manifest, dump, actor } = load;
  const { chain, destroyed, knownAtBackup, forced } = load.ledger;
  // every lethe table's rows, put back should a later step fail
  undo.saved = await snapshotTables(tx);
  // a fresh database has its own first epoch and audit rows: the backup's replace them
  await clearForRestore(tx);
  const replaced: BackupKeyRow[] = [];
  const imported = await importDatabase(tx, dump, (table, row) => {
    if (table === 'subject_keys' || table === 'artifact_keys') {
      const keep = !destroyed.has(String(row.keyId));
      if (keep) undo.keyIds.add(String(row.keyId));
      else if (table === 'subject_keys' && destroyed.get(String(row.keyId))?.replacedBy) {
        replaced.push({ keyId: String(row.keyId), subjectHash: row.subjectHash as Uint8Array, nextSeq: Number(row.nextSeq), head: row.head !== false });
      }
      return keep;
    }
    if (table === 'embeddings') return !destroyed.has(String(row.keyId));
    return true;
  });
  // the survivors of re-keys made after the backup, under the key those re-keys lead to (restore-carry.ts)
  const carried = await carrySurvivors(tx, replaced, destroyed);
  for (const k of carried.created) undo.keyIds.add(k.keyId);
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
      replacedBy: d.replacedBy ?? null,
      // durable when the bucket's ledger chain holds it (a manifest's mark alone is written into the chain again)
      durableAt: chain.entries.has(d.keyId) ? new Date() : null,
    })),
  );
  // the restored database continues the bucket's chain; what the chain holds is durable
  await adoptChain(tx, ctx.backup.bucket, chain);
  await ctx.destructions.resetDurable(tx);
  await ctx.destructions.markDurable(tx, [...chain.entries.keys()]);
  await ctx.audit.append(tx, [
    // each key a carry brought back is created here: its row was written by no key creation of this database
    ...carried.created.map((k) => ({
      actor,
      action: 'key.create' as const,
      keyId: k.keyId,
      subjectHash: k.subjectHash,
      epoch: k.epoch,
      detail: { restoredFrom: backupId, replaces: k.replaces },
    })),
    {
      actor,
      action: 'backup.restore',
      detail: { backupId, manifestVersion: manifest.version, replayed: replay.length, forced, carriedKeys: carried.keys, carriedEntries: carried.entries },
    },
  ]);
  return { imported, replayed: replay.length, carried };
}

/** The live artifacts whose current version's key is gone, regenerated from the restored sources (or erased for want of any). */
async function regenerateStale(ctx: BackupContext): Promise<{ stale: string[]; repaired: { regenerated: number; removed: number } }> {
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
  return { stale, repaired };
}

/**
 * Refuses, before anything is written, a backup whose restored keys would be inert.
 * Every epoch a restored key row is wrapped under — subject keys, artifact-version and
 * erasure keys, whichever epoch was active — must still be in the key provider, and be
 * the same KEK: one key of each epoch is unwrapped to prove it (and zeroed at once),
 * because a fresh database starting on this keyring makes a new, different KEK under
 * the number of a retired epoch. Keys the ledger says were destroyed are not restored
 * and not checked. The export's active epoch must be held as well: a restored vault
 * wraps its new keys under it.
 */
async function refuseInertEpochs(ctx: BackupContext, backupId: string, dump: DatabaseExport, destroyed: ReadonlyMap<string, LedgerEntry>): Promise<void> {
  const byEpoch = new Map<number, { keys: number; sample: { keyId: string; wrapped: Uint8Array; purpose: KeyPurpose } }>();
  for (const table of ['subject_keys', 'artifact_keys'] as const) {
    for (const row of dump.tables[table] ?? []) {
      const purpose: KeyPurpose = table === 'subject_keys' ? 'subject' : row.purpose === 'erasure' ? 'erasure' : 'artifact-version';
      // a subject key re-keyed after the backup comes back as the keys its re-keys lead to (a split leads to several): their epochs must be held
      const keys: Array<{ keyId: string; epoch: number; wrappedValue: unknown }> = destroyed.has(String(row.keyId))
        ? table === 'subject_keys'
          ? (carryPlan(String(row.keyId), destroyed)?.finals ?? []).map((f) => ({
              keyId: f.keyId,
              epoch: f.epoch,
              wrappedValue: new Uint8Array(Buffer.from(f.wrappedDek, 'hex')),
            }))
          : []
        : [{ keyId: String(row.keyId), epoch: Number(row.epoch), wrappedValue: row.wrappedDek }];
      for (const { keyId, epoch, wrappedValue } of keys) {
        const seen = byEpoch.get(epoch);
        if (seen) {
          seen.keys++;
          continue;
        }
        const wrapped = wrappedValue instanceof Uint8Array ? wrappedValue : decodeValue(wrappedValue);
        if (!(wrapped instanceof Uint8Array))
          throw new LetheError('validation_failed', `the database export of backup ${backupId} holds no wrapped copy of key ${keyId}`);
        byEpoch.set(epoch, { keys: 1, sample: { keyId, wrapped, purpose } });
      }
    }
  }
  const held = new Set(await ctx.provider.listEpochs());
  const inert: Array<{ epoch: number; keys: number; replaced: boolean }> = [];
  for (const [epoch, { keys, sample }] of [...byEpoch].sort(([a], [b]) => a - b)) {
    if (!held.has(epoch)) {
      inert.push({ epoch, keys, replaced: false });
      continue;
    }
    try {
      zeroize(await ctx.provider.unwrap(epoch, sample.wrapped, sample.keyId, sample.purpose));
    } catch (e) {
      // the key commitment names the KEK: a mismatch is another KEK under the same number
      // (a failed authentication past it is about the wrap's purpose or bytes, not the epoch)
      if (isLetheError(e, 'epoch_unavailable')) inert.push({ epoch, keys, replaced: false });
      else if (isLetheError(e, 'key_commitment_mismatch')) inert.push({ epoch, keys, replaced: true });
      else if (!isLetheError(e, 'decrypt_failed')) throw e;
    }
  }
  const active = dump.tables.epochs.find((e) => e.state === 'active')?.epoch;
  if (typeof active !== 'number') throw new LetheError('validation_failed', `the database export of backup ${backupId} has no active KEK epoch`);
  if (!held.has(active) && !inert.some((i) => i.epoch === active)) inert.push({ epoch: active, keys: 0, replaced: false });
  if (inert.length === 0) return;

  const provider = `the ${ctx.provider.name} key provider`;
  const reasons: string[] = [];
  for (const i of inert) {
    const at = await ctx.provider.destroyedAt(i.epoch);
    const when = !at
      ? `${provider} does not say when it was destroyed`
      : at.getTime() > Date.now()
        ? `a KEK rotation retired it; ${provider} deletes it for good on ${at.toISOString()}`
        : `destroyed ${at.toISOString()}: a KEK rotation retired it`;
    const since = i.replaced ? `; the KEK it holds under that number now is a different one, made since by a fresh database starting on this keyring` : '';
    reasons.push(
      i.keys > 0
        ? `${i.keys} key(s) are wrapped under KEK epoch ${i.epoch}, which ${provider} no longer holds (${when}${since})`
        : `its active KEK epoch ${i.epoch}, under which a restored vault would wrap new keys, is no longer in ${provider} (${when})`,
    );
  }
  const inertKeys = inert.reduce((n, i) => n + i.keys, 0);
  const allKeys = [...byEpoch.values()].reduce((n, e) => n + e.keys, 0);
  throw new LetheError(
    'conflict',
    `backup ${backupId} cannot be restored: ${reasons.join('; ')}. ${inertKeys === allKeys ? 'This backup holds only inert keys' : 'Those keys are inert'}, by design: a KEK rotation followed by the ` +
      "old epoch's retirement makes every copy of the keys wrapped under it — in database dumps and in backups taken before the rotation — undecryptable " +
      "for good; that is how erased subjects' old copies die (crypto-shredding). Nothing was written. Restore a backup taken after the latest rotation, " +
      'and take backups right after each rotation (README, Backups).',
  );
}

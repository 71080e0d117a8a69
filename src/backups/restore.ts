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
import { queryRows } from '../db/client.js';
import { isLetheError, LetheError } from '../errors.js';
import type { KeyPurpose } from '../keyprovider/provider.js';
import { describeError } from '../observability/logger.js';
import { zeroize } from '../crypto/index.js';
import { clearForRestore, replayDestructions } from '../vault/restore.js';
import { restoredLiveConsequence, unanchored, type Witness } from './anchor.js';
import type { BackupContext } from './context.js';
import { type DatabaseExport, decodeValue, importDatabase, occupiedTables, parseDatabaseExport, putBackTables, snapshotTables, type TablesSnapshot } from './database.js';
import { adoptChain, type LedgerEntry, readChain, salvageChain, type VerifiedChain } from './ledger-chain.js';
import { manifestMacState, readManifest } from './manifest.js';
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
    for await (const _ of ctx.live.list(prefix)) throw new LetheError('conflict', `the target bucket already holds ${prefix} objects: restore into an empty one`);
  }

  const databaseBytes = await ctx.backup.get(manifest.database.key);
  if (sha256Hex(databaseBytes) !== manifest.database.sha256) throw new LetheError('validation_failed', 'the backup\'s database export does not match its sha256');
  const dump = parseDatabaseExport(databaseBytes);

  // the ledger: the MAC-chained copy in the backup bucket, verified from its genesis
  // and checked against what the backup knew
  const warnings: string[] = [];
  let forced = false;
  const refuse = (problem: string, consequence: string): void => {
    if (!options.force) {
      throw new LetheError('conflict', `${problem}: refusing to restore, since a key destroyed after this backup could come back. Restore with --force-without-ledger to proceed anyway.`);
    }
    forced = true;
    warnings.push(`${problem}. Proceeding because forced: ${consequence}`);
  };
  const macState = manifestMacState(ctx.ledgerMac, manifest);
  if (macState === 'invalid') {
    throw new LetheError('conflict', `the manifest of backup ${backupId} fails its MAC: it was edited after lethe wrote it (or under another root key); refusing to restore`);
  }
  let chain: VerifiedChain = { present: false, entries: new Map(), manifests: new Map(), macs: new Map(), last: undefined, auditHead: null, notes: [] };
  let damaged = false;
  try {
    chain = await readChain(ctx.backup, ctx.ledgerMac);
  } catch (e) {
    if (!isLetheError(e, 'conflict')) throw e;
    damaged = true;
    refuse(
      `the ledger chain in the backup bucket is damaged: ${e.message}`,
      'every destruction in a ledger record whose MAC still holds is honoured; keys destroyed after this backup and recorded only in a lost or damaged record ARE RESTORED AS LIVE unless the manifest marks them; erase them again.',
    );
    // forced: still honour every record that verifies on its own
    chain = { ...chain, present: true, entries: await salvageChain(ctx.backup, ctx.ledgerMac) };
  }
  warnings.push(...chain.notes);
  // a manifest lethe MAC'd (the chain records it, or it names the record it was taken at) had its MAC removed: edited
  if (macState === 'absent' && (chain.manifests.has(backupId) || manifest.ledgerHead)) {
    throw new LetheError('conflict', `the manifest of backup ${backupId} was written with a MAC, which was removed: it was edited after lethe wrote it; refusing to restore, forced or not`);
  }
  if (macState === 'absent') refuse(`the manifest of backup ${backupId} carries no MAC (written before manifests were MAC'd, or its MAC stripped with the chain record that would show it)`, 'its key states and objects are not authenticated: an edited manifest would be restored as it is.');
  const destroyed = new Map<string, LedgerEntry>(chain.entries);
  const knownAtBackup = dump.tables.destruction_ledger.map((r) => String(r.keyId));
  if (!chain.present) {
    refuse('the ledger chain in the backup bucket is gone (ledger/chain/ holds no genesis)', 'keys destroyed after this backup ARE RESTORED AS LIVE unless the manifest marks them; erase them again.');
  } else if (!damaged) {
    const missing = knownAtBackup.filter((k) => !destroyed.has(k));
    if (missing.length > 0) {
      refuse(`the ledger chain in the backup bucket lacks ${missing.length} destruction(s) the backup itself records`, 'keys destroyed after this backup may be RESTORED AS LIVE; erase them again.');
    }
    const knew = manifest.ledgerHead;
    if (knew && !chain.macs.get(knew.seq)?.includes(knew.mac)) {
      refuse(
        `the ledger chain in the backup bucket is older than this backup: the backup was taken at record ${knew.seq}, which the chain ${chain.macs.has(knew.seq) ? 'holds with another MAC' : 'does not reach'} (rolled back or replaced)`,
        'keys destroyed after this backup may be RESTORED AS LIVE; erase them again.',
      );
    }
    const chained = chain.manifests.get(backupId);
    if (chained !== undefined && manifest.version < chained) {
      refuse(`the manifest of backup ${backupId} is version ${manifest.version}, but the ledger chain records version ${chained}: an older manifest was put back`, 'destructions marked only in the newer manifest are still honoured through the ledger chain.');
    }
  }
  // the manifest's marks and the backup's own ledger rows count as destructions too
  for (const k of manifest.keys) {
    if (k.state === 'destroyed' && !destroyed.has(k.keyId)) {
      destroyed.set(k.keyId, { keyId: k.keyId, keyKind: k.kind, subjectHash: null, destroyedAt: k.destroyedAt ?? manifest.updatedAt, reason: 'manifest', wrappedEpoch: -1, leasedUntil: null });
    }
  }

  // anchored (anchor.ts): an intact prefix verifies on its own, so a tail cut with an older head put back shows only here
  const unanchoredBy = chain.present && !damaged ? await unanchored(ctx, { backupId, manifest, chain, witnesses: options.witnesses ?? [], warnings }) : undefined;
  if (unanchoredBy) refuse(unanchoredBy, restoredLiveConsequence(dump.tables.subject_keys.map((r) => String(r.keyId)).filter((k) => !destroyed.has(k))));

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
  const counts = await undo.step('loading the database export', () => ctx.db.transaction(async (tx) => {
    // every lethe table's rows, put back should a later step fail
    undo.saved = await snapshotTables(tx);
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
        // durable when the bucket's ledger chain holds it (a manifest's mark alone is written into the chain again)
        durableAt: chain.entries.has(d.keyId) ? new Date() : null,
      })),
    );
    // the restored database continues the bucket's chain; what the chain holds is durable
    await adoptChain(tx, ctx.backup.bucket, chain);
    await ctx.destructions.resetDurable(tx);
    await ctx.destructions.markDurable(tx, [...chain.entries.keys()]);
    await ctx.audit.append(tx, [
      {
        actor: options.actor,
        action: 'backup.restore',
        detail: { backupId, manifestVersion: manifest.version, replayed: replay.length, forced },
      },
    ]);
    return { imported, replayed: replay.length };
  }));

  // An artifact whose current version's key was destroyed after the backup (an erasure's
  // cascade regenerated it) points at text nothing opens: regenerate it from the
  // restored sources that survive, as the erasure did, or erase it when none does.
  const { stale, repaired } = await undo.step('regenerating the artifacts whose version key was destroyed after the backup', async () => {
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
  });
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
    ledger: forced ? 'forced' : 'replayed',
    warnings,
  };
}

/** Every object key the bucket lists. */
async function listedKeys(store: BackupContext['live']): Promise<Set<string>> {
  const keys = new Set<string>();
  for await (const o of store.list('')) keys.add(o.key);
  return keys;
}

/**
 * What it takes to put the target back as the restore found it, gathered as the
 * restore goes: the keys the live bucket listed before, the objects the restore put
 * there, the rows the target database held (saved by the import's transaction before
 * it cleared them). `step` runs one step of the restore; when it throws, the target
 * is put back — every lethe table emptied and the saved rows inserted again, every
 * object the bucket did not list before removed — and the error says so.
 */
class RestoreUndo {
  /** Objects this restore put into the live bucket (the last perhaps half-written). */
  readonly written = new Set<string>();
  /** Keys restored live: dropped from the DEK cache when the restore is undone. */
  readonly keyIds = new Set<string>();
  /** Every lethe table's rows before the import cleared them; set inside the import's transaction. */
  saved: TablesSnapshot | undefined;

  private constructor(
    private readonly ctx: BackupContext,
    private readonly backupId: string,
    private readonly listed: ReadonlySet<string>,
    private readonly settle: (() => Promise<void>) | undefined,
  ) {}

  static async start(ctx: BackupContext, backupId: string, settle?: () => Promise<void>): Promise<RestoreUndo> {
    return new RestoreUndo(ctx, backupId, await listedKeys(ctx.live), settle);
  }

  async step<T>(stage: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (e) {
      throw await this.#putBack(stage, e);
    }
  }

  /** Puts the target back; answers the error to throw (the cause's code, or `unavailable` for an unexpected one). */
  async #putBack(stage: string, cause: unknown): Promise<LetheError> {
    const { ctx, backupId } = this;
    const failed = `restore of backup ${backupId} failed while ${stage}: ${describeError(cause).message}`;
    let removed = 0;
    try {
      await this.settle?.();
      // the database first: once its rows are gone nothing points at the objects
      if (this.saved) await putBackTables(ctx.db, this.saved);
      for (const keyId of this.keyIds) ctx.keys.invalidate(keyId);
      const stray = new Set([...this.written, ...(await listedKeys(ctx.live))].filter((k) => !this.listed.has(k)));
      for (const key of stray) {
        await ctx.live.delete(key);
        removed++;
      }
      const left = [...(await listedKeys(ctx.live))].filter((k) => !this.listed.has(k));
      if (left.length > 0) throw new Error(`${left.length} object(s) written by the restore are still in the live bucket`);
    } catch (undoFailed) {
      ctx.logger.error({ backupId, stage, err: describeError(cause), undo: describeError(undoFailed) }, 'restore failed, and putting the target back failed too');
      return new LetheError(
        'internal',
        `${failed}. Putting the target back failed too (${describeError(undoFailed).message}): the target database and live bucket may hold part of the backup — ` +
          'restore into a fresh database and an empty bucket, or empty these first.',
        { cause },
      );
    }
    ctx.logger.warn({ backupId, stage, err: describeError(cause), removedObjects: removed }, 'restore failed; the target was put back as it was found');
    const database = this.saved
      ? `the database holds again exactly the ${this.saved.rows} row(s) it held before (every lethe table emptied and refilled)`
      : 'the database was not changed';
    return new LetheError(
      isLetheError(cause) && cause.code !== 'internal' ? cause.code : 'unavailable',
      `${failed}. The target was left as it was found: ${database}, and the ${removed} object(s) the restore had written into the live bucket were removed.`,
      { cause },
    );
  }
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
async function refuseInertEpochs(ctx: BackupContext, backupId: string, dump: DatabaseExport, destroyed: ReadonlyMap<string, unknown>): Promise<void> {
  const byEpoch = new Map<number, { keys: number; sample: { keyId: string; wrapped: Uint8Array; purpose: KeyPurpose } }>();
  for (const table of ['subject_keys', 'artifact_keys'] as const) {
    for (const row of dump.tables[table] ?? []) {
      const keyId = String(row.keyId);
      if (destroyed.has(keyId)) continue;
      const epoch = Number(row.epoch);
      const seen = byEpoch.get(epoch);
      if (seen) {
        seen.keys++;
        continue;
      }
      const wrapped = decodeValue(row.wrappedDek);
      if (!(wrapped instanceof Uint8Array)) throw new LetheError('validation_failed', `the database export of backup ${backupId} holds no wrapped copy of key ${keyId}`);
      const purpose: KeyPurpose = table === 'subject_keys' ? 'subject' : row.purpose === 'erasure' ? 'erasure' : 'artifact-version';
      byEpoch.set(epoch, { keys: 1, sample: { keyId, wrapped, purpose } });
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

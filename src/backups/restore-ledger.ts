/**
 * What a restore takes as destroyed, before anything is written: the backup bucket's
 * ledger chain verified and checked against what the backup knew and against every
 * witness, the manifest's marks and the backup's own ledger rows. What fails is
 * refused, naming it, or — forced — said in a warning.
 */
import { isLetheError, LetheError } from '../errors.js';
import { restoredLiveConsequence, unanchored, type Witness } from './anchor.js';
import type { BackupContext } from './context.js';
import type { DatabaseExport } from './database.js';
import { type LedgerEntry, readChain, salvageChain, type VerifiedChain } from './ledger-chain.js';
import { type Manifest, manifestMacState } from './manifest.js';

/** What the ledger says a restore must leave out, and what a forced one could not guarantee. */
export interface RestoreLedger {
  readonly chain: VerifiedChain;
  /** Every key the chain, the manifest or the backup's own ledger rows say was destroyed. */
  readonly destroyed: Map<string, LedgerEntry>;
  /** The keys the backup's own ledger rows hold. */
  readonly knownAtBackup: string[];
  readonly warnings: string[];
  readonly forced: boolean;
}

/** Refuses — or, forced, warns about — what the ledger cannot vouch for; answers what the restore leaves out. */
export async function restoreLedger(
  ctx: BackupContext,
  backupId: string,
  manifest: Manifest,
  dump: DatabaseExport,
  options: { readonly force?: boolean; readonly witnesses?: readonly Witness[] },
): Promise<RestoreLedger> {
  // the ledger: the MAC-chained copy in the backup bucket, verified from its genesis
  // and checked against what the backup knew
  const warnings: string[] = [];
  let forced = false;
  const refuse = (problem: string, consequence: string): void => {
    if (!options.force) {
      throw new LetheError(
        'conflict',
        `${problem}: refusing to restore, since a key destroyed after this backup could come back. Restore with --force-without-ledger to proceed anyway.`,
      );
    }
    forced = true;
    warnings.push(`${problem}. Proceeding because forced: ${consequence}`);
  };
  const macState = manifestMacState(ctx.ledgerMac, manifest);
  if (macState === 'invalid') {
    throw new LetheError(
      'conflict',
      `the manifest of backup ${backupId} fails its MAC: it was edited after lethe wrote it (or under another root key); refusing to restore`,
    );
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
    throw new LetheError(
      'conflict',
      `the manifest of backup ${backupId} was written with a MAC, which was removed: it was edited after lethe wrote it; refusing to restore, forced or not`,
    );
  }
  if (macState === 'absent')
    refuse(
      `the manifest of backup ${backupId} carries no MAC (written before manifests were MAC'd, or its MAC stripped with the chain record that would show it)`,
      'its key states and objects are not authenticated: an edited manifest would be restored as it is.',
    );
  const destroyed = new Map<string, LedgerEntry>(chain.entries);
  const knownAtBackup = dump.tables.destruction_ledger.map((r) => String(r.keyId));
  if (!chain.present) {
    refuse(
      'the ledger chain in the backup bucket is gone (ledger/chain/ holds no genesis)',
      'keys destroyed after this backup ARE RESTORED AS LIVE unless the manifest marks them; erase them again.',
    );
  } else if (!damaged) {
    const missing = knownAtBackup.filter((k) => !destroyed.has(k));
    if (missing.length > 0) {
      refuse(
        `the ledger chain in the backup bucket lacks ${missing.length} destruction(s) the backup itself records`,
        'keys destroyed after this backup may be RESTORED AS LIVE; erase them again.',
      );
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
      refuse(
        `the manifest of backup ${backupId} is version ${manifest.version}, but the ledger chain records version ${chained}: an older manifest was put back`,
        'destructions marked only in the newer manifest are still honoured through the ledger chain.',
      );
    }
  }
  // the manifest's marks and the backup's own ledger rows count as destructions too
  for (const k of manifest.keys) {
    if (k.state === 'destroyed' && !destroyed.has(k.keyId)) {
      destroyed.set(k.keyId, {
        keyId: k.keyId,
        keyKind: k.kind,
        subjectHash: null,
        destroyedAt: k.destroyedAt ?? manifest.updatedAt,
        reason: 'manifest',
        wrappedEpoch: -1,
        leasedUntil: null,
      });
    }
  }

  // anchored (anchor.ts): an intact prefix verifies on its own, so a tail cut with an older head put back shows only here
  const unanchoredBy =
    chain.present && !damaged ? await unanchored(ctx, { backupId, manifest, chain, witnesses: options.witnesses ?? [], warnings }) : undefined;
  if (unanchoredBy) refuse(unanchoredBy, restoredLiveConsequence(dump.tables.subject_keys.map((r) => String(r.keyId)).filter((k) => !destroyed.has(k))));
  return { chain, destroyed, knownAtBackup, warnings, forced };
}

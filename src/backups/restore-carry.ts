/**
 * A restore carrying a subject's survivors across the re-keys made after its backup.
 * Forgetting entries re-keys the subject (src/log/rekey.ts): the old key is destroyed,
 * so a backup taken before holds the survivors only under a key no restore brings back.
 * Each re-key's destruction carries its replacement in the ledger chain — the new key
 * wrapped under its epoch, the survivors' record keys wrapped under the new key,
 * ciphertext only — and the restore follows a destroyed key's replacements to the key
 * live at the chain's end: an entry of the backup that every re-key on the way carried
 * comes back under that key (re-indexed from its frame); a forgotten one was left out
 * by the re-key that forgot it and stays gone. A chain that ends in a destruction with
 * no replacement (an erasure of the subject) brings nothing back.
 */
import type { Transaction } from '../db/client.js';
import type { KeyReplacement } from '../db/schema.js';
import { carryEntries, countUnder } from '../log/restore.js';
import { restoreCarriedKey } from '../vault/restore.js';
import type { LedgerEntry } from './ledger-record.js';

/** Where a destroyed key's re-keys lead: the live key at the end, the entries every step carried (their last wrap), those one could not. */
export interface CarryPlan {
  readonly final: KeyReplacement;
  readonly records: ReadonlyMap<string, string>;
  readonly lost: ReadonlySet<string>;
}

/** The plan for `keyId`, or undefined when its chain of replacements does not end at a live key. */
export function carryPlan(keyId: string, destroyed: ReadonlyMap<string, LedgerEntry>): CarryPlan | undefined {
  let entry = destroyed.get(keyId);
  let final: KeyReplacement | undefined;
  let records: Map<string, string> | undefined;
  const lost = new Set<string>();
  const seen = new Set<string>();
  while (entry?.replacedBy && !seen.has(entry.keyId)) {
    seen.add(entry.keyId);
    const step = entry.replacedBy;
    const next = new Map(step.records.map(([id, wrapped]) => [id, wrapped] as [string, string]));
    // an entry comes back only if every re-key on the way carried it: the wrap is the last one's
    records = records === undefined ? next : new Map([...next].filter(([id]) => records!.has(id)));
    for (const id of step.lost) lost.add(id);
    final = step;
    entry = destroyed.get(step.keyId);
  }
  if (!final || !records || entry !== undefined) return undefined;
  return { final, records, lost };
}

/** A subject key row of the backup, as the export holds it. */
export interface BackupKeyRow {
  readonly keyId: string;
  readonly subjectHash: Uint8Array;
  readonly nextSeq: number;
}

export interface Carried {
  /** Keys brought back under the key their re-keys lead to. */
  readonly keys: number;
  /** Entries brought back. */
  readonly entries: number;
  /** Per subject (keyed hash, hex): entries of the backup no replacement could carry (not the forgotten ones). */
  readonly lost: ReadonlyArray<{ readonly subjectHash: string; readonly entries: number }>;
  /** The keys created, each with the backup's key it replaces. */
  readonly created: ReadonlyArray<{ readonly keyId: string; readonly subjectHash: Uint8Array; readonly epoch: number; readonly replaces: string }>;
}

/**
 * In the restore's transaction, after the backup's tables are loaded without the
 * destroyed keys: each destroyed subject key of the backup whose re-keys lead to a live
 * key is replaced by it, its carried entries moved under it and queued for indexing.
 */
export async function carrySurvivors(tx: Transaction, rows: readonly BackupKeyRow[], destroyed: ReadonlyMap<string, LedgerEntry>): Promise<Carried> {
  let keys = 0;
  let entries = 0;
  const lost: Array<{ subjectHash: string; entries: number }> = [];
  const created: Array<{ keyId: string; subjectHash: Uint8Array; epoch: number; replaces: string }> = [];
  for (const row of rows) {
    const plan = carryPlan(row.keyId, destroyed);
    if (!plan) continue;
    const { final } = plan;
    await restoreCarriedKey(tx, {
      keyId: final.keyId,
      subjectHash: row.subjectHash,
      epoch: final.epoch,
      wrappedDek: new Uint8Array(Buffer.from(final.wrappedDek, 'hex')),
      nextSeq: row.nextSeq,
    });
    entries += await carryEntries(tx, row.keyId, final.keyId, plan.records);
    const n = await countUnder(tx, row.keyId, [...plan.lost]);
    keys++;
    created.push({ keyId: final.keyId, subjectHash: row.subjectHash, epoch: final.epoch, replaces: row.keyId });
    if (n > 0) lost.push({ subjectHash: Buffer.from(row.subjectHash).toString('hex'), entries: n });
  }
  return { keys, entries, lost, created };
}

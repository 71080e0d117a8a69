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
import { carryEntries, countUnder } from '../log/restore.js';
import { restoreCarriedKey } from '../vault/restore.js';
import type { LedgerEntry } from './ledger-record.js';

/** A live key a destroyed key's re-keys lead to: its wrap as the ledger carries it, and whether it keeps the head's place. */
export interface CarriedKey {
  readonly keyId: string;
  readonly epoch: number;
  readonly wrappedDek: string;
  /** False for a shard split off on the way; a replacement keeps the place of the key it replaced. */
  readonly head: boolean;
}

/**
 * Where a destroyed key's re-keys lead: the live keys at the ends (a re-key that split
 * its survivors into shards forks the way), each entry every step carried (with its
 * last wrap and the key it ends under), those one could not.
 */
export interface CarryPlan {
  readonly finals: readonly CarriedKey[];
  readonly records: ReadonlyMap<string, { readonly keyId: string; readonly wrapped: string }>;
  readonly lost: ReadonlySet<string>;
}

/** The plan for `keyId`, or undefined when none of its ways of replacements ends at a live key. */
export function carryPlan(keyId: string, destroyed: ReadonlyMap<string, LedgerEntry>, head = true): CarryPlan | undefined {
  const finals: CarriedKey[] = [];
  const records = new Map<string, { keyId: string; wrapped: string }>();
  const lost = new Set<string>();
  const seen = new Set<string>();
  // `ids`: the entries still carried on this way (undefined: all the backup held under the first key)
  const follow = (from: string, ids: ReadonlySet<string> | undefined, place: boolean): void => {
    const step = destroyed.get(from)?.replacedBy;
    if (!step || seen.has(from)) return;
    seen.add(from);
    for (const id of step.lost) lost.add(id);
    const ways = [{ ...step, head: place }, ...(step.shards ?? []).map((x) => ({ ...x, head: false }))];
    for (const way of ways) {
      // an entry comes back only if every re-key on its way carried it: the wrap is the last one's
      const carried = way.records.filter(([id]) => ids === undefined || ids.has(id));
      if (destroyed.has(way.keyId)) {
        follow(way.keyId, new Set(carried.map(([id]) => id)), way.head);
        continue;
      }
      finals.push({ keyId: way.keyId, epoch: way.epoch, wrappedDek: way.wrappedDek, head: way.head });
      for (const [id, wrapped] of carried) records.set(id, { keyId: way.keyId, wrapped });
    }
  };
  follow(keyId, undefined, head);
  return finals.length > 0 ? { finals, records, lost } : undefined;
}

/** A subject key row of the backup, as the export holds it. */
export interface BackupKeyRow {
  readonly keyId: string;
  readonly subjectHash: Uint8Array;
  readonly nextSeq: number;
  /** The backup's head flag (rows from before shards are heads). */
  readonly head: boolean;
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
    const plan = carryPlan(row.keyId, destroyed, row.head);
    if (!plan) continue;
    for (const final of plan.finals) {
      await restoreCarriedKey(tx, {
        keyId: final.keyId,
        subjectHash: row.subjectHash,
        epoch: final.epoch,
        wrappedDek: new Uint8Array(Buffer.from(final.wrappedDek, 'hex')),
        nextSeq: row.nextSeq,
        head: final.head,
      });
      const under = new Map([...plan.records].filter(([, r]) => r.keyId === final.keyId).map(([id, r]) => [id, r.wrapped] as [string, string]));
      entries += await carryEntries(tx, row.keyId, final.keyId, under);
      keys++;
      created.push({ keyId: final.keyId, subjectHash: row.subjectHash, epoch: final.epoch, replaces: row.keyId });
    }
    const n = await countUnder(tx, row.keyId, [...plan.lost]);
    if (n > 0) lost.push({ subjectHash: Buffer.from(row.subjectHash).toString('hex'), entries: n });
  }
  return { keys, entries, lost, created };
}

/**
 * What a restore asks of the vault's tables (src/backups/restore.ts loads the rest):
 * a fresh database's own first epoch and audit rows make way for the backup's, and
 * destructions the backup did not know of are written into the restored ledger
 * before anything reads it. The restore saves those rows (with every other lethe
 * table's, src/backups/database.ts) in the same transaction before clearing them, and
 * puts them back, row for row, when a step after the commit fails.
 */
import { sql } from 'drizzle-orm';
import type { Executor, Transaction } from '../db/client.js';
import { destructionLedger, type LedgerRow, subjectKeys } from '../db/schema.js';

/** Empties the tables a fresh database fills at start-up (epochs, the audit chain), inside the restore's transaction, after it saved their rows. */
export async function clearForRestore(tx: Transaction): Promise<void> {
  await tx.execute(sql`delete from audit_log`);
  await tx.execute(sql`delete from audit_head`);
  await tx.execute(sql`delete from epochs`);
}

/**
 * Writes destructions into the restored ledger; a key already there keeps its row. A
 * replayed row takes the next ledger seq (it is news to every replica), and the seq
 * counter is moved past the rows the restore loaded with theirs.
 */
export async function replayDestructions(tx: Transaction, rows: ReadonlyArray<Omit<LedgerRow, 'seq'>>): Promise<void> {
  await resyncLedgerSeq(tx);
  for (let i = 0; i < rows.length; i += 500) {
    const batch = rows.slice(i, i + 500).map(({ seq: _seq, ...row }: Omit<LedgerRow, 'seq'> & { seq?: number }) => row);
    await tx.insert(destructionLedger).values(batch).onConflictDoNothing();
  }
}

/** Moves the ledger's seq counter past every row (after rows were loaded with their own seq). */
export async function resyncLedgerSeq(tx: Executor): Promise<void> {
  await tx.execute(sql`select setval(pg_get_serial_sequence('destruction_ledger', 'seq'), coalesce((select max(seq) from destruction_ledger), 0) + 1, false)`);
}

/**
 * A subject key a restore carries across the re-keys made after its backup
 * (src/backups/restore-carry.ts): the replacement's wrapped key, live again under the
 * epoch that wrapped it, with the backup's sequence counter.
 */
export async function restoreCarriedKey(
  tx: Transaction,
  key: { keyId: string; subjectHash: Uint8Array; epoch: number; wrappedDek: Uint8Array; nextSeq: number; head: boolean },
): Promise<void> {
  const now = new Date();
  await tx.insert(subjectKeys).values({ ...key, baseSeq: key.nextSeq, state: 'active', createdAt: now, updatedAt: now });
}

/**
 * The destruction ledger's copy in the backup bucket, so that a lost database does not
 * lose which keys were destroyed: one object per destroyed key (ledger/<keyId>.json),
 * written once and never overwritten, naming the key by id and the subject only by its
 * keyed hash. ledger/genesis.json starts the copy and only a backup job writes it, so
 * a copy that was removed reads as missing, not as empty. A restore replays this copy
 * before any key row is written (restore.ts).
 *
 * Rows are claimed in ledger_exports (per bucket) in the same transaction that writes
 * their objects, so two replicas never both write one (the second waits on the first's
 * claim, then skips it), and a failed write releases the claim.
 */
import { sql } from 'drizzle-orm';
import { queryRows } from '../db/client.js';
import { idArrayLiteral } from '../ids.js';
import type { ObjectStore } from '../storage/store.js';
import type { BackupContext } from './context.js';
import { LEDGER_GENESIS_KEY, ledgerObjectKey } from './manifest.js';

/** One destruction as the ledger copy holds it. */
export interface LedgerCopyEntry {
  readonly keyId: string;
  readonly keyKind: string;
  /** The subject's keyed hash (hex), never the subject id. */
  readonly subjectHash: string | null;
  readonly destroyedAt: string;
  readonly reason: string;
  readonly wrappedEpoch: number;
  readonly leasedUntil: string | null;
}

/** Starts the ledger copy if the bucket has none yet; only a backup job calls this. */
export async function startLedgerCopy(store: ObjectStore): Promise<void> {
  if (!(await store.head(LEDGER_GENESIS_KEY))) {
    await store.put(LEDGER_GENESIS_KEY, Buffer.from(JSON.stringify({ format: 'lethe-ledger-copy/1', startedAt: new Date().toISOString() })));
  }
}

/**
 * Copies destruction-ledger rows not yet in this backup bucket there, one object each
 * (only those of `keyIds` when given); returns how many rows this call claimed.
 */
export async function copyLedger(ctx: BackupContext, keyIds?: readonly string[]): Promise<number> {
  const bucket = ctx.backup.bucket;
  const only = keyIds ? sql`and dl.key_id = any(${idArrayLiteral(keyIds)}::text[])` : sql``;
  let total = 0;
  for (;;) {
    const n = await ctx.db.transaction(async (tx) => {
      const rows = await queryRows<{
        key_id: string;
        key_kind: string;
        subject_hash: Uint8Array | null;
        destroyed_at: Date | string;
        reason: string;
        wrapped_epoch: number;
        leased_until: Date | string | null;
      }>(
        tx,
        sql`with candidates as (
              select dl.* from destruction_ledger dl
               where not exists (select 1 from ledger_exports le where le.bucket = ${bucket} and le.key_id = dl.key_id)
               ${only}
               order by dl.destroyed_at, dl.key_id limit 1000),
            claimed as (
              insert into ledger_exports (bucket, key_id, exported_at)
              select ${bucket}, key_id, now() from candidates
              on conflict do nothing
              returning key_id)
            select c.* from candidates c join claimed using (key_id)`,
      );
      for (const r of rows) {
        const key = ledgerObjectKey(r.key_id);
        // append-only: an existing copy is never overwritten
        if (await ctx.backup.head(key)) continue;
        const entry: LedgerCopyEntry = {
          keyId: r.key_id,
          keyKind: r.key_kind,
          subjectHash: r.subject_hash ? Buffer.from(r.subject_hash).toString('hex') : null,
          destroyedAt: new Date(r.destroyed_at).toISOString(),
          reason: r.reason,
          wrappedEpoch: Number(r.wrapped_epoch),
          leasedUntil: r.leased_until ? new Date(r.leased_until).toISOString() : null,
        };
        await ctx.backup.put(key, Buffer.from(JSON.stringify({ format: 'lethe-ledger-entry/1', ...entry })));
      }
      return rows.length;
    });
    // nothing claimed: done, or another replica holds the rest and will write them
    if (n === 0) return total;
    total += n;
  }
}

/** The ledger copy as it stands: whether it was started, and its entries by key id. */
export async function readLedgerCopy(store: ObjectStore): Promise<{ readonly started: boolean; readonly entries: Map<string, LedgerCopyEntry> }> {
  const started = (await store.head(LEDGER_GENESIS_KEY)) !== undefined;
  const entries = new Map<string, LedgerCopyEntry>();
  for await (const o of store.list('ledger/')) {
    if (o.key === LEDGER_GENESIS_KEY) continue;
    const entry = JSON.parse(Buffer.from(await store.get(o.key)).toString('utf8')) as LedgerCopyEntry;
    if (typeof entry.keyId === 'string') entries.set(entry.keyId, entry);
  }
  return { started, entries };
}

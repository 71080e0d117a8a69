/**
 * Propagation: every destruction reaches every manifest that lists the key. A
 * destruction finds its backups through backup_keys (key id → backups), so the cost
 * follows the backups affected, not the number of backups.
 *
 * Durable and idempotent: under the backup row's lock (one writer of a manifest at a
 * time) the new manifest version is stored first and the (key, backup) pairs are
 * recorded in backup_propagations after, so a crash in between only writes the same
 * marks again in one more version. Also the reads of that progress the erasure engine
 * reports (holding, marked, holdingAny), and the coalescing background run.
 */
import { count, countDistinct, eq, inArray, sql } from 'drizzle-orm';
import { queryRows } from '../db/client.js';
import { backupKeys, backupPropagations, backups } from '../db/schema.js';
import { describeError } from '../observability/logger.js';
import type { BackupContext } from './context.js';
import { copyLedger } from './ledger-copy.js';
import { manifestKey, markDestroyed, readManifest } from './manifest.js';

export interface PropagateOptions {
  /** Only the backups holding these keys. */
  readonly keyIds?: readonly string[];
  /** Only these backups. */
  readonly backupIds?: readonly string[];
}

export interface PropagationResult {
  /** Backups a new manifest version was written for. */
  readonly backups: number;
  /** (key, backup) marks written. */
  readonly keys: number;
}

/**
 * Writes a new manifest version for every backup holding a destroyed key not yet
 * marked there. With `keyIds`, only those keys' backups are looked at (through the
 * key id → backups index); with `backupIds`, only those backups; with neither,
 * everything pending (start-up and the periodic catch-up). Also copies new ledger
 * rows into the backup bucket.
 */
export async function propagateDestructions(ctx: BackupContext, options: PropagateOptions = {}): Promise<PropagationResult> {
  const filter = options.keyIds
    ? sql`and bk.key_id in (select json_array_elements_text(${JSON.stringify(options.keyIds)}::json))`
    : options.backupIds
      ? sql`and bk.backup_id in (select json_array_elements_text(${JSON.stringify(options.backupIds)}::json))`
      : sql``;
  const pending = await queryRows<{ backup_id: string; key_id: string; destroyed_at: Date | string }>(
    ctx.db,
    sql`select bk.backup_id, bk.key_id, dl.destroyed_at
          from backup_keys bk
          join destruction_ledger dl on dl.key_id = bk.key_id
         where not exists (select 1 from backup_propagations bp where bp.key_id = bk.key_id and bp.backup_id = bk.backup_id)
         ${filter}
         order by bk.backup_id`,
  );
  const byBackup = new Map<string, Map<string, Date>>();
  for (const p of pending) {
    const m = byBackup.get(p.backup_id) ?? new Map<string, Date>();
    m.set(p.key_id, new Date(p.destroyed_at));
    byBackup.set(p.backup_id, m);
  }
  let keys = 0;
  for (const [backupId, destroyed] of byBackup) {
    await ctx.db.transaction(async (tx) => {
      // one writer of a backup's manifest at a time
      const [row] = await tx.select().from(backups).where(eq(backups.backupId, backupId)).for('update');
      if (!row) return;
      // another propagation may have marked them while we waited for the lock
      const done = await tx
        .select({ keyId: backupPropagations.keyId })
        .from(backupPropagations)
        .where(sql`${backupPropagations.backupId} = ${backupId} and ${backupPropagations.keyId} in (select json_array_elements_text(${JSON.stringify([...destroyed.keys()])}::json))`);
      for (const d of done) destroyed.delete(d.keyId);
      if (destroyed.size === 0) return;
      const current = await readManifest(ctx.backup, backupId);
      const next = markDestroyed(current, destroyed, new Date());
      await ctx.backup.put(manifestKey(backupId), Buffer.from(JSON.stringify(next)));
      await tx.update(backups).set({ manifestVersion: next.version }).where(eq(backups.backupId, backupId));
      const rows = [...destroyed.keys()].map((keyId) => ({ keyId, backupId, manifestVersion: next.version, propagatedAt: new Date() }));
      await tx.insert(backupPropagations).values(rows).onConflictDoNothing();
    });
    keys += destroyed.size;
  }
  // a targeted propagation copies only its own keys' ledger rows (the full scan is the catch-up's)
  await copyLedger(ctx, options.keyIds);
  return { backups: byBackup.size, keys };
}

/** How many backups hold data of the key. */
export async function backupsHolding(ctx: BackupContext, keyId: string): Promise<number> {
  const [r] = await ctx.db.select({ n: count() }).from(backupKeys).where(eq(backupKeys.keyId, keyId));
  return r?.n ?? 0;
}

/** In how many of the backups holding the key its destruction is written into the manifest. */
export async function backupsMarked(ctx: BackupContext, keyId: string): Promise<number> {
  const [r] = await ctx.db.select({ n: count() }).from(backupPropagations).where(eq(backupPropagations.keyId, keyId));
  return r?.n ?? 0;
}

/** How many distinct backups hold data of any of the keys. */
export async function backupsHoldingAny(ctx: BackupContext, keyIds: readonly string[]): Promise<number> {
  if (keyIds.length === 0) return 0;
  const [r] = await ctx.db
    .select({ n: countDistinct(backupKeys.backupId) })
    .from(backupKeys)
    .where(inArray(backupKeys.keyId, [...keyIds]));
  return r?.n ?? 0;
}

/**
 * Propagation in the background: errors are logged, never thrown (the periodic
 * catch-up retries). Calls that arrive while one runs are coalesced into the next
 * run (a cascade destroys one version key per regenerated artifact).
 */
export class PropagationQueue {
  readonly #ctx: BackupContext;
  #keys = new Set<string>();
  #all = false;
  #running: Promise<void> | undefined;

  constructor(ctx: BackupContext) {
    this.#ctx = ctx;
  }

  /** Queues the keys' backups (every pending destruction without `keyIds`) and starts a run unless one is going. */
  add(keyIds?: readonly string[]): void {
    if (keyIds) for (const k of keyIds) this.#keys.add(k);
    else this.#all = true;
    if (this.#running) return;
    this.#running = (async () => {
      while (this.#all || this.#keys.size > 0) {
        const all = this.#all;
        const keys = [...this.#keys];
        this.#all = false;
        this.#keys.clear();
        await propagateDestructions(this.#ctx, all ? {} : { keyIds: keys }).catch((e: unknown) =>
          this.#ctx.logger.warn({ err: describeError(e) }, 'backup manifest propagation failed; the periodic catch-up will retry'),
        );
      }
    })().finally(() => {
      this.#running = undefined;
    });
  }
}

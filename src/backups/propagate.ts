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
import { flushLedger } from './ledger-chain.js';
import { LetheError } from '../errors.js';
import { manifestKey, manifestMacState, markDestroyed, readManifest, sealManifest } from './manifest.js';

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
 * everything pending (start-up and the periodic catch-up). The ledger chain is
 * written first (every destruction not yet in it) and again after the manifests
 * (the manifest versions just written).
 */
export async function propagateDestructions(ctx: BackupContext, options: PropagateOptions = {}): Promise<PropagationResult> {
  // write-ahead: the ledger chain first, whatever state the manifests are in. A propagation of given keys
  // (a destruction's) flushes what is durable nowhere yet; the catch-up over everything, all this bucket lacks
  const everything = !options.keyIds && !options.backupIds;
  await flushLedger(ctx, { everything });
  const filter = options.keyIds
    ? sql`and bk.key_id = any(array(select json_array_elements_text(${JSON.stringify(options.keyIds)}::json)))`
    : options.backupIds
      ? sql`and bk.backup_id in (select json_array_elements_text(${JSON.stringify(options.backupIds)}::json))`
      : sql``;
  // for given keys, each one's ledger row by its primary key (never a join that could read the whole ledger);
  // the catch-up over everything pending is a join, as it reads everything anyway
  const ledger = options.keyIds
    ? sql`cross join lateral (select dl.destroyed_at from destruction_ledger dl where dl.key_id = bk.key_id offset 0) dl`
    : sql`join destruction_ledger dl on dl.key_id = bk.key_id`;
  const pending = await queryRows<{ backup_id: string; key_id: string; destroyed_at: Date | string }>(
    ctx.db,
    sql`select bk.backup_id, bk.key_id, dl.destroyed_at
          from backup_keys bk
          ${ledger}
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
  let written = 0;
  for (const [backupId, destroyed] of byBackup) {
    const marked = await ctx.db.transaction(async (tx) => {
      // one writer of a backup's manifest at a time
      const [row] = await tx.select().from(backups).where(eq(backups.backupId, backupId)).for('update');
      if (!row) return 0;
      // another propagation may have marked them while we waited for the lock
      const done = await tx
        .select({ keyId: backupPropagations.keyId })
        .from(backupPropagations)
        .where(sql`${backupPropagations.backupId} = ${backupId} and ${backupPropagations.keyId} = any(array(select json_array_elements_text(${JSON.stringify([...destroyed.keys()])}::json)))`);
      for (const d of done) destroyed.delete(d.keyId);
      if (destroyed.size === 0) return 0;
      const current = await readManifest(ctx.backup, backupId);
      // never re-seal what someone else wrote: an edited manifest, or an older version put back, would come out MAC'd
      const state = manifestMacState(ctx.ledgerMac, current);
      if (state === 'invalid' || current.version !== row.manifestVersion) {
        throw new LetheError(
          'conflict',
          state === 'invalid'
            ? `the manifest of backup ${backupId} fails its MAC: it was edited in the backup bucket; not writing a new version over it (a restore refuses it; take a new backup)`
            : `the manifest of backup ${backupId} is version ${current.version}, not the version ${row.manifestVersion} lethe wrote last: not writing over it`,
          { retryable: false },
        );
      }
      const next = sealManifest(ctx.ledgerMac, markDestroyed(current, destroyed, new Date()));
      await ctx.backup.put(manifestKey(backupId), Buffer.from(JSON.stringify(next)));
      await tx.update(backups).set({ manifestVersion: next.version }).where(eq(backups.backupId, backupId));
      const rows = [...destroyed.keys()].map((keyId) => ({ keyId, backupId, manifestVersion: next.version, propagatedAt: new Date() }));
      await tx.insert(backupPropagations).values(rows).onConflictDoNothing();
      return destroyed.size;
    });
    // another propagation may have written them meanwhile: counted there
    if (marked > 0) written++;
    keys += marked;
  }
  // the ledger chain records the manifest versions just written (and any destruction still pending)
  await flushLedger(ctx, { everything });
  return { backups: written, keys };
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

/** Backoff between background retries after a failed write: doubling from 1 s to 60 s. */
const RETRY_MIN_MS = 1000;
const RETRY_MAX_MS = 60_000;

/**
 * Propagation in the background: errors are logged, never thrown. Calls that arrive
 * while one runs are coalesced into the next run (a cascade destroys one version key
 * per regenerated artifact). A failed run is retried with backoff (1 s doubling to
 * 60 s) until it succeeds: a destruction stays pending only while the backup store
 * cannot be written.
 */
export class PropagationQueue {
  readonly #ctx: BackupContext;
  #keys = new Set<string>();
  #all = false;
  #running: Promise<void> | undefined;
  #retry: NodeJS.Timeout | undefined;
  #backoff = RETRY_MIN_MS;
  #closed = false;

  constructor(ctx: BackupContext) {
    this.#ctx = ctx;
  }

  /** Queues the keys' backups (every pending destruction without `keyIds`) and starts a run unless one is going. */
  add(keyIds?: readonly string[]): void {
    if (this.#closed) return;
    if (keyIds) for (const k of keyIds) this.#keys.add(k);
    else this.#all = true;
    if (this.#running) return;
    // new work is tried at once (a waiting retry joins it); the backoff keeps growing while runs fail
    if (this.#retry) {
      clearTimeout(this.#retry);
      this.#retry = undefined;
    }
    this.#running = (async () => {
      while (this.#all || this.#keys.size > 0) {
        const all = this.#all;
        const keys = [...this.#keys];
        this.#all = false;
        this.#keys.clear();
        try {
          await propagateDestructions(this.#ctx, all ? {} : { keyIds: keys });
          this.#backoff = RETRY_MIN_MS;
          // a run that succeeds after failures catches up on everything (the failed runs' work included)
        } catch (e) {
          // put the work back and try again later, with backoff
          if (all) this.#all = true;
          for (const k of keys) this.#keys.add(k);
          this.#ctx.logger.warn({ err: describeError(e), retryInMs: this.#backoff }, 'backup ledger or manifest write failed; retrying');
          this.#scheduleRetry();
          return;
        }
      }
    })().finally(() => {
      this.#running = undefined;
    });
  }

  /** Stops retrying (the service is closing). */
  close(): void {
    this.#closed = true;
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = undefined;
  }

  /** Resolves once the run in progress (if any) ends. */
  async idle(): Promise<void> {
    await this.#running;
  }

  #scheduleRetry(): void {
    if (this.#closed || this.#retry) return;
    const delay = this.#backoff;
    this.#backoff = Math.min(this.#backoff * 2, RETRY_MAX_MS);
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      // the retry carries the queued work (or everything pending)
      if (!this.#all && this.#keys.size === 0) this.#all = true;
      const keys = [...this.#keys];
      this.#keys.clear();
      this.add(this.#all ? undefined : keys);
    }, delay);
    this.#retry.unref();
  }
}

/**
 * Propagation: every destruction reaches every backup that holds the key, without
 * touching the backups one by one. A backup's manifest is written once, when the
 * backup is taken (its base: retained under Object Lock when the bucket allows it),
 * and never rewritten; the destructions after it reach it through the backup
 * bucket's ledger chain — an append-only, MAC'd overlay every backup in the bucket
 * shares, which `verify`, `restore` and `GET /v1/backups/{id}/manifest` fold into the
 * base. So propagating a destruction writes one chain record (up to 1,000
 * destructions each) and the head — a constant number of objects of a size that
 * follows the destructions, not the backups holding them nor their manifests.
 *
 * A backup has learned of a destruction once the chain record holding it is stored
 * in the backup's bucket (`ledger_exports` names the record, `ledger_chain.stored_at`
 * says it is stored): that is what `backupsMarked` counts and what the folded
 * manifest marks. Also the reads of that progress the erasure engine reports
 * (holding, marked, holdingAny, unmarkedAny), and the coalescing background run.
 */
import { count, eq, sql } from 'drizzle-orm';
import { type Executor, queryRows } from '../db/client.js';
import { backupKeys } from '../db/schema.js';
import { describeError } from '../observability/logger.js';
import type { BackupContext } from './context.js';
import { flushLedger } from './ledger-chain.js';

export interface PropagateOptions {
  /** The destructions of these keys (those durable nowhere yet are flushed; the catch-up without it takes everything the chain lacks). */
  readonly keyIds?: readonly string[];
}

export interface PropagationResult {
  /** Ledger chain records written now. */
  readonly records: number;
  /** Destructions the chain records written now hold. */
  readonly keys: number;
  /** Backups holding those keys: each learned of them through the chain, with no write of its own. */
  readonly backups: number;
}

/**
 * Writes every destruction not yet in the backup bucket's ledger chain there (with
 * `keyIds`, a destruction's own flush: those durable in no chain yet, whatever the
 * ledger's size; without, the catch-up: everything this bucket's chain lacks) and
 * answers how many backups hold the keys that became durable. No manifest is written.
 */
export async function propagateDestructions(ctx: BackupContext, options: PropagateOptions = {}): Promise<PropagationResult> {
  const { records, durable } = await flushLedger(ctx, { everything: !options.keyIds });
  return { records, keys: durable.length, backups: await backupsHoldingAny(ctx, durable) };
}

/**
 * The destructions the backup bucket's stored chain holds among the keys `backupId`
 * lists, with when each key was destroyed and the record that holds it: what the
 * backup has learned since its manifest was written (the overlay folded into it).
 */
export async function chainedDestructions(db: Executor, bucket: string, backupId: string): Promise<Map<string, { destroyedAt: Date; seq: number }>> {
  const rows = await queryRows<{ key_id: string; destroyed_at: Date | string; chain_seq: number | string }>(
    db,
    sql`select bk.key_id, dl.destroyed_at, le.chain_seq
          from backup_keys bk
          join ledger_exports le on le.bucket = ${bucket} and le.key_id = bk.key_id
          join ledger_chain lc on lc.bucket = le.bucket and lc.seq = le.chain_seq and lc.stored_at is not null
          join destruction_ledger dl on dl.key_id = bk.key_id
         where bk.backup_id = ${backupId}`,
  );
  return new Map(rows.map((r) => [r.key_id, { destroyedAt: new Date(r.destroyed_at), seq: Number(r.chain_seq) }]));
}

/** How many backups hold data of the key. */
export async function backupsHolding(ctx: BackupContext, keyId: string): Promise<number> {
  const [r] = await ctx.db.select({ n: count() }).from(backupKeys).where(eq(backupKeys.keyId, keyId));
  return r?.n ?? 0;
}

/**
 * Of the backups holding the key, how many have learned of its destruction: all of
 * them once a record of the backup bucket's chain holding it is stored, none before.
 */
export async function backupsMarked(ctx: BackupContext, keyId: string): Promise<number> {
  const [chained] = await queryRows<{ n: number | string }>(
    ctx.db,
    sql`select count(*) as n from ledger_exports le
          join ledger_chain lc on lc.bucket = le.bucket and lc.seq = le.chain_seq and lc.stored_at is not null
         where le.bucket = ${ctx.backup.bucket} and le.key_id = ${keyId}`,
  );
  return Number(chained?.n ?? 0) > 0 ? backupsHolding(ctx, keyId) : 0;
}

/** How many distinct backups hold data of any of the keys. */
export async function backupsHoldingAny(ctx: BackupContext, keyIds: readonly string[]): Promise<number> {
  if (keyIds.length === 0) return 0;
  // a json array, not one parameter per key: a catch-up can flush tens of thousands
  const [r] = await queryRows<{ n: number | string }>(
    ctx.db,
    sql`select count(distinct backup_id) as n from backup_keys
         where key_id = any(array(select json_array_elements_text(${JSON.stringify(keyIds)}::json)))`,
  );
  return Number(r?.n ?? 0);
}

/** How many distinct backups hold data of any of the keys whose destruction no stored record of the bucket's chain holds yet (destroyed or not). */
export async function backupsUnmarkedAny(ctx: BackupContext, keyIds: readonly string[]): Promise<number> {
  if (keyIds.length === 0) return 0;
  const [r] = await queryRows<{ n: number | string }>(
    ctx.db,
    sql`select count(distinct bk.backup_id) as n from backup_keys bk
         where bk.key_id = any(array(select json_array_elements_text(${JSON.stringify([...new Set(keyIds)])}::json)))
           and not exists (select 1 from ledger_exports le
                             join ledger_chain lc on lc.bucket = le.bucket and lc.seq = le.chain_seq and lc.stored_at is not null
                            where le.bucket = ${ctx.backup.bucket} and le.key_id = bk.key_id)`,
  );
  return Number(r?.n ?? 0);
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
          this.#ctx.logger.warn({ err: describeError(e), retryInMs: this.#backoff }, 'backup ledger write failed; retrying');
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

/**
 * The destruction cursor: how a replica knows it has applied every key destruction,
 * whether or not it heard the notification. Each pass reads the destruction ledger
 * past the cursor (`seq > cursor`, one indexed query) and hands the destroyed key ids
 * to `apply` (drop them from the DEK cache and the indexes; idempotent).
 *
 * `destruction_ledger.seq` is a bigserial: a destruction can take its number, and
 * another commit a higher one, before the first commits. So the cursor never skips a
 * number it has not seen: every number below the highest read that was not there is
 * a gap, read again on every pass until it shows up or GAP_MS passed (a rolled-back
 * destruction leaves a number that never commits). `applied` is the highest seq at
 * or below which every destruction was applied (or its gap given up on).
 */
import { sql } from 'drizzle-orm';
import { type Database, queryRows } from '../db/client.js';

/** How long a gap in the ledger's numbers is read again before it counts as a rolled-back destruction. */
export const GAP_MS = 30_000;
/** How many numbers below the highest read are tracked as gaps (a wider jump is a restore moving the sequence on). */
const GAP_SPAN = 1000;
const PAGE = 5000;

export class DestructionCursor {
  readonly #db: Database;
  readonly #apply: (keyIds: readonly string[]) => void;
  readonly #now: () => number;
  #cursor = 0;
  /** seq → when it was first seen missing. */
  readonly #gaps = new Map<number, number>();
  #running: Promise<number> | undefined;

  constructor(deps: { db: Database; apply: (keyIds: readonly string[]) => void; now?: () => number }) {
    this.#db = deps.db;
    this.#apply = deps.apply;
    this.#now = deps.now ?? Date.now;
  }

  /** Every destruction at or below this seq was applied here. */
  get applied(): number {
    let low = this.#cursor;
    for (const seq of this.#gaps.keys()) low = Math.min(low, seq - 1);
    return low;
  }

  /**
   * Starts at the ledger's end: what was destroyed before is never loaded (a rebuild
   * opens only live keys, and the DEK cache starts empty). Call before listening and
   * before the first rebuild.
   */
  async start(): Promise<void> {
    const [row] = await queryRows<{ seq: string | number | null }>(this.#db, sql`select max(seq) as seq from destruction_ledger`);
    this.#cursor = Number(row?.seq ?? 0);
  }

  /** Reads the ledger past the cursor (and the open gaps) and applies what it finds; answers how many destructions. One pass at a time. */
  catchUp(): Promise<number> {
    this.#running ??= this.#pass().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #pass(): Promise<number> {
    let applied = 0;
    for (;;) {
      const gaps = [...this.#gaps.keys()];
      const rows = await queryRows<{ seq: string | number; key_id: string }>(
        this.#db,
        sql`select seq, key_id from destruction_ledger
             where seq > ${this.#cursor}${gaps.length ? sql` or seq = any(${`{${gaps.join(',')}}`}::bigint[])` : sql``}
             order by seq limit ${PAGE}`,
      );
      if (rows.length === 0) break;
      const seen = new Set<number>();
      for (const r of rows) seen.add(Number(r.seq));
      this.#apply(rows.map((r) => r.key_id));
      applied += rows.length;
      for (const seq of seen) this.#gaps.delete(seq);
      const highest = Math.max(this.#cursor, ...seen);
      const now = this.#now();
      for (let seq = Math.max(this.#cursor + 1, highest - GAP_SPAN); seq < highest; seq++) if (!seen.has(seq)) this.#gaps.set(seq, now);
      this.#cursor = highest;
      if (rows.length < PAGE) break;
    }
    const now = this.#now();
    for (const [seq, since] of this.#gaps) if (now - since > GAP_MS) this.#gaps.delete(seq);
    return applied;
  }
}

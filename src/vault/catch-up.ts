/**
 * The destruction cursor: how a replica knows it has applied every key destruction,
 * whether or not it heard the notification. Each pass reads the destruction ledger
 * past the cursor (`seq > cursor`, one indexed query) and hands the destroyed key ids
 * to `apply` (drop them from the DEK cache and the indexes; idempotent).
 *
 * `destruction_ledger.seq` is a bigserial: a destruction can take its number, and
 * another commit a higher one, before the first commits. So the cursor never skips a
 * number it has not seen: every number below the highest read that was not there is
 * a gap, read again on every pass until it shows up — or until every transaction that
 * could still commit it has ended (a rolled-back destruction leaves a number that
 * never commits). That is decided by transaction visibility, never by a timer: a gap
 * records the xmax of the first snapshot taken after it was seen missing (the number
 * was handed out before that, and its holder's transaction id assigned with it), and
 * is given up only once the oldest running transaction (snapshot xmin) is past it, and
 * a read after that still does not find the row. `applied` is the highest seq at or
 * below which every destruction was applied (or its number proven never to commit).
 */
import { sql } from 'drizzle-orm';
import { type Database, queryRows } from '../db/client.js';

/** How many numbers below the highest read are tracked as gaps (a wider jump is a restore moving the sequence on: its numbers were all committed or rolled back long ago). */
const GAP_SPAN = 100_000;
const PAGE = 5000;

interface Gap {
  /** The xmax of a snapshot taken after the number was seen missing; set on the pass after. */
  xmaxAfter: bigint | undefined;
}

export class DestructionCursor {
  readonly #db: Database;
  readonly #apply: (keyIds: readonly string[]) => void | Promise<void>;
  #cursor = 0;
  readonly #gaps = new Map<number, Gap>();
  #running: Promise<number> | undefined;
  #lastPassStartedAt: number | undefined;

  constructor(deps: { db: Database; apply: (keyIds: readonly string[]) => void | Promise<void> }) {
    this.#db = deps.db;
    this.#apply = deps.apply;
  }

  /** When the last completed pass started (before its first read): what it applied is everything committed by then. */
  get lastPassStartedAt(): number | undefined {
    return this.#lastPassStartedAt;
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
    // a destruction that took its number below the end and has not committed yet is a gap from the start
    const below = await queryRows<{ seq: string | number }>(
      this.#db,
      sql`select seq from destruction_ledger where seq > ${Math.max(0, this.#cursor - GAP_SPAN)} and seq <= ${this.#cursor}`,
    );
    this.#markGaps(Math.max(0, this.#cursor - GAP_SPAN), this.#cursor, new Set(below.map((r) => Number(r.seq))));
  }

  /** Reads the ledger past the cursor (and the open gaps) and applies what it finds; answers how many destructions. One pass at a time. */
  catchUp(): Promise<number> {
    this.#running ??= this.#pass().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #pass(): Promise<number> {
    const startedAt = Date.now();
    // the gaps every transaction that could commit them has ended since they were seen missing
    let settled: number[] = [];
    if (this.#gaps.size > 0) {
      const [snap] = await queryRows<{ xmin: string; xmax: string }>(
        this.#db,
        sql`select pg_snapshot_xmin(s)::text as xmin, pg_snapshot_xmax(s)::text as xmax from (select pg_current_snapshot() as s) t`,
      );
      const xmin = BigInt(snap!.xmin);
      const xmax = BigInt(snap!.xmax);
      for (const [seq, gap] of this.#gaps) {
        if (gap.xmaxAfter === undefined) gap.xmaxAfter = xmax;
        else if (xmin >= gap.xmaxAfter) settled.push(seq);
      }
    }
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
      // the cursor moves past these only once they are applied (a failed apply fails the pass: read again next time)
      await this.#apply(rows.map((r) => r.key_id));
      applied += rows.length;
      for (const seq of seen) this.#gaps.delete(seq);
      const highest = Math.max(this.#cursor, ...seen);
      this.#markGaps(Math.max(this.#cursor, highest - GAP_SPAN), highest, seen);
      this.#cursor = highest;
      if (rows.length < PAGE) break;
    }
    // read after their holders ended and still missing: rolled back, never to commit
    settled = settled.filter((seq) => this.#gaps.has(seq));
    for (const seq of settled) this.#gaps.delete(seq);
    this.#lastPassStartedAt = startedAt;
    return applied;
  }

  /** Every number in (from, to) not in `seen` becomes a gap (one already known keeps its state). */
  #markGaps(from: number, to: number, seen: ReadonlySet<number>): void {
    for (let seq = from + 1; seq < to; seq++) if (!seen.has(seq) && !this.#gaps.has(seq)) this.#gaps.set(seq, { xmaxAfter: undefined });
  }
}

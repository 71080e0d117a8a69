/**
 * Planner statistics on the embedded database. PostgreSQL's autovacuum ANALYZEs a
 * table once enough of it has changed; PGlite runs PostgreSQL in this one process
 * with no background workers, so nothing ever does (`autovacuum` reads `on`, no
 * launcher runs), and a table keeps the statistics — or the lack of them — it had when
 * it was small. Without statistics the planner guesses: an `= $1` on a column matches
 * 0.5% of the table, a list of ids a hundred rows, a range a third of it; on a table
 * that has grown, those guesses pick sequential scans and hash joins that read it whole
 * (docs/performance.md, "Erasure on every backend").
 *
 * `analyzeStale` does autovacuum's analyze part, by its rule: a table is analyzed once
 * the rows changed since its last ANALYZE pass 50 + 10% of its rows
 * (`autovacuum_analyze_threshold`, `autovacuum_analyze_scale_factor`), or when it was
 * never analyzed and holds more than 50. PGlite keeps no cumulative statistics across a
 * restart (the change counts start again from 0 at every open), so a table whose size
 * grew past the same threshold since its last ANALYZE (`pg_class.relpages`, kept in the
 * catalog) is due too. ANALYZE reads a sample of at most 30,000 rows a table
 * (`default_statistics_target` 100), so its cost stops growing with the table.
 * The app runs it after the migrations and then every `STATISTICS_INTERVAL_MS` while
 * it serves; on PostgreSQL autovacuum does it and this is never run.
 */
import { sql } from 'drizzle-orm';
import { type Database, queryRows } from './client.js';

/** How often a serving embedded database looks for tables to analyze (autovacuum's naptime). */
export const STATISTICS_INTERVAL_MS = 60_000;

const THRESHOLD = 50;
const SCALE = 0.1;
/** Pages a table may grow past its analyzed size before its statistics are stale (with SCALE). */
const PAGE_THRESHOLD = 8;

export interface Analyzed {
  readonly table: string;
  /** Its rows as the new statistics estimate them. */
  readonly rows: number;
  readonly ms: number;
}

/** ANALYZEs every table of the public schema whose changes (or growth in pages) since its last ANALYZE pass autovacuum's threshold. */
export async function analyzeStale(db: Database): Promise<Analyzed[]> {
  // this backend's latest counts reach the statistics it reads (they are flushed at most once a second otherwise)
  await db.execute(sql`select pg_stat_force_next_flush()`);
  const tables = await queryRows<{
    relname: string;
    changed: string | number;
    live: string | number;
    reltuples: string | number;
    relpages: string | number;
    pages: string | number;
  }>(
    db,
    sql`select s.relname, s.n_mod_since_analyze as changed, s.n_live_tup as live, c.reltuples, c.relpages, pg_relation_size(c.oid) / 8192 as pages
          from pg_stat_user_tables s join pg_class c on c.oid = s.relid
         where s.schemaname = 'public'
         order by s.relname`,
  );
  const out: Analyzed[] = [];
  for (const t of tables) {
    const analyzedRows = Number(t.reltuples);
    const live = Number(t.live);
    const pages = Number(t.pages);
    const due =
      analyzedRows < 0
        ? // never analyzed: due once it holds more than the threshold (or more than a few pages: the counts start at 0 at every open)
          live > THRESHOLD || Number(t.changed) > THRESHOLD || pages > PAGE_THRESHOLD
        : Number(t.changed) > THRESHOLD + SCALE * analyzedRows || pages > PAGE_THRESHOLD + (1 + SCALE) * Number(t.relpages);
    if (!due) continue;
    const started = performance.now();
    await db.execute(sql`analyze ${sql.identifier(t.relname)}`);
    const ms = performance.now() - started;
    const [after] = await queryRows<{ n: string | number }>(
      db,
      sql`select reltuples as n from pg_class where relname = ${t.relname} and relnamespace = 'public'::regnamespace`,
    );
    out.push({ table: t.relname, rows: Math.max(0, Math.round(Number(after?.n ?? 0))), ms });
  }
  return out;
}

/**
 * The embedded database's statistics keeper: `analyzeStale` now and then every
 * `intervalMs` (one pass at a time), each pass logged with what it analyzed and how
 * long it took; a pass that fails is logged and the next one tries again. Nothing to
 * do on PostgreSQL (autovacuum).
 */
export class StatisticsKeeper {
  readonly #db: Database;
  readonly #log: (fields: Record<string, unknown>, message: string) => void;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;

  constructor(db: Database, log: (fields: Record<string, unknown>, message: string) => void) {
    this.#db = db;
    this.#log = log;
  }

  /** One pass (joins the one running). */
  pass(): Promise<void> {
    this.#running ??= (async () => {
      const started = performance.now();
      try {
        const analyzed = await analyzeStale(this.#db);
        if (analyzed.length > 0) {
          this.#log(
            { analyzed: analyzed.map((a) => `${a.table} (${a.rows} rows, ${Math.round(a.ms)} ms)`), ms: Math.round(performance.now() - started) },
            'planner statistics refreshed',
          );
        }
      } catch (e) {
        this.#log({ err: (e as Error).message }, 'planner statistics: a pass failed (the next one tries again)');
      } finally {
        this.#running = undefined;
      }
    })();
    return this.#running;
  }

  start(intervalMs = STATISTICS_INTERVAL_MS): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.pass(), intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }
}

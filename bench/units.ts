/**
 * Per-unit storage and CPU costs, measured on real PostgreSQL and a real MinIO: the
 * inputs of the scale plan (bench/scale.ts, docs/scale.md). What one subject key, one
 * log entry, one artifact and one provenance edge cost in PostgreSQL and in the object
 * store, and the in-process writer's CPU per append.
 *
 *   setup     a MinIO server started here (infra/minio-server.ts), a fresh lethe_bench_*
 *             database, the vault opened in this process with openApp on a fresh live
 *             bucket (S3_BUCKET) and `listen: false` (as bench/backup.ts does).
 *   fill      in two steps, the second growing the same store to the larger size:
 *             step A to BENCH_UNITS_SMALL entries (default 1,500; 10,000 with BENCH_FULL=1; 400 when quick), step B
 *             to BENCH_UNITS_LARGE (default 4,000; 50,000 with BENCH_FULL=1; 1,200 when quick); 10 entries per
 *             subject. Each step has three phases, in order: the step's subjects' keys
 *             (vault.keys.ensureKeys), their entries (vault.log.append, 16 in flight; one
 *             segment object per entry, as the HTTP append writes them; the texts are
 *             bench/search.ts's generated ~200-character sentences, so the sealed
 *             embedding and keyed-shingle set beside it are those of real prose), then one
 *             artifact per 10 entries (vault.artifacts.write, 8 in flight; a ~1 KB summary
 *             citing 5 of the step's entries: 5 provenance edges each).
 *   rows      exact row counts (count(*)) of every table in the public schema at each
 *             phase boundary: the rows each phase adds, per table, give how many rows of
 *             each table one subject, entry or artifact adds.
 *   bytes     at the end of each step, VACUUM ANALYZE, then pg_total_relation_size (heap
 *             + indexes + TOAST) of every table. Bytes per row of a table = its growth
 *             from step A to step B ÷ its rows' growth (the slope: fixed overhead and
 *             the 8 KiB page granularity of a small table cancel out); the whole-table
 *             figure (bytes ÷ rows) at each size is reported beside it. Bytes per unit =
 *             Σ over tables of (rows per unit × bytes per row).
 *             Last, VACUUM FULL of the large store: bytes ÷ rows again, "packed" (heap
 *             rewritten, indexes rebuilt at their fill factor): the rows' footprint without
 *             the free space that concurrent inserts (relation extension in bulk) and B-tree
 *             page splits on random ids leave. At these small sizes that free space is a
 *             large, noisy share of the slope; the scale plan quotes both as a range.
 *   objects   the live bucket listed with the minio client at the end of each step: the
 *             logical object bytes under log/ and artifacts/ (S3 sizes) per entry and per
 *             artifact, at each size and as the slope; also the bytes MinIO's own files
 *             take on disk for that bucket (single drive, no erasure coding: the sum of
 *             file sizes under <data dir>/<bucket>).
 *   erasure   after that, ERASED (3) of the subjects erased in-process one at a time
 *             (vault.erasures.request, then settle, which runs it here): the database's
 *             commits per erasure, from pg_stat_database.xact_commit of the scratch database
 *             over that window less an idle window of the same length (statistics are
 *             flushed by idle backends within about a second: each reading waits 1.5 s).
 *             What the scale plan divides the measured commit ceiling by.
 *   cpu       process.cpuUsage() (user + system) of this process over each phase ÷ its
 *             units: the IN-PROCESS WRITER PATH (vault.log.append: key lookup, seal,
 *             embedding and shingles sealed, the segment PUT, the index insert). It
 *             excludes PostgreSQL's and MinIO's own CPU (other processes) and is not the
 *             LetheWriter client path (bench/append.ts measures that one end to end).
 */
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { loadConfig } from '../src/config/index.js';
import { createLogger } from '../src/observability/logger.js';
import { openApp, type App } from '../src/app/open.js';
import { byMode, envInt } from './support/mode.js';
import { cleanup, openScratch, randomRootKey, type Scratch } from './support/scratch.js';
import { cpuSeconds, pool, runIfMain, sleep } from './support/process.js';
import { listObjects, minioClient } from './support/minio.js';
import { fmtInt, fmtNum, fmtSeconds, median, progress, table } from './support/report.js';
import { sentences } from './search.js';

const ENTRIES_PER_SUBJECT = 10;
const ENTRIES_PER_ARTIFACT = 10;
const SOURCES_PER_ARTIFACT = 5;
const APPEND_IN_FLIGHT = 16;
const ARTIFACT_IN_FLIGHT = 8;

export type Unit = 'subject' | 'entry' | 'artifact';

export interface TableSize {
  readonly table: string;
  readonly rows: number;
  /** pg_total_relation_size: heap + indexes + TOAST. */
  readonly totalBytes: number;
  readonly heapBytes: number;
  readonly indexBytes: number;
  readonly toastBytes: number;
}

export interface SizePoint {
  readonly label: string;
  readonly subjects: number;
  readonly entries: number;
  readonly artifacts: number;
  readonly edges: number;
  /** After VACUUM ANALYZE. */
  readonly tables: TableSize[];
  readonly databaseBytes: number;
  readonly objects: {
    readonly log: { count: number; bytes: number };
    readonly artifacts: { count: number; bytes: number };
    readonly other: { count: number; bytes: number };
  };
  /** Sum of file sizes under MinIO's <data dir>/<bucket> (single drive). */
  readonly minioDiskBytes: number;
}

export interface PhaseCost {
  readonly unit: Unit;
  readonly step: 'A' | 'B';
  readonly units: number;
  readonly seconds: number;
  readonly cpuSeconds: number;
  /** Rows added per table (only tables whose count changed). */
  readonly rowsAdded: Record<string, number>;
}

export interface TableSlope {
  readonly table: string;
  /** (bytes at B − bytes at A) ÷ (rows at B − rows at A); null when the row count did not change. */
  readonly bytesPerRow: number | null;
  readonly bytesPerRowAtSmall: number | null;
  readonly bytesPerRowAtLarge: number | null;
  /** After VACUUM FULL at the large size (heap rewritten packed, indexes rebuilt): bytes ÷ rows. */
  readonly bytesPerRowPacked: number | null;
  /** Rows of this table added per unit in step B (the slope) and in step A. */
  readonly rowsPer: Record<Unit, number>;
  readonly rowsPerAtSmall: Record<Unit, number>;
}

export interface UnitFigure {
  readonly unit: Unit | 'edge';
  /** Slope (step B): Σ rows per unit × bytes per row (for an artifact, the provenance table left out: see `edge`). */
  readonly pgBytes: number;
  /** Whole-store figures at each size (fixed overhead included). */
  readonly pgBytesAtSmall: number;
  readonly pgBytesAtLarge: number;
  /** Σ rows per unit × packed bytes per row (VACUUM FULL at the large size): the footprint without free space. */
  readonly pgBytesPacked: number;
  /** Tables that make up the slope figure, bytes per unit each. */
  readonly pgTables: Array<{ readonly table: string; readonly rowsPerUnit: number; readonly bytesPerUnit: number }>;
  /** Logical object bytes per unit (S3 sizes), slope and at each size; null for units with no object. */
  readonly objectBytes: number | null;
  readonly objectBytesAtSmall: number | null;
  readonly objectBytesAtLarge: number | null;
  /** Objects per unit (slope). */
  readonly objectsPerUnit: number | null;
  /** MinIO's on-disk bytes per unit (slope), the bucket's files. */
  readonly diskBytes: number | null;
  /** CPU seconds of this process per unit (slope: step B), and wall seconds per unit with the stated concurrency. */
  readonly cpuSeconds: number | null;
  readonly cpuSecondsAtSmall: number | null;
  readonly wallPerSec: number | null;
}

/** Database commits of one subject's erasure, run in-process (vault.erasures.request + settle). */
export interface ErasureCommits {
  readonly subjects: number;
  /** xact_commit growth of the scratch database over the erasures' window (stats flushed: 1.5 s idle before reading). */
  readonly windowCommits: number;
  /** The same over an idle window of the same length just before (the vault's background and the reads themselves). */
  readonly idleCommits: number;
  readonly windowSeconds: number;
  /** This bench's own status reads in the window (one read-only commit each), left out of commitsPerErasure. */
  readonly statusReads: number;
  /** (window − idle − status reads) ÷ subjects: the erasure's own transactions, the worker's claims included. */
  readonly commitsPerErasure: number;
  /** Rows inserted + updated + deleted (pg_stat_database) per erasure, idle window subtracted. */
  readonly rowWritesPerErasure: number;
  /** In-process request → finished, ms each (not the HTTP path bench/erasure.ts measures). */
  readonly wallMs: number[];
  readonly statuses: string[];
  /** tier/kind of the residuals each erasure reported. */
  readonly residuals: string[][];
  /** Each erased subject's entries and the artifacts above them (the cascade's work), before the erasure. */
  readonly shape: Array<{ readonly entries: number; readonly artifactsAbove: number }>;
}

export interface UnitsResult {
  readonly method: string;
  readonly shape: {
    readonly entriesPerSubject: number;
    readonly entriesPerArtifact: number;
    readonly sourcesPerArtifact: number;
    readonly appendInFlight: number;
    readonly artifactInFlight: number;
    readonly meanEntryTextBytes: number;
    readonly meanArtifactTextBytes: number;
  };
  readonly small: SizePoint;
  readonly large: SizePoint;
  /** The large store's tables after VACUUM FULL. */
  readonly packed: TableSize[];
  readonly phases: PhaseCost[];
  readonly tables: TableSlope[];
  /** Tables whose row count did not change between the two sizes: fixed size. */
  readonly fixedTables: Array<{ readonly table: string; readonly rows: number; readonly bytes: number }>;
  readonly units: {
    readonly subject: UnitFigure;
    readonly entry: UnitFigure;
    readonly artifact: UnitFigure;
    /** The provenance table alone, per edge (its rows are edges). */
    readonly edge: UnitFigure;
  };
  /** Null when the erasures failed (a warning says why). */
  readonly erasure: ErasureCommits | null;
  readonly setupSeconds: number;
  readonly fillSeconds: number;
  readonly warnings: string[];
}

const ERASED = 3;
const STATS_SETTLE_MS = 1_500;

/**
 * Commits per erasure: xact_commit of this database over a window holding ERASED erasures
 * one after the other, less an idle window of the same length. Backends flush their
 * statistics within about a second of going idle, so each reading waits STATS_SETTLE_MS first.
 */
async function erasureCommits(vault: App, sql: postgres.Sql, subjects: string[]): Promise<ErasureCommits> {
  const reading = async (): Promise<{ commits: number; writes: number }> => {
    const [r] = await sql<Array<{ c: string; w: string }>>`
      select xact_commit::bigint as c, (tup_inserted + tup_updated + tup_deleted)::bigint as w
        from pg_stat_database where datname = current_database()`;
    return { commits: Number(r!.c), writes: Number(r!.w) };
  };
  await sleep(STATS_SETTLE_MS);
  const w0 = performance.now();
  const wallMs: number[] = [];
  const statuses: string[] = [];
  const residuals: string[][] = [];
  let statusReads = 0;
  const shape: Array<{ entries: number; artifactsAbove: number }> = [];
  for (const subject of subjects) {
    const hash = Buffer.from(vault.keys.subjectHash(subject));
    const [r] = await sql<Array<{ e: string; a: string }>>`
      select (select count(*) from log_entries where subject_hash = ${hash})::bigint as e,
             (select count(distinct p.artifact_id) from provenance p join log_entries l on l.entry_id = p.source_id where l.subject_hash = ${hash})::bigint as a`;
    shape.push({ entries: Number(r!.e), artifactsAbove: Number(r!.a) });
  }
  await sleep(STATS_SETTLE_MS);
  const c0 = await reading();
  for (const subject of subjects) {
    const t0 = performance.now();
    const { erasureId } = await vault.erasures.request({ subject }, 'bench');
    // as settle() does — run what is claimable here, read the status — counting the status reads
    const deadline = Date.now() + 60_000;
    for (;;) {
      await vault.erasures.drain();
      const view = await vault.erasures.get(erasureId);
      statusReads++;
      if (!['pending', 'running'].includes(view.status)) {
        statuses.push(view.status);
        residuals.push(view.residuals.map((x) => `${x.tier}/${x.kind}`));
        break;
      }
      if (Date.now() > deadline) throw new Error(`erasure ${erasureId} did not finish in 60 s`);
      await sleep(50);
    }
    wallMs.push(performance.now() - t0);
  }
  await sleep(STATS_SETTLE_MS);
  const c1 = await reading();
  const windowMs = performance.now() - w0;
  // the idle window: as long, nothing run in it
  await sleep(STATS_SETTLE_MS);
  const i0 = await reading();
  await sleep(windowMs);
  const i1 = await reading();
  const windowCommits = c1.commits - c0.commits;
  const idleCommits = i1.commits - i0.commits;
  return {
    subjects: subjects.length,
    windowCommits,
    idleCommits,
    windowSeconds: windowMs / 1000,
    statusReads,
    commitsPerErasure: (windowCommits - idleCommits - statusReads) / subjects.length,
    rowWritesPerErasure: (c1.writes - c0.writes - (i1.writes - i0.writes)) / subjects.length,
    wallMs,
    statuses,
    residuals,
    shape,
  };
}

// ------------------------------------------------------------------ helpers

async function diskBytes(dir: string): Promise<number> {
  let n = 0;
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0;
  }
  for (const name of names) {
    const p = path.join(dir, name);
    const s = await stat(p);
    n += s.isDirectory() ? await diskBytes(p) : s.size;
  }
  return n;
}

async function tableNames(sql: postgres.Sql): Promise<string[]> {
  const rows = await sql<Array<{ relname: string }>>`
    select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'public' and c.relkind in ('r', 'p') order by c.relname`;
  return rows.map((r) => r.relname);
}

async function rowCounts(sql: postgres.Sql, tables: readonly string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of tables) {
    const [r] = await sql.unsafe<Array<{ n: string }>>(`select count(*)::bigint as n from "${t.replace(/"/g, '""')}"`);
    out[t] = Number(r!.n);
  }
  return out;
}

async function tableSizes(sql: postgres.Sql, tables: readonly string[], vacuum = 'vacuum analyze'): Promise<TableSize[]> {
  await sql.unsafe(vacuum);
  const counts = await rowCounts(sql, tables);
  const rows = await sql<Array<{ relname: string; total: string; heap: string; idx: string; toast: string }>>`
    select c.relname, pg_total_relation_size(c.oid)::bigint as total, pg_relation_size(c.oid)::bigint as heap,
           pg_indexes_size(c.oid)::bigint as idx,
           coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0)::bigint as toast
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'public' and c.relkind in ('r', 'p') order by c.relname`;
  return rows.map((r) => ({
    table: r.relname,
    rows: counts[r.relname] ?? 0,
    totalBytes: Number(r.total),
    heapBytes: Number(r.heap),
    indexBytes: Number(r.idx),
    toastBytes: Number(r.toast),
  }));
}

const UNITS: readonly Unit[] = ['subject', 'entry', 'artifact'];
const zeroUnits = (): Record<Unit, number> => ({ subject: 0, entry: 0, artifact: 0 });

// ------------------------------------------------------------------ the benchmark

export async function runUnits(): Promise<UnitsResult> {
  const smallEntries = envInt('BENCH_UNITS_SMALL', byMode({ quick: 400, normal: 1_500, full: 10_000 }), 100);
  const largeEntries = envInt('BENCH_UNITS_LARGE', byMode({ quick: 1_200, normal: 4_000, full: 50_000 }), smallEntries + 100);
  const targets = [
    { step: 'A' as const, entries: smallEntries - (smallEntries % ENTRIES_PER_SUBJECT) },
    { step: 'B' as const, entries: largeEntries - (largeEntries % ENTRIES_PER_SUBJECT) },
  ];
  const tag = randomBytes(4).toString('hex');
  const bucket = `lethe-bench-units-${tag}`;
  const warnings: string[] = [];

  let scratch: Scratch | undefined;
  let vault: App | undefined;
  let sql: postgres.Sql | undefined;
  try {
    const s0 = performance.now();
    scratch = await openScratch('units', { minio: true });
    const { db, dataDir } = scratch;
    const minio = scratch.minio!;
    vault = await openApp(
      loadConfig({
        DATABASE_URL: db.url,
        LETHE_DATA_DIR: dataDir,
        LETHE_ROOT_KEY: randomRootKey(),
        LETHE_LOG_LEVEL: 'warn',
        ...scratch.s3,
        S3_BUCKET: bucket,
      }),
      { logger: createLogger('warn', process.stderr), listen: false },
    );
    const v = vault;
    sql = postgres(db.url, { max: 2, onnotice: () => {} });
    const q = sql;
    const client = minioClient(minio);
    const m = minio;
    const tables = await tableNames(q);
    const setupSeconds = (performance.now() - s0) / 1000;

    const total = targets[targets.length - 1]!.entries;
    const texts = sentences(total, 4242);
    const meanEntryTextBytes = texts.reduce((n, t) => n + Buffer.byteLength(t), 0) / texts.length;
    const artifactTexts: number[] = [];
    const subjectName = (i: number) => `bench-units-subject-${String(i).padStart(7, '0')}`;

    const phases: PhaseCost[] = [];
    const points: SizePoint[] = [];
    let counts = await rowCounts(q, tables);
    let doneSubjects = 0;
    let doneEntries = 0;
    let doneArtifacts = 0;
    const f0 = performance.now();

    const phase = async (unit: Unit, step: 'A' | 'B', units: number, body: () => Promise<void>): Promise<void> => {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await body();
      const seconds = (performance.now() - t0) / 1000;
      const cpu = cpuSeconds(c0);
      const after = await rowCounts(q, tables);
      const rowsAdded: Record<string, number> = {};
      for (const t of tables) if ((after[t] ?? 0) !== (counts[t] ?? 0)) rowsAdded[t] = (after[t] ?? 0) - (counts[t] ?? 0);
      counts = after;
      phases.push({ unit, step, units, seconds, cpuSeconds: cpu, rowsAdded });
      progress(`units: step ${step}, ${fmtInt(units)} × ${unit} in ${fmtSeconds(seconds)} (${fmtNum(units / seconds, 0)}/s, CPU ${fmtNum(cpu, 2)} s)`);
    };

    for (const target of targets) {
      const entries = target.entries - doneEntries;
      const subjects = entries / ENTRIES_PER_SUBJECT;
      const firstSubject = doneSubjects;
      const firstEntry = doneEntries;
      await phase('subject', target.step, subjects, async () => {
        const names = Array.from({ length: subjects }, (_, i) => subjectName(firstSubject + i));
        for (let i = 0; i < names.length; i += 2_000) await v.keys.ensureKeys(names.slice(i, i + 2_000), 'bench');
      });
      const entryIds = new Array<string>(entries);
      await phase('entry', target.step, entries, async () => {
        await pool(entries, APPEND_IN_FLIGHT, async (i) => {
          const r = await v.log.append(subjectName(firstSubject + (i % subjects)), { text: texts[firstEntry + i]! }, 'bench');
          entryIds[i] = r.entryId;
        });
      });
      const nArtifacts = Math.floor(entries / ENTRIES_PER_ARTIFACT);
      await phase('artifact', target.step, nArtifacts, async () => {
        await pool(nArtifacts, ARTIFACT_IN_FLIGHT, async (i) => {
          const picks = Array.from({ length: SOURCES_PER_ARTIFACT }, (_, k) => (i * ENTRIES_PER_ARTIFACT + k * 7) % entries);
          const text = picks.map((p) => texts[firstEntry + p]!).join(' ');
          artifactTexts.push(Buffer.byteLength(text));
          await v.artifacts.write({ kind: 'summary', text, sources: picks.map((p) => entryIds[p]!) }, 'bench');
        });
      });
      doneSubjects += subjects;
      doneEntries += entries;
      doneArtifacts += nArtifacts;

      progress(`units: step ${target.step} done (${fmtInt(doneEntries)} entries); VACUUM ANALYZE, table sizes, bucket listing`);
      const sizes = await tableSizes(q, tables);
      const listing = await listObjects(client, bucket);
      const sum = (pred: (n: string) => boolean) => {
        const xs = listing.filter((o) => pred(o.name));
        return { count: xs.length, bytes: xs.reduce((n, o) => n + o.size, 0) };
      };
      const [dbSize] = await q<Array<{ n: string }>>`select pg_database_size(current_database())::bigint as n`;
      points.push({
        label: target.step === 'A' ? 'small' : 'large',
        subjects: doneSubjects,
        entries: doneEntries,
        artifacts: doneArtifacts,
        edges: sizes.find((t) => t.table === 'provenance')?.rows ?? 0,
        tables: sizes,
        databaseBytes: Number(dbSize!.n),
        objects: {
          log: sum((n) => n.startsWith('log/')),
          artifacts: sum((n) => n.startsWith('artifacts/')),
          other: sum((n) => !n.startsWith('log/') && !n.startsWith('artifacts/')),
        },
        minioDiskBytes: await diskBytes(path.join(m.dataDir, bucket)),
      });
    }
    const fillSeconds = (performance.now() - f0) / 1000;
    progress('units: VACUUM FULL, table sizes packed');
    const packed = await tableSizes(q, tables, 'vacuum full analyze');
    progress(`units: ${ERASED} erasures in-process, one at a time, counting the database's commits`);
    let erasure: ErasureCommits | null = null;
    try {
      erasure = await erasureCommits(
        v,
        q,
        Array.from({ length: ERASED }, (_, i) => subjectName(i)),
      );
      // incomplete is a finished erasure with residuals (cross-subject artifacts here); failed is not
      if (erasure.statuses.some((st) => st === 'failed')) warnings.push(`erasure statuses: ${erasure.statuses.join(', ')}`);
    } catch (e) {
      warnings.push(`the erasures for the commit count failed: ${(e as Error).message}`);
    }
    const small = points[0]!;
    const large = points[1]!;
    if (small.objects.log.count !== small.entries)
      warnings.push(`${small.objects.log.count} objects under log/ at the small size, expected ${small.entries} (one per append)`);
    if (large.objects.log.count !== large.entries) warnings.push(`${large.objects.log.count} objects under log/ at the large size, expected ${large.entries}`);
    if (large.objects.artifacts.count !== large.artifacts)
      warnings.push(`${large.objects.artifacts.count} objects under artifacts/, expected ${large.artifacts}`);

    // ---------------------------------------------------------- per table
    const rowsPer = (step: 'A' | 'B', t: string): Record<Unit, number> => {
      const out = zeroUnits();
      for (const p of phases) if (p.step === step && p.units > 0) out[p.unit] += (p.rowsAdded[t] ?? 0) / p.units;
      return out;
    };
    const slopes: TableSlope[] = [];
    const fixedTables: UnitsResult['fixedTables'] = [];
    for (const t of tables) {
      const a = small.tables.find((x) => x.table === t)!;
      const b = large.tables.find((x) => x.table === t)!;
      if (b.rows === a.rows) {
        fixedTables.push({ table: t, rows: b.rows, bytes: b.totalBytes });
        continue;
      }
      slopes.push({
        table: t,
        bytesPerRow: (b.totalBytes - a.totalBytes) / (b.rows - a.rows),
        bytesPerRowAtSmall: a.rows > 0 ? a.totalBytes / a.rows : null,
        bytesPerRowAtLarge: b.rows > 0 ? b.totalBytes / b.rows : null,
        bytesPerRowPacked: b.rows > 0 ? packed.find((x) => x.table === t)!.totalBytes / b.rows : null,
        rowsPer: rowsPer('B', t),
        rowsPerAtSmall: rowsPer('A', t),
      });
    }

    // ---------------------------------------------------------- per unit
    const unitCount = (p: SizePoint, u: Unit): number => (u === 'subject' ? p.subjects : u === 'entry' ? p.entries : p.artifacts);
    const phaseOf = (u: Unit, step: 'A' | 'B') => phases.find((p) => p.unit === u && p.step === step)!;
    // an artifact's edges are their own unit (the provenance table): left out of the artifact's figure
    const counted = (u: Unit, table: string): boolean => !(u === 'artifact' && table === 'provenance');
    const pgAt = (p: SizePoint, u: Unit, step: 'A' | 'B'): number => {
      // whole-store figure: each table's bytes split over the units by the rows they added
      let bytes = 0;
      for (const s of slopes) {
        if (!counted(u, s.table)) continue;
        const tb = p.tables.find((x) => x.table === s.table)!;
        if (tb.rows === 0) continue;
        const per = step === 'A' ? s.rowsPerAtSmall : s.rowsPer;
        bytes += (per[u] * unitCount(p, u) * tb.totalBytes) / tb.rows;
      }
      return bytes / unitCount(p, u);
    };
    const objectsOf = (p: SizePoint, u: Unit) => (u === 'entry' ? p.objects.log : u === 'artifact' ? p.objects.artifacts : null);
    const figure = (u: Unit): UnitFigure => {
      const pgTables = slopes
        .filter((s) => s.rowsPer[u] > 0 && s.bytesPerRow !== null && counted(u, s.table))
        .map((s) => ({ table: s.table, rowsPerUnit: s.rowsPer[u], bytesPerUnit: s.rowsPer[u] * s.bytesPerRow! }))
        .sort((x, y) => y.bytesPerUnit - x.bytesPerUnit);
      const du = unitCount(large, u) - unitCount(small, u);
      const oa = objectsOf(small, u);
      const ob = objectsOf(large, u);
      const pa = phaseOf(u, 'A');
      const pb = phaseOf(u, 'B');
      return {
        unit: u,
        pgBytes: pgTables.reduce((n, x) => n + x.bytesPerUnit, 0),
        pgBytesAtSmall: pgAt(small, u, 'A'),
        pgBytesAtLarge: pgAt(large, u, 'B'),
        pgBytesPacked: slopes.filter((s) => counted(u, s.table) && s.bytesPerRowPacked !== null).reduce((n, s) => n + s.rowsPer[u] * s.bytesPerRowPacked!, 0),
        pgTables,
        objectBytes: oa && ob ? (ob.bytes - oa.bytes) / du : null,
        objectBytesAtSmall: oa ? oa.bytes / unitCount(small, u) : null,
        objectBytesAtLarge: ob ? ob.bytes / unitCount(large, u) : null,
        objectsPerUnit: oa && ob ? (ob.count - oa.count) / du : null,
        // the bucket's disk bytes grow with entries and artifacts together: split by their logical bytes
        diskBytes:
          oa && ob
            ? ((large.minioDiskBytes - small.minioDiskBytes) *
                ((ob.bytes - oa.bytes) / (large.objects.log.bytes + large.objects.artifacts.bytes - small.objects.log.bytes - small.objects.artifacts.bytes))) /
              du
            : null,
        cpuSeconds: pb.units > 0 ? pb.cpuSeconds / pb.units : null,
        cpuSecondsAtSmall: pa.units > 0 ? pa.cpuSeconds / pa.units : null,
        wallPerSec: pb.seconds > 0 ? pb.units / pb.seconds : null,
      };
    };
    const prov = slopes.find((s) => s.table === 'provenance');
    const provA = small.tables.find((t) => t.table === 'provenance');
    const provB = large.tables.find((t) => t.table === 'provenance');
    const edge: UnitFigure = {
      unit: 'edge',
      pgBytes: prov?.bytesPerRow ?? NaN,
      pgBytesAtSmall: provA && provA.rows > 0 ? provA.totalBytes / provA.rows : NaN,
      pgBytesAtLarge: provB && provB.rows > 0 ? provB.totalBytes / provB.rows : NaN,
      pgBytesPacked: prov?.bytesPerRowPacked ?? NaN,
      pgTables: prov ? [{ table: 'provenance', rowsPerUnit: 1, bytesPerUnit: prov.bytesPerRow ?? NaN }] : [],
      objectBytes: null,
      objectBytesAtSmall: null,
      objectBytesAtLarge: null,
      objectsPerUnit: null,
      diskBytes: null,
      cpuSeconds: null,
      cpuSecondsAtSmall: null,
      wallPerSec: null,
    };
    if (!prov) warnings.push('the provenance table did not grow between the two sizes');

    return {
      method:
        'one store grown in two steps (real PostgreSQL 15, real MinIO, vault in-process); per table, bytes per row = growth of pg_total_relation_size ÷ growth of count(*) ' +
        'between the steps (after VACUUM ANALYZE); rows per unit from the rows each phase added; object bytes from the bucket listing; CPU = process.cpuUsage of this process per phase',
      shape: {
        entriesPerSubject: ENTRIES_PER_SUBJECT,
        entriesPerArtifact: ENTRIES_PER_ARTIFACT,
        sourcesPerArtifact: SOURCES_PER_ARTIFACT,
        appendInFlight: APPEND_IN_FLIGHT,
        artifactInFlight: ARTIFACT_IN_FLIGHT,
        meanEntryTextBytes,
        meanArtifactTextBytes: artifactTexts.reduce((n, x) => n + x, 0) / Math.max(1, artifactTexts.length),
      },
      small,
      large,
      packed,
      phases,
      tables: slopes,
      fixedTables,
      units: { subject: figure('subject'), entry: figure('entry'), artifact: figure('artifact'), edge },
      erasure,
      setupSeconds,
      fillSeconds,
      warnings,
    };
  } finally {
    await cleanup('units', [
      ['sql', async () => sql?.end({ timeout: 5 })],
      ['vault', async () => vault?.close()],
    ]);
    await scratch?.cleanup();
  }
}

// ------------------------------------------------------------------ report

const b = (n: number | null): string => (n === null || !Number.isFinite(n) ? '—' : fmtInt(n));
const cpuUs = (s: number | null): string => (s === null || !Number.isFinite(s) ? '—' : fmtInt(s * 1e6));

export function formatUnits(r: UnitsResult): string {
  const u = r.units;
  const lines = [
    `Per-unit costs, one store grown from ${fmtInt(r.small.entries)} to ${fmtInt(r.large.entries)} entries (${r.shape.entriesPerSubject} per subject, ` +
      `${fmtInt(r.small.subjects)} → ${fmtInt(r.large.subjects)} subjects, ${fmtInt(r.small.artifacts)} → ${fmtInt(r.large.artifacts)} artifacts of ` +
      `${r.shape.sourcesPerArtifact} sources, ${fmtInt(r.small.edges)} → ${fmtInt(r.large.edges)} edges); entry text ${fmtInt(r.shape.meanEntryTextBytes)} B mean, ` +
      `artifact text ${fmtInt(r.shape.meanArtifactTextBytes)} B; real PostgreSQL and MinIO; fill ${fmtSeconds(r.fillSeconds)}`,
    table(
      [
        'unit',
        'PostgreSQL B (slope)',
        `B at ${fmtInt(r.small.entries)}`,
        `B at ${fmtInt(r.large.entries)}`,
        'B packed',
        'object B (slope)',
        'objects/unit',
        'MinIO disk B',
        'CPU µs/unit (in-process)',
        'units/s',
      ],
      (['subject', 'entry', 'artifact', 'edge'] as const).map((k) => {
        const f = u[k];
        return [
          k === 'subject' ? 'subject key' : k === 'entry' ? 'log entry' : k === 'artifact' ? 'artifact (its edges apart)' : 'provenance edge',
          b(f.pgBytes),
          b(f.pgBytesAtSmall),
          b(f.pgBytesAtLarge),
          b(f.pgBytesPacked),
          b(f.objectBytes),
          f.objectsPerUnit === null ? '—' : fmtNum(f.objectsPerUnit, 2),
          b(f.diskBytes),
          cpuUs(f.cpuSeconds),
          f.wallPerSec === null ? '—' : fmtNum(f.wallPerSec, 0),
        ];
      }),
    ),
    'PostgreSQL bytes per unit: the tables each unit grows (rows per unit x bytes per row, slope between the two sizes after VACUUM ANALYZE; ' +
      '"packed": after VACUUM FULL at the large size, heap rewritten and indexes rebuilt, i.e. without the free space concurrent inserts and page splits leave):',
    table(
      [
        'table',
        'rows/subject',
        'rows/entry',
        'rows/artifact',
        'B/row (slope)',
        `B/row at ${fmtInt(r.small.entries)}`,
        `B/row at ${fmtInt(r.large.entries)}`,
        'B/row packed',
      ],
      r.tables.map((t) => [
        t.table,
        fmtNum(t.rowsPer.subject, 2),
        fmtNum(t.rowsPer.entry, 2),
        fmtNum(t.rowsPer.artifact, 2),
        b(t.bytesPerRow),
        b(t.bytesPerRowAtSmall),
        b(t.bytesPerRowAtLarge),
        b(t.bytesPerRowPacked),
      ]),
    ),
    `fixed-size tables (rows unchanged between the sizes): ${
      r.fixedTables
        .filter((t) => t.rows > 0)
        .map((t) => `${t.table} (${t.rows})`)
        .join(', ') || 'none'
    }; ` + `database ${fmtNum(r.small.databaseBytes / 1e6, 1)} MB → ${fmtNum(r.large.databaseBytes / 1e6, 1)} MB`,
    `CPU per unit is this process's (the in-process writer path: vault.keys.ensureKeys, vault.log.append with ${r.shape.appendInFlight} in flight, ` +
      `vault.artifacts.write with ${r.shape.artifactInFlight}); PostgreSQL's and MinIO's CPU are not in it. Step A figures: ` +
      `${cpuUs(u.subject.cpuSecondsAtSmall)} / ${cpuUs(u.entry.cpuSecondsAtSmall)} / ${cpuUs(u.artifact.cpuSecondsAtSmall)} µs per subject / entry / artifact`,
  ];
  if (r.erasure) {
    const e = r.erasure;
    lines.push(
      `Erasure: ${e.subjects} subjects erased in-process one at a time (vault.erasures.request, then drain; ${e.statuses.join(', ')}; ` +
        `${e.shape.map((x) => `${x.entries} entries / ${x.artifactsAbove} artifacts above`).join(', ')}), median ${fmtNum(median(e.wallMs), 0)} ms each: ` +
        `${fmtNum(e.commitsPerErasure, 1)} database commits and ${fmtNum(e.rowWritesPerErasure, 0)} row writes per erasure (pg_stat_database: ${fmtInt(e.windowCommits)} commits over the ${fmtNum(e.windowSeconds, 1)} s window, ` +
        `less ${fmtInt(e.idleCommits)} over an idle window as long and this bench's ${fmtInt(e.statusReads)} status reads); residuals: ${[...new Set(e.residuals.flat())].join(', ') || 'none'}`,
    );
  }
  for (const w of r.warnings) lines.push(`WARNING: ${w}`);
  return lines.join('\n');
}

await runIfMain(import.meta.url, runUnits, formatUnits);

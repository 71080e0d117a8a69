/**
 * Provenance: the touching query's cost against the size of the graph, and
 * regeneration throughput with the built-in (extractive) regenerator.
 *
 *   1. touching  a fresh lethe_bench_* database, the vault opened on it with openApp
 *                (migrations run; local filesystem object store). A synthetic provenance
 *                graph is loaded straight into log_entries, artifacts and provenance with
 *                set-based SQL (generate_series), at two sizes: BENCH_PROVENANCE_SMALL
 *                edges (default 10,000) and BENCH_PROVENANCE_LARGE edges (default
 *                250,000; 1,000,000 with BENCH_FULL=1; 100,000 when quick), one after
 *                the other in the same tables
 *                (truncated in between), each followed by VACUUM ANALYZE. Background:
 *                ~E/2 entries over ~E/100 subjects (random-looking 32-byte subject hashes,
 *                ~50 entries each), summaries citing 5 entries, digests citing 5 summaries
 *                (4 summaries : 1 digest). One target subject with 40 entries feeds exactly
 *                100 artifacts: 80 summaries (each citing 2 of its entries + 3 background
 *                entries; depth 1) and 20 digests (each citing 4 of those summaries + 1
 *                background summary; depth 2); no background artifact cites any of them.
 *                Timed: `touchingSubject(vault.db.db, hash)` from src/artifacts/provenance.ts
 *                through the vault's own database handle, 10 unmeasured warm-up calls then
 *                BENCH_PROVENANCE_RUNS (default 50) calls, sequential; every call must
 *                answer exactly the 100 artifacts (80 at depth 1, 20 at depth 2), else the
 *                benchmark fails. Then EXPLAIN (ANALYZE, BUFFERS) of the very same SQL
 *                (touchingSubject's own statement, not retyped) at each size: execution
 *                time, rows, shared buffers hit/read, and every scan node with its index.
 *                Figure: median at the large size ÷ median at the small size (aim <= 2:
 *                the cost follows what is touched, not the size of the store). When the
 *                planner's plan at a size reads a whole table (at 10,000 edges it hashes
 *                all of provenance: cheaper by its estimate), that size is also measured
 *                on the index path: EXPLAIN and the same timed calls inside one
 *                transaction with SET LOCAL enable_seqscan = off, and the ratio is also
 *                given index path to index path.
 *   2. regenerate a second fresh database and vault: 20 subjects x 15 entries
 *                (vault.log.append), N summaries (default 100; 300 with BENCH_FULL=1; 50 when quick) each citing
 *                5 entries of 5 different subjects, N/10 digests each citing 5 summaries,
 *                written one at a time with vault.artifacts.write (baseline: writes/s).
 *                Then vault.artifacts.regenerate(all summary ids, { excluding: subject 0's
 *                entries }): the summaries and, cascading, the digests are rewritten one at
 *                a time by the built-in extractive regenerator (figure: artifacts
 *                regenerated/s, and its ratio to writes/s). Unmeasured warm-up: 10 writes
 *                and their regeneration. Checked afterwards: every artifact regenerated
 *                exactly once (none removed: each summary keeps >= 4 sources), none of them
 *                still cites an excluded entry, and no regenerated text holds a sentence of
 *                subject 0.
 *
 * Both phases run in this one process; PostgreSQL is on the same machine.
 */
import { randomBytes } from 'node:crypto';
import type { SQL } from 'drizzle-orm';
import { sql as dsql } from 'drizzle-orm';
import postgres from 'postgres';
import { touchingRecords, touchingSubject, touchingSubjectQuery } from '../src/artifacts/provenance.js';
import { queryRows } from '../src/db/client.js';
import type { App } from '../src/app/open.js';
import { byMode, envInt } from './support/mode.js';
import { scratchVault } from './support/scratch.js';
import { cpuSeconds, runIfMain } from './support/process.js';
import { type Aim, aim, fmtInt, fmtNum, fmtRatio, fmtSeconds, formatAims, type LatencyStats, progress, stats, table } from './support/report.js';

// ------------------------------------------------------------------ result types

export interface PlanScan {
  /** e.g. "Index Only Scan", "Index Scan", "Seq Scan", "Bitmap Heap Scan". */
  readonly node: string;
  readonly relation: string | null;
  readonly index: string | null;
  /** Actual rows per loop × loops. */
  readonly rows: number;
  readonly loops: number;
}

export interface PlanSummary {
  readonly planningMs: number;
  readonly executionMs: number;
  /** Rows out of the top node. */
  readonly rows: number;
  /** Shared buffers of the whole plan (the top node's counters include its children's). */
  readonly sharedHit: number;
  readonly sharedRead: number;
  readonly scans: PlanScan[];
  /** Scan nodes that read a whole table (Seq Scan on a table; a CTE scan is not one). */
  readonly seqScans: string[];
  /** Plan nodes, one line each, indented (the text form of the JSON plan, trimmed). */
  readonly outline: string[];
}

export interface TouchingRun {
  readonly targetEdges: number;
  /** Counted after loading. */
  readonly edges: number;
  readonly entries: number;
  readonly subjects: number;
  readonly artifacts: number;
  readonly loadSeconds: number;
  readonly vacuumAnalyzeSeconds: number;
  /** Table + index sizes after loading. */
  readonly provenanceBytes: number;
  readonly logEntriesBytes: number;
  readonly query: LatencyStats;
  /** `select 1` through the same handle: the round-trip floor. */
  readonly roundTrip: LatencyStats;
  readonly returned: number;
  readonly depth1: number;
  readonly depth2: number;
  readonly plan: PlanSummary;
  /**
   * The same EXPLAIN with enable_seqscan off (SET LOCAL in a transaction of its own),
   * only when the planner's own plan read a whole table: what the index path costs
   * at this size, for comparison.
   */
  readonly indexPlan: PlanSummary | null;
  /**
   * Also only then: touchingSubject timed the same way (same warm-up and runs) inside
   * one transaction with SET LOCAL enable_seqscan = off, i.e. on the index path.
   */
  readonly indexPathQuery: LatencyStats | null;
}

export interface RegenerationRun {
  readonly subjects: number;
  readonly entriesPerSubject: number;
  readonly summaries: number;
  readonly digests: number;
  readonly sourcesPerArtifact: number;
  readonly append: { readonly entries: number; readonly seconds: number; readonly perSec: number };
  readonly write: {
    readonly artifacts: number;
    readonly seconds: number;
    readonly perSec: number;
    readonly summariesPerSec: number;
    readonly digestsPerSec: number;
    readonly p50Ms: number;
    readonly p95Ms: number;
    readonly cpuSeconds: number;
  };
  readonly regenerate: {
    readonly requested: number;
    readonly excludedEntries: number;
    readonly summariesCitingExcluded: number;
    readonly regenerated: number;
    readonly removed: number;
    readonly seconds: number;
    readonly perSec: number;
    readonly cpuSeconds: number;
    readonly generator: string;
  };
  /** regenerated/s ÷ written/s. */
  readonly ratio: number;
  readonly verification: {
    readonly everyArtifactOnce: boolean;
    readonly stillCitingExcluded: number;
    readonly textsWithExcludedSubject: number;
    readonly allAtVersion2: boolean;
    readonly ok: boolean;
  };
}

export interface ProvenanceResult {
  readonly touching: {
    readonly small: TouchingRun;
    readonly large: TouchingRun;
    /** median large ÷ median small. */
    readonly ratio: number;
    readonly p95Ratio: number;
    /**
     * median large ÷ median small on the index path, when the small graph's own plan
     * read a whole table (null otherwise: `ratio` already compares index paths).
     */
    readonly indexPathRatio: number | null;
    readonly target: number;
    readonly expected: number;
  };
  readonly regeneration: RegenerationRun;
  /** The touching query large ÷ small (and index path to index path), aim <= 2. */
  readonly aims: Aim[];
  readonly valid: boolean;
  readonly warnings: string[];
}

// ------------------------------------------------------------------ helpers

function int(n: number): string {
  if (!Number.isSafeInteger(n)) throw new Error(`not an integer: ${n}`);
  return String(n);
}

// ------------------------------------------------------------------ 1. touching query

const TARGET_ENTRIES = 40;
const TARGET_SUMMARIES = 80;
const TARGET_DIGESTS = 20;
const EXPECTED_TOUCHING = TARGET_SUMMARIES + TARGET_DIGESTS;
/** 80 summaries x 5 sources + 20 digests x 5 sources. */
const TARGET_EDGES = 5 * (TARGET_SUMMARIES + TARGET_DIGESTS);
/** Primes for index permutations (bijections on Z_n while n is not a multiple of them). */
const P_ENTRY = 1_000_003;
const P_SUMMARY = 999_983;

interface GraphShape {
  readonly bgEntries: number;
  readonly bgSubjects: number;
  readonly bgSummaries: number;
  readonly bgDigests: number;
}

function shapeFor(edges: number): GraphShape {
  const bgArtifacts = Math.floor((edges - TARGET_EDGES) / 5);
  const bgDigests = Math.floor(bgArtifacts / 5);
  const bgSummaries = bgArtifacts - bgDigests;
  const bgEntries = Math.floor(edges / 2);
  const bgSubjects = Math.max(10, Math.floor(bgEntries / 50));
  if (bgSummaries < 10 || bgDigests < 1 || bgEntries < 10) throw new Error(`graph of ${edges} edges is too small`);
  if (bgEntries % P_ENTRY === 0 || bgSummaries % P_SUMMARY === 0) throw new Error('graph size is a multiple of a permutation prime');
  return { bgEntries, bgSubjects, bgSummaries, bgDigests };
}

/**
 * Loads the synthetic graph with set-based SQL. Ids look like lethe's (prefix + 22
 * characters) and are scattered (md5), so index lookups land on pages spread over the
 * whole index, as random ids would.
 */
async function loadGraph(
  pg: postgres.Sql,
  edges: number,
  targetHash: Uint8Array,
): Promise<{ shape: GraphShape; loadSeconds: number; vacuumAnalyzeSeconds: number }> {
  const shape = shapeFor(edges);
  const { bgEntries: NE, bgSubjects: NS, bgSummaries: NSU, bgDigests: ND } = shape;
  const targetHex = Buffer.from(targetHash).toString('hex');
  if (!/^[0-9a-f]{64}$/.test(targetHex)) throw new Error('bad target hash');
  const eid = (expr: string, ns: string) => `'entry_' || substr(md5('${ns}' || (${expr})::text), 1, 22)`;
  const aid = (expr: string, ns: string) => `'art_' || substr(md5('${ns}' || (${expr})::text), 1, 22)`;
  const statements: Array<[string, string]> = [
    // cascade: tables that reference log_entries (e.g. the embedding queue) are empty in this scratch database too
    ['truncate', 'truncate provenance, artifacts, log_entries cascade'],
    [
      `${fmtInt(NE)} background entries over ${fmtInt(NS)} subjects`,
      `insert into log_entries (entry_id, subject_hash, key_id, seq, segment, frame_offset, frame_length, created_at)
       select ${eid('i', 'e')}, sha256(convert_to('bench-subject-' || (i % ${int(NS)}), 'UTF8')), 'key_bench_' || (i % ${int(NS)}),
              i / ${int(NS)} + 1, 'log/seg_bench_' || (i / 64), (i % 64) * 700, 700, now()
         from generate_series(0, ${int(NE - 1)}) i`,
    ],
    [
      `${TARGET_ENTRIES} target entries`,
      `insert into log_entries (entry_id, subject_hash, key_id, seq, segment, frame_offset, frame_length, created_at)
       select ${eid('i', 'te')}, decode('${targetHex}', 'hex'), 'key_bench_target', i + 1, 'log/seg_bench_target', i * 700, 700, now()
         from generate_series(0, ${TARGET_ENTRIES - 1}) i`,
    ],
    [
      `${fmtInt(NSU + ND)} background artifacts`,
      `insert into artifacts (artifact_id, kind, state, version, height, key_id, object, generator, created_at, updated_at)
       select ${aid('i', 's')}, 'summary', 'live', 1, 1, null, null, 'bench', now(), now() from generate_series(0, ${int(NSU - 1)}) i
       union all
       select ${aid('i', 'd')}, 'digest', 'live', 1, 2, null, null, 'bench', now(), now() from generate_series(0, ${int(ND - 1)}) i`,
    ],
    [
      `${EXPECTED_TOUCHING} target artifacts`,
      `insert into artifacts (artifact_id, kind, state, version, height, key_id, object, generator, created_at, updated_at)
       select ${aid('i', 'ts')}, 'summary', 'live', 1, 1, null, null, 'bench', now(), now() from generate_series(0, ${TARGET_SUMMARIES - 1}) i
       union all
       select ${aid('i', 'td')}, 'digest', 'live', 1, 2, null, null, 'bench', now(), now() from generate_series(0, ${TARGET_DIGESTS - 1}) i`,
    ],
    [
      `${fmtInt(NSU * 5)} background summary edges`,
      `insert into provenance (artifact_id, source_id, source_type)
       select ${aid('s', 's')}, ${eid(`((s::bigint * 5 + j) * ${P_ENTRY}) % ${int(NE)}`, 'e')}, 'entry'
         from generate_series(0, ${int(NSU - 1)}) s, generate_series(0, 4) j`,
    ],
    [
      `${fmtInt(ND * 5)} background digest edges`,
      `insert into provenance (artifact_id, source_id, source_type)
       select ${aid('d', 'd')}, ${aid(`((d::bigint * 5 + j) * ${P_SUMMARY}) % ${int(NSU)}`, 's')}, 'artifact'
         from generate_series(0, ${int(ND - 1)}) d, generate_series(0, 4) j`,
    ],
    [
      `${TARGET_EDGES} target edges`,
      `insert into provenance (artifact_id, source_id, source_type)
       select ${aid('t', 'ts')}, ${eid(`(2 * t + j) % ${TARGET_ENTRIES}`, 'te')}, 'entry'
         from generate_series(0, ${TARGET_SUMMARIES - 1}) t, generate_series(0, 1) j
       union all
       select ${aid('t', 'ts')}, ${eid(`((t::bigint * 3 + j) * ${P_ENTRY}) % ${int(NE)}`, 'e')}, 'entry'
         from generate_series(0, ${TARGET_SUMMARIES - 1}) t, generate_series(0, 2) j
       union all
       select ${aid('u', 'td')}, ${aid('4 * u + j', 'ts')}, 'artifact'
         from generate_series(0, ${TARGET_DIGESTS - 1}) u, generate_series(0, 3) j
       union all
       select ${aid('u', 'td')}, ${aid(`(u::bigint * ${P_SUMMARY}) % ${int(NSU)}`, 's')}, 'artifact'
         from generate_series(0, ${TARGET_DIGESTS - 1}) u`,
    ],
  ];
  const t0 = performance.now();
  for (const [label, text] of statements) {
    const s = performance.now();
    await pg.unsafe(text);
    if (edges >= 100_000) progress(`provenance: ${label} (${fmtSeconds((performance.now() - s) / 1000)})`);
  }
  const loadSeconds = (performance.now() - t0) / 1000;
  // a live table would have been vacuumed and analyzed by autovacuum by now
  const v0 = performance.now();
  await pg.unsafe('vacuum analyze log_entries');
  await pg.unsafe('vacuum analyze artifacts');
  await pg.unsafe('vacuum analyze provenance');
  return { shape, loadSeconds, vacuumAnalyzeSeconds: (performance.now() - v0) / 1000 };
}

interface RawPlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'CTE Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  'Index Cond'?: string;
  Plans?: RawPlanNode[];
}

function summarizePlan(raw: unknown): PlanSummary {
  const doc = (Array.isArray(raw) ? raw[0] : raw) as { Plan: RawPlanNode; 'Planning Time': number; 'Execution Time': number };
  const scans: PlanScan[] = [];
  const outline: string[] = [];
  const walk = (n: RawPlanNode, depth: number) => {
    const loops = n['Actual Loops'] ?? 1;
    const rows = (n['Actual Rows'] ?? 0) * loops;
    const on = n['Relation Name'] ? ` on ${n['Relation Name']}` : n['CTE Name'] ? ` on ${n['CTE Name']}` : '';
    const using = n['Index Name'] ? ` using ${n['Index Name']}` : '';
    outline.push(`${'  '.repeat(depth)}${n['Node Type']}${using}${on} (rows ${fmtInt(rows)}, loops ${fmtInt(loops)})`);
    if (/Scan/.test(n['Node Type']) && n['Relation Name']) {
      scans.push({ node: n['Node Type'], relation: n['Relation Name'] ?? null, index: n['Index Name'] ?? null, rows, loops });
    }
    for (const c of n.Plans ?? []) walk(c, depth + 1);
  };
  walk(doc.Plan, 0);
  return {
    planningMs: doc['Planning Time'],
    executionMs: doc['Execution Time'],
    rows: doc.Plan['Actual Rows'] ?? 0,
    sharedHit: doc.Plan['Shared Hit Blocks'] ?? 0,
    sharedRead: doc.Plan['Shared Read Blocks'] ?? 0,
    scans,
    seqScans: scans.filter((s) => s.node === 'Seq Scan').map((s) => s.relation ?? '?'),
    outline,
  };
}

/** The SQL touchingSubject sends (its own statement, not retyped). */
function touchingSql(subjectHash: Uint8Array): SQL {
  return touchingSubjectQuery(subjectHash);
}

async function measureTouching(vault: App, pg: postgres.Sql, edges: number, runs: number): Promise<TouchingRun> {
  const warmups = 10;
  const target = new Uint8Array(randomBytes(32));
  progress(`provenance: loading a graph of ~${fmtInt(edges)} edges`);
  const { shape, loadSeconds, vacuumAnalyzeSeconds } = await loadGraph(pg, edges, target);
  const [counts] = await pg<{ edges: number; entries: number; artifacts: number; subjects: number; prov_bytes: string; log_bytes: string }[]>`
    select (select count(*)::int from provenance) as edges,
           (select count(*)::int from log_entries) as entries,
           (select count(*)::int from artifacts) as artifacts,
           (select count(distinct subject_hash)::int from log_entries) as subjects,
           pg_total_relation_size('provenance')::text as prov_bytes,
           pg_total_relation_size('log_entries')::text as log_bytes`;
  if (!counts) throw new Error('no counts');
  const expectedEdges = 5 * (shape.bgSummaries + shape.bgDigests) + TARGET_EDGES;
  if (counts.edges !== expectedEdges) throw new Error(`loaded ${counts.edges} edges, expected ${expectedEdges}`);
  progress(
    `provenance: ${fmtInt(counts.edges)} edges, ${fmtInt(counts.entries)} entries, ${fmtInt(counts.subjects)} subjects, ` +
      `${fmtInt(counts.artifacts)} artifacts loaded in ${fmtSeconds(loadSeconds)} (+ vacuum analyze ${fmtSeconds(vacuumAnalyzeSeconds)})`,
  );

  const check = (rows: Awaited<ReturnType<typeof touchingSubject>>) => {
    const d1 = rows.filter((r) => r.depth === 1).length;
    const d2 = rows.filter((r) => r.depth === 2).length;
    if (rows.length !== EXPECTED_TOUCHING || d1 !== TARGET_SUMMARIES || d2 !== TARGET_DIGESTS) {
      throw new Error(
        `touchingSubject answered ${rows.length} artifacts (${d1} at depth 1, ${d2} at depth 2) at ${fmtInt(counts.edges)} edges; ` +
          `expected ${EXPECTED_TOUCHING} (${TARGET_SUMMARIES} + ${TARGET_DIGESTS})`,
      );
    }
    return { d1, d2 };
  };

  const exec = vault.db.db;
  for (let i = 0; i < warmups; i++) check(await touchingSubject(exec, target));
  const samples: number[] = [];
  let last: { d1: number; d2: number } = { d1: 0, d2: 0 };
  let returned = 0;
  for (let i = 0; i < runs; i++) {
    const s = performance.now();
    const rows = await touchingSubject(exec, target);
    samples.push(performance.now() - s);
    last = check(rows);
    returned = rows.length;
  }
  const trips: number[] = [];
  for (let i = 0; i < warmups + runs; i++) {
    const s = performance.now();
    await exec.execute(dsql`select 1`);
    if (i >= warmups) trips.push(performance.now() - s);
  }
  const query = stats(samples, warmups);
  const roundTrip = stats(trips, warmups);

  const planRows = await queryRows<{ 'QUERY PLAN': unknown }>(exec, dsql`explain (analyze, buffers, format json) ${touchingSql(target)}`);
  const parsePlan = (rows: Array<{ 'QUERY PLAN': unknown }>) => {
    const raw = rows[0]?.['QUERY PLAN'];
    const p = summarizePlan(typeof raw === 'string' ? JSON.parse(raw) : raw);
    if (p.rows !== EXPECTED_TOUCHING) throw new Error(`EXPLAIN ANALYZE: the plan returned ${p.rows} rows, expected ${EXPECTED_TOUCHING}`);
    return p;
  };
  const plan = parsePlan(planRows);
  let indexPlan: PlanSummary | null = null;
  let indexPathQuery: LatencyStats | null = null;
  if (plan.seqScans.length > 0) {
    const captured = touchingSql(target);
    [indexPlan, indexPathQuery] = await exec.transaction(async (tx) => {
      await tx.execute(dsql`set local enable_seqscan = off`);
      const p = parsePlan(await queryRows<{ 'QUERY PLAN': unknown }>(tx, dsql`explain (analyze, buffers, format json) ${captured}`));
      if (p.seqScans.length > 0) throw new Error(`with enable_seqscan off the plan still reads whole tables: ${p.seqScans.join(', ')}`);
      for (let i = 0; i < warmups; i++) check(await touchingSubject(tx, target));
      const times: number[] = [];
      for (let i = 0; i < runs; i++) {
        const s = performance.now();
        const rows = await touchingSubject(tx, target);
        times.push(performance.now() - s);
        check(rows);
      }
      return [p, stats(times, warmups)] as const;
    });
    progress(
      `provenance: on the index path (enable_seqscan off) at ${fmtInt(counts.edges)} edges: median ${fmtNum(indexPathQuery.medianMs, 2)} ms, p95 ${fmtNum(indexPathQuery.p95Ms, 2)} ms`,
    );
  }
  progress(
    `provenance: touchingSubject at ${fmtInt(counts.edges)} edges: median ${fmtNum(query.medianMs, 2)} ms, p95 ${fmtNum(query.p95Ms, 2)} ms; ` +
      `plan ${fmtNum(plan.executionMs, 2)} ms, buffers hit ${fmtInt(plan.sharedHit)} read ${fmtInt(plan.sharedRead)}`,
  );
  return {
    targetEdges: edges,
    edges: counts.edges,
    entries: counts.entries,
    subjects: counts.subjects,
    artifacts: counts.artifacts,
    loadSeconds,
    vacuumAnalyzeSeconds,
    provenanceBytes: Number(counts.prov_bytes),
    logEntriesBytes: Number(counts.log_bytes),
    query,
    roundTrip,
    returned,
    depth1: last.d1,
    depth2: last.d2,
    plan,
    indexPlan,
    indexPathQuery,
  };
}

// ------------------------------------------------------------------ 2. regeneration

const WORDS = (
  'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango ' +
  'uniform victor whiskey xray yankee zulu window aisle seat coffee tea train flight hotel museum garden river mountain city'
).split(' ');

function words(n: number): string {
  const raw = randomBytes(n);
  return Array.from(raw, (b) => WORDS[b % WORDS.length]!).join(' ');
}

function subjectTag(s: number): string {
  return `subj-${String(s).padStart(2, '0')}`;
}

/** Three sentences; the first names the subject by its tag (what the verification looks for). */
function entryText(s: number, k: number): string {
  return `Note ${k} of ${subjectTag(s)} mentions ${words(6)}. It also says ${words(8)}. Finally ${words(7)}.`;
}

async function measureRegeneration(): Promise<RegenerationRun> {
  const subjects = 20;
  const perSubject = envInt('BENCH_PROVENANCE_ENTRIES_PER_SUBJECT', 15, 5);
  const nSummaries = envInt('BENCH_PROVENANCE_ARTIFACTS', byMode({ quick: 50, normal: 100, full: 300 }), 10);
  const nDigests = Math.max(1, Math.floor(nSummaries / 10));
  const warmupCount = 10;
  const { vault, cleanup } = await scratchVault('provregen');
  try {
    // ---- entries
    progress(`provenance: appending ${subjects} x ${perSubject} entries`);
    const entryIds: string[][] = Array.from({ length: subjects }, () => []);
    const entryTexts = new Map<string, string>();
    const a0 = performance.now();
    for (let k = 0; k < perSubject; k++) {
      for (let s = 0; s < subjects; s++) {
        const text = entryText(s, k);
        const { entryId } = await vault.log.append(`bench-regen-${subjectTag(s)}`, { text }, 'bench');
        entryIds[s]!.push(entryId);
        entryTexts.set(entryId, text);
      }
    }
    const appendSeconds = (performance.now() - a0) / 1000;

    /** Summary i cites one entry of each of 5 different subjects: (i + 4k) mod 20. */
    const summarySources = (i: number) => Array.from({ length: 5 }, (_, k) => entryIds[(i + 4 * k) % subjects]![(i * 7 + k) % perSubject]!);
    const summaryText = (i: number, sources: string[]) =>
      `Summary ${i}. ${sources.map((id) => entryTexts.get(id)!.split('. ')[0]).join('. ')}. Written by the benchmark.`;

    // ---- warm-up (unmeasured): writes and a regeneration, sources from subjects 1..19 only
    const warm: string[] = [];
    for (let i = 0; i < warmupCount; i++) {
      const sources = Array.from({ length: 5 }, (_, k) => entryIds[1 + ((i + k) % (subjects - 1))]![i % perSubject]!);
      warm.push((await vault.artifacts.write({ kind: 'summary', text: summaryText(i, sources), sources }, 'bench')).artifactId);
    }
    await vault.artifacts.regenerate(warm, { actor: 'bench' });

    // ---- writes: the baseline
    progress(`provenance: writing ${nSummaries} summaries + ${nDigests} digests, one at a time`);
    const summaries: string[] = [];
    const digests: string[] = [];
    const latencies: number[] = [];
    const cpu0 = process.cpuUsage();
    const w0 = performance.now();
    for (let i = 0; i < nSummaries; i++) {
      const sources = summarySources(i);
      const s = performance.now();
      const r = await vault.artifacts.write({ kind: 'summary', text: summaryText(i, sources), sources }, 'bench');
      latencies.push(performance.now() - s);
      summaries.push(r.artifactId);
    }
    const wSummaries = (performance.now() - w0) / 1000;
    const d0 = performance.now();
    for (let d = 0; d < nDigests; d++) {
      const sources = Array.from({ length: 5 }, (_, k) => summaries[(d * 10 + 2 * k) % nSummaries]!);
      const s = performance.now();
      const r = await vault.artifacts.write({ kind: 'digest', text: `Digest ${d}: ${words(20)}.`, sources }, 'bench');
      latencies.push(performance.now() - s);
      digests.push(r.artifactId);
    }
    const wDigests = (performance.now() - d0) / 1000;
    const writeSeconds = (performance.now() - w0) / 1000;
    const writeCpu = cpuSeconds(cpu0);
    const written = nSummaries + nDigests;
    const lat = stats(latencies, warmupCount);

    // ---- regeneration
    const excluded = entryIds[0]!;
    const excludedSet = new Set(excluded);
    const citing = Array.from({ length: nSummaries }, (_, i) => summarySources(i)).filter((srcs) => srcs.some((id) => excludedSet.has(id))).length;
    progress(
      `provenance: regenerating ${nSummaries} summaries (+ digests above them), excluding ${excluded.length} entries of ${subjectTag(0)} (cited by ${citing} summaries)`,
    );
    const rcpu0 = process.cpuUsage();
    const r0 = performance.now();
    const result = await vault.artifacts.regenerate(summaries, { excluding: excluded, actor: 'bench' });
    const regenSeconds = (performance.now() - r0) / 1000;
    const regenCpu = cpuSeconds(rcpu0);

    // ---- verification
    const measured = new Set([...summaries, ...digests]);
    const regeneratedIds = result.regenerated.map((r) => r.artifactId);
    const everyArtifactOnce =
      regeneratedIds.length === measured.size &&
      new Set(regeneratedIds).size === measured.size &&
      regeneratedIds.every((id) => measured.has(id)) &&
      result.removed.length === 0;
    const allAtVersion2 = result.regenerated.every((r) => r.version === 2);
    const stillCiting = (await touchingRecords(vault.db.db, excluded)).filter((t) => measured.has(t.artifactId)).length;
    const texts = await vault.artifacts.readMany([...measured]);
    const tag = subjectTag(0);
    const withExcluded = [...texts.values()].filter((t) => t.text.includes(tag)).length + (measured.size - texts.size);
    const verification = {
      everyArtifactOnce,
      stillCitingExcluded: stillCiting,
      textsWithExcludedSubject: withExcluded,
      allAtVersion2,
      ok: everyArtifactOnce && allAtVersion2 && stillCiting === 0 && withExcluded === 0,
    };
    const writePerSec = written / writeSeconds;
    const regenPerSec = result.regenerated.length / regenSeconds;
    progress(
      `provenance: writes ${fmtNum(writePerSec, 1)}/s, regenerations ${fmtNum(regenPerSec, 1)}/s (${result.regenerated.length} in ${fmtSeconds(regenSeconds)}), ` +
        `verification ${verification.ok ? 'ok' : 'FAILED'}`,
    );
    return {
      subjects,
      entriesPerSubject: perSubject,
      summaries: nSummaries,
      digests: nDigests,
      sourcesPerArtifact: 5,
      append: { entries: subjects * perSubject, seconds: appendSeconds, perSec: (subjects * perSubject) / appendSeconds },
      write: {
        artifacts: written,
        seconds: writeSeconds,
        perSec: writePerSec,
        summariesPerSec: nSummaries / wSummaries,
        digestsPerSec: nDigests / wDigests,
        p50Ms: lat.medianMs,
        p95Ms: lat.p95Ms,
        cpuSeconds: writeCpu,
      },
      regenerate: {
        requested: nSummaries,
        excludedEntries: excluded.length,
        summariesCitingExcluded: citing,
        regenerated: result.regenerated.length,
        removed: result.removed.length,
        seconds: regenSeconds,
        perSec: regenPerSec,
        cpuSeconds: regenCpu,
        generator: vault.artifacts.regenerator.name,
      },
      ratio: regenPerSec / writePerSec,
      verification,
    };
  } finally {
    await cleanup();
  }
}

// ------------------------------------------------------------------ orchestration

export async function runProvenance(): Promise<ProvenanceResult> {
  const smallEdges = envInt('BENCH_PROVENANCE_SMALL', 10_000, 1_000);
  const largeEdges = envInt('BENCH_PROVENANCE_LARGE', byMode({ quick: 100_000, normal: 250_000, full: 1_000_000 }), 1_000);
  const runs = envInt('BENCH_PROVENANCE_RUNS', 50, 5);
  const warnings: string[] = [];

  const { vault, db, cleanup } = await scratchVault('provenance');
  let small: TouchingRun;
  let large: TouchingRun;
  const pg = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    small = await measureTouching(vault, pg, smallEdges, runs);
    large = await measureTouching(vault, pg, largeEdges, runs);
  } finally {
    await pg.end({ timeout: 5 });
    await cleanup();
  }
  // a whole-table scan in the small graph is the planner's cheaper choice for a small table;
  // in the large one it would mean the query's cost follows the size of the store
  if (large.plan.seqScans.length > 0) warnings.push(`the plan at ${fmtInt(large.edges)} edges reads whole tables: ${large.plan.seqScans.join(', ')}`);

  const regeneration = await measureRegeneration();
  if (!regeneration.verification.ok) warnings.push(`regeneration verification FAILED: ${JSON.stringify(regeneration.verification)}`);

  const target = 2;
  const ratio = large.query.medianMs / small.query.medianMs;
  const indexPathRatio = small.indexPathQuery && large.plan.seqScans.length === 0 ? large.query.medianMs / small.indexPathQuery.medianMs : null;
  const sizes = `${fmtInt(largeEdges)} ÷ ${fmtInt(smallEdges)} edges`;
  const aims = [aim(`provenance touching query median, ${sizes}`, ratio, `<= ${target}`, ratio <= target)];
  if (indexPathRatio !== null) aims.push(aim(`  same, index path on both, ${sizes}`, indexPathRatio, `<= ${target}`, indexPathRatio <= target));
  return {
    touching: {
      small,
      large,
      ratio,
      p95Ratio: large.query.p95Ms / small.query.p95Ms,
      indexPathRatio,
      target,
      expected: EXPECTED_TOUCHING,
    },
    regeneration,
    aims,
    valid: regeneration.verification.ok,
    warnings,
  };
}

export function formatProvenance(r: ProvenanceResult): string {
  const t = r.touching;
  const row = (x: TouchingRun) => [
    fmtInt(x.edges),
    fmtInt(x.entries),
    fmtInt(x.subjects),
    fmtInt(x.artifacts),
    `${fmtNum(x.provenanceBytes / 2 ** 20, 1)} MiB`,
    fmtSeconds(x.loadSeconds + x.vacuumAnalyzeSeconds),
    fmtNum(x.query.medianMs, 2),
    fmtNum(x.query.p95Ms, 2),
    `${fmtNum(x.query.minMs, 2)} / ${fmtNum(x.query.maxMs, 2)}`,
    fmtNum(x.roundTrip.medianMs, 2),
    `${x.returned} (${x.depth1}+${x.depth2})`,
    fmtNum(x.plan.executionMs, 2),
    `${fmtInt(x.plan.sharedHit)} / ${fmtInt(x.plan.sharedRead)}`,
  ];
  const g = r.regeneration;
  const lines = [
    `touchingSubject(subject feeding ${t.expected} artifacts: 80 summaries at depth 1, 20 digests at depth 2), ` +
      `${t.large.query.runs} sequential runs after ${t.large.query.warmups} warm-up calls, through the vault's database handle`,
    table(
      [
        'edges',
        'entries',
        'subjects',
        'artifacts',
        'provenance size',
        'load+vacuum',
        'median ms',
        'p95 ms',
        'min / max ms',
        'select 1 ms',
        'returned',
        'EXPLAIN exec ms',
        'buffers hit / read',
      ],
      [row(t.small), row(t.large)],
    ),
    `median ${fmtInt(t.large.edges)} ÷ ${fmtInt(t.small.edges)} edges = ${fmtRatio(t.ratio)} (p95 ${fmtRatio(t.p95Ratio)}); ` +
      `aim <= ${t.target}: ${t.ratio <= t.target ? 'met' : 'NOT met'}`,
    ...(t.small.indexPathQuery && t.indexPathRatio !== null
      ? [
          `at ${fmtInt(t.small.edges)} edges the planner hashes the whole provenance table (its estimate for a small table); forced onto the index path ` +
            `(enable_seqscan off) the same call takes median ${fmtNum(t.small.indexPathQuery.medianMs, 2)} ms, p95 ${fmtNum(t.small.indexPathQuery.p95Ms, 2)} ms: ` +
            `index path to index path, ${fmtInt(t.large.edges)} ÷ ${fmtInt(t.small.edges)} edges = ${fmtRatio(t.indexPathRatio)} ` +
            `(aim <= ${t.target}: ${t.indexPathRatio <= t.target ? 'met' : 'NOT met'})`,
        ]
      : []),
    ...[t.small, t.large].flatMap((x) => [
      `EXPLAIN (ANALYZE, BUFFERS) at ${fmtInt(x.edges)} edges: planning ${fmtNum(x.plan.planningMs, 2)} ms, execution ${fmtNum(x.plan.executionMs, 2)} ms, ` +
        `${fmtInt(x.plan.rows)} rows, shared buffers hit ${fmtInt(x.plan.sharedHit)} read ${fmtInt(x.plan.sharedRead)}; ` +
        `whole-table scans: ${x.plan.seqScans.length ? x.plan.seqScans.join(', ') : 'none'}`,
      ...x.plan.outline.map((l) => `    ${l}`),
      ...(x.indexPlan
        ? [
            `  same query with enable_seqscan off at ${fmtInt(x.edges)} edges (index path, for comparison): execution ${fmtNum(x.indexPlan.executionMs, 2)} ms, ` +
              `shared buffers hit ${fmtInt(x.indexPlan.sharedHit)} read ${fmtInt(x.indexPlan.sharedRead)}` +
              (x === t.small && t.large.plan.seqScans.length === 0
                ? `; EXPLAIN execution ${fmtInt(t.large.edges)} ÷ ${fmtInt(x.edges)} edges, both on index paths = ${fmtRatio(t.large.plan.executionMs / x.indexPlan.executionMs)}`
                : ''),
          ]
        : []),
    ]),
    '',
    `Regeneration with the built-in regenerator (${g.regenerate.generator}): ${g.subjects} subjects x ${g.entriesPerSubject} entries, ` +
      `${fmtInt(g.summaries)} summaries citing ${g.sourcesPerArtifact} entries + ${fmtInt(g.digests)} digests citing ${g.sourcesPerArtifact} summaries; one at a time`,
    table(
      ['operation', 'artifacts', 'seconds', 'artifacts/s', 'CPU s', 'note'],
      [
        [
          'vault.artifacts.write (baseline)',
          fmtInt(g.write.artifacts),
          fmtNum(g.write.seconds, 2),
          fmtNum(g.write.perSec, 1),
          fmtNum(g.write.cpuSeconds, 1),
          `summaries ${fmtNum(g.write.summariesPerSec, 1)}/s, digests ${fmtNum(g.write.digestsPerSec, 1)}/s; p50 ${fmtNum(g.write.p50Ms, 1)} ms, p95 ${fmtNum(g.write.p95Ms, 1)} ms`,
        ],
        [
          'vault.artifacts.regenerate',
          fmtInt(g.regenerate.regenerated),
          fmtNum(g.regenerate.seconds, 2),
          fmtNum(g.regenerate.perSec, 1),
          fmtNum(g.regenerate.cpuSeconds, 1),
          `${fmtInt(g.regenerate.requested)} summaries asked, digests cascaded; ${g.regenerate.excludedEntries} entries excluded ` +
            `(cited by ${g.regenerate.summariesCitingExcluded} summaries); ${g.regenerate.removed} removed`,
        ],
      ],
    ),
    `regenerations/s ÷ writes/s = ${fmtRatio(g.ratio)}; appends (setup) ${fmtNum(g.append.perSec, 1)} entries/s`,
    `verified: every artifact regenerated once at version 2: ${g.verification.everyArtifactOnce && g.verification.allAtVersion2 ? 'yes' : 'NO'}; ` +
      `still citing an excluded entry: ${g.verification.stillCitingExcluded}; texts holding subject 0's sentences: ${g.verification.textsWithExcludedSubject}`,
    formatAims(r.aims),
  ];
  for (const w of r.warnings) lines.push(`WARNING: ${w}`);
  return lines.join('\n');
}

await runIfMain(import.meta.url, runProvenance, formatProvenance);

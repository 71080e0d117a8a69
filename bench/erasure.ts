/**
 * Erasure: how long one subject's erasure takes (request → settled), in a store of
 * BENCH_ERASURE_SMALL entries (default 10,000) and in one of BENCH_ERASURE_LARGE
 * entries (default 1,000,000; 100,000 when quick), against a scan-and-delete baseline
 * measured over the same store. Aim: large ÷ small <= 2 — an erasure's cost follows
 * what the subject touched, not the size of the store.
 *
 * Two stores, each on its own fresh lethe_bench_* database and data directory
 * (scratchVault: real PostgreSQL, migrations run, the local filesystem object store —
 * the store provenance.ts uses; no MinIO, whose per-object HTTP round trips would
 * dominate the thousands of setup writes), each with its vault opened in this process
 * with no listener, no search-index rebuild and no erasure worker (the engine still
 * runs an erasure in the background as soon as it is requested: ErasureEngine.request
 * kicks a drain; vault.erasures.settle(id) waits for it). Both stores are prepared
 * (1, 2) and stay open; every measured phase (3, 4) then alternates between them —
 * small, large, small, large... — so other work on a shared machine weighs on both
 * sizes alike.
 *
 *   1. bulk     the store's other subjects, loaded straight into PostgreSQL with
 *               set-based SQL (generate_series): log_entries rows (~50 per subject,
 *               scattered md5 ids, segment names of objects that do not exist), one
 *               subject_keys row per bulk subject (a dummy 16-byte wrapped DEK), one
 *               embeddings row per bulk entry (a dummy 16-byte `sealed`, where a real
 *               one is ~620 B), and one bulk summary per 10 bulk entries citing 5 of
 *               them (provenance edges; an artifacts row at version 2 with its
 *               artifact_keys row — a dummy wrapped key — and no object), whose
 *               version-1 key was destroyed when it was regenerated (a destruction_ledger
 *               row, already copied to the backup bucket: a ledger_exports row;
 *               BENCH_ERASURE_LEDGER_HISTORY=0 leaves this history out). These
 *               rows need no objects and no real keys: an erasure never reads another
 *               subject's rows — it reaches the subject's entries through its key
 *               (log_entries_key_seq) and subject hash (log_entries_subject), and the
 *               artifacts above them through provenance_source — so the bulk only makes
 *               the tables and their indexes as large as the store's. (Not bulk-loaded:
 *               audit_log and backups, which the erasure reads by key id or not at all.)
 *               What the bulk does NOT make as large as the store's is the in-memory
 *               vector index (see 5).
 *   2. service  through the real services, so their objects, keys and embeddings exist:
 *               a pool of neighbour subjects (20 x 25 entries; 10 x 10 when quick);
 *               BENCH_ERASURE_SUBJECTS measured subjects (default 3) and as many
 *               baseline subjects, each with BENCH_ERASURE_ENTRIES entries (default
 *               1,000; 100 when quick) through vault.log.append (one segment object
 *               per entry), BENCH_ERASURE_ARTIFACTS summaries (default 100; 10 when
 *               quick) through vault.artifacts.write, summary i citing the subject's
 *               entries [i*k, (i+1)*k) (k = entries ÷ summaries: every entry cited once)
 *               plus 5 neighbour entries, and its text carrying the first sentence of
 *               each cited entry; and ceil(summaries / 10) digests above them, each
 *               citing 10 of the subject's summaries. Each subject has its own
 *               artifacts: erasing one never regenerates another's. Then a warm-up
 *               subject (a tenth of the shape) for an unmeasured warm-up erasure (run in
 *               each store before the measured ones). VACUUM ANALYZE after the bulk load
 *               and again after the warm-up erasure (a live store's tables would have
 *               been by autovacuum).
 *   3. erasure  for each measured subject, one at a time: vault.erasures.request(...)
 *               then vault.erasures.settle(id) — wall time from the request call until
 *               settle returns (settle polls every 50 ms), and the engine's own time
 *               (created_at → finished_at). The per-step times come from the view's
 *               steps (startedAt/finishedAt); "between steps" is the rest (claiming,
 *               checkpoints, the commits that record each step). Each erasure must end
 *               `completed` with the subject's artifacts all regenerated; between
 *               erasures the benchmark waits until the database is idle (the
 *               regenerations' background backup propagations). Whole-table scans: the
 *               per-table seq_scan / seq_tup_read counters of pg_stat_user_tables, read
 *               at least 11 s (BENCH_ERASURE_STATS_WAIT_MS) after the database went quiet
 *               (PostgreSQL 15 flushes an idle backend's counters within 10 s; the pauses
 *               overlap the VACUUM ANALYZE before and the in-memory step 5 after) before
 *               the first and after the last measured erasure, divided by the number of
 *               erasures. BENCH_ERASURE_AUTO_EXPLAIN=<ms> (diagnosis only) makes the
 *               scratch database's sessions log, through auto_explain, the plan of every
 *               statement slower than that to the server log.
 *   4. baseline scan-and-delete, on the baseline subjects (same shape, same store), one
 *               at a time: what erasing a subject costs in a store that has no index
 *               leading to a subject's content (no subject index on the log, no
 *               source → artifact index on provenance) and no per-subject key to
 *               destroy — the naive `DELETE ... WHERE user_id = ?`. In one transaction,
 *               with index scans turned off (SET LOCAL enable_indexscan,
 *               enable_bitmapscan, enable_indexonlyscan = off) for the statements that
 *               must find the content: `delete from log_entries where subject_hash = $1
 *               returning entry_id, segment` (a sequential scan of log_entries), then,
 *               level by level until nothing more is found, `delete from provenance
 *               where source_id in (<what was deleted>) returning artifact_id` (a
 *               sequential scan of provenance per level: summaries, then the digests
 *               above them); then, with index scans back on (primary keys a naive store
 *               has too), the artifacts' rows, their remaining edges, the entries' and
 *               artifacts' embeddings and artifact keys; commit; then every deleted
 *               entry's segment object and every deleted artifact's object through
 *               vault.objects.delete, 8 at a time. It deletes the derived artifacts
 *               instead of regenerating them, and writes no ledger, audit row,
 *               certificate or probe: it is the cost of finding and deleting, nothing
 *               more. The plan of the two scanning statements is captured (EXPLAIN in
 *               the same transaction) and must be a Seq Scan.
 *   5. probe at store scale  the engine's probe step runs one exact nearest-neighbour
 *               search over the whole in-memory vector index per fingerprinted record,
 *               at most PROBE_MAX_QUERIES of them (evenly spread)
 *               (src/erasure/steps/probe.ts → VectorIndex.neighbours, brute force, O(n·d)
 *               per query). In 3 that index holds only the vectors written through the
 *               service in this process (the same few thousand at both sizes); a real
 *               store holds one per entry and live artifact. So, separately: a
 *               VectorIndex (the same class) filled with one random unit vector per
 *               entry and live artifact of the store, timed on BENCH_ERASURE_PROBE_QUERIES
 *               searches (k = VECTOR_LIMIT, the probe's adaptive k at its ceiling) with the embeddings of a measured subject's
 *               texts, and the same searches on the vault's own index; the probe's extra
 *               cost at store scale is projected as the searches run x (the
 *               difference per search). Exact brute force is linear in the vectors, so
 *               the projection is arithmetic, not a guess; it is labelled as one.
 *               BENCH_ERASURE_PROBE_SCALE=0 skips it (it needs ~2.3 GB at 1,000,000). It
 *               runs after the measured erasures, before the baseline.
 *   6. idle drain  in the small store, last: vault.erasures.drain() with nothing to
 *               claim (median of 10), with this run's provisional certificates and after
 *               copying one finished erasure's row to 100 provisional ones in SQL (new ids
 *               and subject hashes). Every drain — the worker's poll, and every 50 ms poll
 *               of settle, so also during the measured erasures — may look at the
 *               provisional certificates (ErasureEngine.finalizeCertificates, up to 100
 *               rows and 2 queries each, now only after an epoch retired): the figure
 *               shows whether an idle poll grows with them.
 *
 * Everything runs in this one process except PostgreSQL, on the same machine.
 */
import { randomBytes } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import postgres from 'postgres';
import { VectorIndex } from '../src/vectors/vector-index.js';
import { PROBE_MAX_QUERIES, VECTOR_LIMIT } from '../src/erasure/probe.js';
import type { ErasureView } from '../src/erasure/view.js';
import type { App } from '../src/app/open.js';
import {
  envInt,
  fmtInt,
  fmtNum,
  fmtRatio,
  fmtSeconds,
  median,
  PG_ADMIN_URL,
  progress,
  QUICK,
  runIfMain,
  type ScratchVault,
  scratchVault,
  sleep,
  table,
} from './lib.js';

// ------------------------------------------------------------------ result types

export interface StepTiming {
  readonly name: string;
  readonly status: string;
  readonly ms: number | null;
  readonly detail?: string;
}

export interface ErasureSample {
  readonly subject: string;
  readonly erasureId: string;
  readonly status: string;
  readonly class: string | null;
  /** From the request call until settle returned. */
  readonly wallMs: number;
  /** The engine's created_at → finished_at. */
  readonly engineMs: number;
  readonly steps: StepTiming[];
  /** engineMs − the sum of the steps: claiming, checkpoints, step commits. */
  readonly betweenStepsMs: number;
  readonly fingerprinted: number;
  readonly artifactsTouching: number;
  readonly regenerated: number;
  readonly removed: number;
  readonly probeRecovered: number;
  readonly probeMatches: number;
  /** Vectors in the vault's in-memory index when the erasure was requested. */
  readonly indexVectors: number;
  /** The longest the event loop was held (perf_hooks.monitorEventLoopDelay, max) while the erasure ran. */
  readonly eventLoopMaxMs: number;
  readonly ok: boolean;
}

export interface TableScans {
  readonly table: string;
  readonly rows: number;
  /** Per measured erasure (mean over them). */
  readonly seqScans: number;
  readonly seqTupRead: number;
  readonly idxScans: number;
}

export interface BaselineSample {
  readonly subject: string;
  readonly ms: number;
  /** find + delete rows (the transaction, commit included). */
  readonly rowsMs: number;
  readonly objectsMs: number;
  readonly entries: number;
  readonly artifacts: number;
  readonly edges: number;
  readonly embeddings: number;
  readonly objects: number;
  /** Provenance scans (levels) until nothing more was found. */
  readonly levels: number;
  readonly logEntriesScan: string;
  readonly provenanceScan: string;
}

export interface ProbeAtScale {
  readonly storeVectors: number;
  readonly fillSeconds: number;
  readonly queries: number;
  readonly storeIndexMedianMs: number;
  readonly vaultIndexVectors: number;
  readonly vaultIndexMedianMs: number;
  /** Median fingerprinted records of the measured erasures (one search each). */
  readonly fingerprinted: number;
  /** Index searches the probe runs: min(fingerprinted, PROBE_MAX_QUERIES). */
  readonly searches: number;
  /** searches x storeIndexMedianMs. */
  readonly projectedProbeSearchMs: number;
  /** The measured median erasure + fingerprinted x (store − vault index per-search ms). */
  readonly projectedErasureMs: number;
}

/**
 * What an erasure worker's drain costs when there is nothing to claim: a drain (the
 * worker's poll, and every 50 ms poll of settle) may also re-check the provisional
 * certificates (ErasureEngine.finalizeCertificates).
 */
export interface IdleDrain {
  /** Provisional certificates left by this run's erasures in the store. */
  readonly provisional: number;
  /** Mean stored size of an erasure row's state and certificate (pg_column_size). */
  readonly stateBytes: number;
  readonly certificateBytes: number;
  readonly medianMs: number;
  /** The same after copying those rows to `syntheticProvisional` provisional erasures (new ids and subject hashes). */
  readonly syntheticProvisional: number;
  readonly syntheticMedianMs: number;
}

export interface SizeRun {
  readonly targetEntries: number;
  readonly counts: {
    readonly entries: number;
    readonly subjects: number;
    readonly artifacts: number;
    readonly edges: number;
    readonly embeddings: number;
    readonly subjectKeys: number;
  };
  readonly bytes: { readonly logEntries: number; readonly provenance: number; readonly embeddings: number };
  readonly bulk: { readonly entries: number; readonly subjects: number; readonly artifacts: number; readonly seconds: number };
  readonly service: { readonly entries: number; readonly artifacts: number; readonly seconds: number };
  readonly vacuumAnalyzeSeconds: number;
  readonly warmup: ErasureSample;
  readonly erasures: ErasureSample[];
  readonly medianWallMs: number;
  readonly medianEngineMs: number;
  /** The erasure whose wall time is the median: its steps are the ones printed. */
  readonly medianSample: ErasureSample;
  /** Per-step median over the measured erasures. */
  readonly stepMedians: Array<{ name: string; ms: number }>;
  readonly scans: TableScans[];
  readonly baseline: BaselineSample[];
  readonly baselineMedianMs: number;
  /** medianWallMs ÷ baselineMedianMs. */
  readonly ratioToBaseline: number;
  readonly probeAtScale: ProbeAtScale | null;
}

export interface ErasureResult {
  readonly shape: {
    readonly subjects: number;
    readonly entriesPerSubject: number;
    readonly summariesPerSubject: number;
    readonly digestsPerSubject: number;
    readonly entriesPerSummary: number;
    readonly neighbourEntriesPerSummary: number;
    readonly neighbours: { readonly subjects: number; readonly entriesEach: number };
    /** Whether the bulk holds a destroyed (and exported) version-1 key per bulk summary. */
    readonly ledgerHistory: boolean;
  };
  readonly small: SizeRun;
  readonly large: SizeRun;
  /** large.medianWallMs ÷ small.medianWallMs. */
  readonly ratio: number;
  readonly engineRatio: number;
  readonly target: number;
  /** Projected with a store-scale vector index (null when skipped). */
  readonly projectedRatio: number | null;
  /** Measured in the small store after everything else. */
  readonly idleDrain: IdleDrain | null;
  readonly valid: boolean;
  readonly warnings: string[];
}

// ------------------------------------------------------------------ settings

const SMALL = envInt('BENCH_ERASURE_SMALL', 10_000, 1_000);
const LARGE = envInt('BENCH_ERASURE_LARGE', QUICK ? 100_000 : 1_000_000, 1_000);
const SUBJECTS = envInt('BENCH_ERASURE_SUBJECTS', 3, 1);
const ENTRIES = envInt('BENCH_ERASURE_ENTRIES', QUICK ? 100 : 1_000, 10);
const SUMMARIES = envInt('BENCH_ERASURE_ARTIFACTS', QUICK ? 10 : 100, 1);
const DIGESTS = Math.ceil(SUMMARIES / 10);
const PER_SUMMARY = Math.max(1, Math.floor(ENTRIES / SUMMARIES));
const NEIGHBOUR_CITES = 5;
const NEIGHBOUR_SUBJECTS = QUICK ? 10 : 20;
const NEIGHBOUR_ENTRIES = QUICK ? 10 : 25;
const BULK_PER_SUBJECT = 50;
const STATS_WAIT_MS = envInt('BENCH_ERASURE_STATS_WAIT_MS', 11_000, 0);
const PROBE_SCALE = process.env.BENCH_ERASURE_PROBE_SCALE !== '0';
/** BENCH_ERASURE_LEDGER_HISTORY=0: no destroyed version-1 keys in the bulk (for attributing the ledger export's cost). */
const LEDGER_HISTORY = process.env.BENCH_ERASURE_LEDGER_HISTORY !== '0';
const APPEND_CONCURRENCY = 8;
const WRITE_CONCURRENCY = 4;
const SETTLE_TIMEOUT_MS = 60 * 60 * 1000;
/** The probe's vector neighbours per query: its adaptive k's ceiling (VECTOR_LIMIT in src/erasure/probe.ts), the most one search keeps. */
const PROBE_K = VECTOR_LIMIT;

// ------------------------------------------------------------------ helpers

function int(n: number): string {
  if (!Number.isSafeInteger(n)) throw new Error(`not an integer: ${n}`);
  return String(n);
}

/** Runs fn(0..count-1) with at most `limit` in flight. */
async function pool(count: number, limit: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, count) }, async () => {
      while (next < count) await fn(next++);
    }),
  );
}

const LETTERS = 'abcdefghijklmnopqrstuvwxyz';

/** Pseudo-words (4–9 random letters): texts of different subjects share no wording. */
function words(n: number): string {
  const raw = randomBytes(n * 10);
  const out: string[] = [];
  for (let w = 0; w < n; w++) {
    const len = 4 + (raw[w * 10]! % 6);
    let s = '';
    for (let i = 1; i <= len; i++) s += LETTERS[raw[w * 10 + i]! % 26];
    out.push(s);
  }
  return out.join(' ');
}

/** Three sentences; the first names the subject and the entry. */
function entryText(label: string, k: number): string {
  return `Note ${k} of ${label} says ${words(7)}. It adds ${words(9)}. Then ${words(8)}.`;
}

const firstSentence = (text: string) => text.split('. ')[0]!.replace(/\.$/, '') + '.';

interface WrittenSubject {
  readonly label: string;
  readonly subject: string;
  readonly entryIds: string[];
  readonly summaryIds: string[];
  readonly digestIds: string[];
}

async function appendAll(vault: App, subject: string, label: string, count: number, texts?: Map<string, string>): Promise<string[]> {
  const ids = new Array<string>(count);
  // the first append creates the subject's key; the rest may run side by side
  const first = entryText(label, 0);
  ids[0] = (await vault.log.append(subject, { text: first }, 'bench')).entryId;
  texts?.set(ids[0], first);
  await pool(count - 1, APPEND_CONCURRENCY, async (j) => {
    const text = entryText(label, j + 1);
    const { entryId } = await vault.log.append(subject, { text }, 'bench');
    ids[j + 1] = entryId;
    texts?.set(entryId, text);
  });
  return ids;
}

/**
 * A subject of the measured shape: `entries` entries, `summaries` summaries each
 * citing `perSummary` of its entries (every entry once) + NEIGHBOUR_CITES neighbour
 * entries, and ceil(summaries / 10) digests each citing up to 10 of its summaries.
 */
async function writeSubject(
  vault: App,
  label: string,
  shape: { entries: number; summaries: number; perSummary: number },
  neighbours: { ids: string[]; texts: Map<string, string> },
): Promise<WrittenSubject> {
  const subject = `bench-erasure-${label}`;
  const texts = new Map<string, string>();
  const entryIds = await appendAll(vault, subject, label, shape.entries, texts);
  const summaryIds = new Array<string>(shape.summaries);
  const summaryTexts = new Array<string>(shape.summaries);
  await pool(shape.summaries, WRITE_CONCURRENCY, async (i) => {
    const own = entryIds.slice(i * shape.perSummary, (i + 1) * shape.perSummary);
    const seed = randomBytes(4).readUInt32BE(0);
    const others = Array.from({ length: NEIGHBOUR_CITES }, (_, j) => neighbours.ids[(seed + j * 7919) % neighbours.ids.length]!);
    const sources = [...new Set([...own, ...others])];
    const text =
      `Summary ${i} of ${label}. ` +
      [...own.map((id) => firstSentence(texts.get(id)!)), ...others.map((id) => firstSentence(neighbours.texts.get(id)!))].join(' ');
    summaryTexts[i] = text;
    summaryIds[i] = (await vault.artifacts.write({ kind: 'summary', text, sources }, 'bench')).artifactId;
  });
  const nDigests = Math.ceil(shape.summaries / 10);
  const digestIds = new Array<string>(nDigests);
  await pool(nDigests, WRITE_CONCURRENCY, async (d) => {
    const cited = summaryIds.slice(d * 10, (d + 1) * 10);
    const text = `Digest ${d} of ${label}. ` + summaryTexts.slice(d * 10, (d + 1) * 10).map((t) => t.split('. ')[1] ?? '').join('. ');
    digestIds[d] = (await vault.artifacts.write({ kind: 'digest', text, sources: cited }, 'bench')).artifactId;
  });
  return { label, subject, entryIds, summaryIds, digestIds };
}

/** Waits until no other backend of this database is running a statement (background propagations). */
export async function quiesce(pg: postgres.Sql): Promise<void> {
  const deadline = Date.now() + 60_000;
  let calm = 0;
  while (Date.now() < deadline && calm < 3) {
    await sleep(150);
    const [r] = await pg<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
       where datname = current_database() and pid <> pg_backend_pid() and state not in ('idle')`;
    calm = r && r.n === 0 ? calm + 1 : 0;
  }
}

interface StatRow {
  relname: string;
  seq_scan: string;
  seq_tup_read: string;
  idx_scan: string | null;
  n_live_tup: string;
}

async function tableStats(pg: postgres.Sql): Promise<Map<string, StatRow>> {
  await pg`select pg_stat_clear_snapshot()`;
  const rows = await pg<StatRow[]>`
    select relname, seq_scan::text, seq_tup_read::text, idx_scan::text, n_live_tup::text from pg_stat_user_tables`;
  return new Map(rows.map((r) => [r.relname, r]));
}

const msBetween = (a?: string, b?: string) => (a && b ? new Date(b).getTime() - new Date(a).getTime() : null);

function countIn(detail: string | undefined, re: RegExp): number {
  const m = detail ? re.exec(detail) : null;
  return m ? Number(m[1]) : 0;
}

async function eraseOne(vault: App, pg: postgres.Sql, s: WrittenSubject, expectedArtifacts: number): Promise<ErasureSample> {
  const indexVectors = vault.vectors.index.size;
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const t0 = performance.now();
  const { erasureId } = await vault.erasures.request({ subject: s.subject, reason: 'benchmark', legalBasis: 'gdpr-art17' }, 'bench');
  const view: ErasureView = await vault.erasures.settle(erasureId, SETTLE_TIMEOUT_MS);
  const wallMs = performance.now() - t0;
  loop.disable();
  const [row] = await pg<{ ms: number }[]>`
    select extract(epoch from (finished_at - created_at)) * 1000 as ms from erasures where erasure_id = ${erasureId}`;
  const engineMs = Number(row?.ms ?? NaN);
  const steps: StepTiming[] = view.steps.map((st) => ({
    name: st.name,
    status: st.status,
    ms: msBetween(st.startedAt, st.finishedAt),
    ...(st.detail ? { detail: st.detail } : {}),
  }));
  const stepSum = steps.reduce((a, st) => a + (st.ms ?? 0), 0);
  const detail = (name: string) => view.steps.find((st) => st.name === name)?.detail;
  const touching = countIn(detail('classify'), /(\d+) derived artifact\(s\) touch/);
  const regenerated = countIn(detail('cascade'), /^(\d+) artifact\(s\) regenerated/);
  const removed = countIn(detail('cascade'), /, (\d+) removed/);
  const ok = view.status === 'completed' && touching === expectedArtifacts && regenerated === expectedArtifacts && removed === 0;
  return {
    subject: s.label,
    erasureId,
    status: view.status,
    class: view.class ?? null,
    wallMs,
    engineMs,
    steps,
    betweenStepsMs: engineMs - stepSum,
    fingerprinted: countIn(detail('fingerprint'), /^(\d+) record/),
    artifactsTouching: touching,
    regenerated,
    removed,
    probeRecovered: view.probe.recovered,
    probeMatches: view.probe.matches.length,
    indexVectors,
    eventLoopMaxMs: loop.max / 1e6,
    ok,
  };
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

/** The scan nodes of an EXPLAIN (FORMAT JSON) on `relation`, e.g. "Seq Scan". */
function scanOn(raw: unknown, relation: string): string {
  const doc = (Array.isArray(raw) ? raw[0] : raw) as { Plan: PlanNode };
  const found: string[] = [];
  const walk = (n: PlanNode) => {
    if (/Scan/.test(n['Node Type']) && n['Relation Name'] === relation) found.push(n['Index Name'] ? `${n['Node Type']} using ${n['Index Name']}` : n['Node Type']);
    for (const c of n.Plans ?? []) walk(c);
  };
  walk(doc.Plan);
  return found.join(', ') || 'none';
}

async function baselineOne(vault: App, pg: postgres.Sql, s: WrittenSubject): Promise<BaselineSample> {
  const hashHex = Buffer.from(vault.keys.subjectHash(s.subject)).toString('hex');
  const t0 = performance.now();
  const found = await pg.begin(async (tx) => {
    await tx.unsafe('set local enable_indexscan = off; set local enable_bitmapscan = off; set local enable_indexonlyscan = off');
    const [plan1] = await tx.unsafe<Array<{ 'QUERY PLAN': unknown }>>(
      `explain (format json) delete from log_entries where subject_hash = decode('${hashHex}', 'hex') returning entry_id, segment`,
    );
    const entries = await tx<{ entry_id: string; segment: string }[]>`
      delete from log_entries where subject_hash = decode(${hashHex}, 'hex') returning entry_id, segment`;
    const entryIds = entries.map((e) => e.entry_id);
    const [plan2] = await tx.unsafe<Array<{ 'QUERY PLAN': unknown }>>(
      `explain (format json) delete from provenance where source_id in (select json_array_elements_text($1::text::json)) returning artifact_id`,
      [JSON.stringify(entryIds.slice(0, 10))],
    );
    const artifactIds = new Set<string>();
    let frontier = entryIds;
    let edges = 0;
    let levels = 0;
    while (frontier.length > 0) {
      levels++;
      const rows = await tx<{ artifact_id: string }[]>`
        delete from provenance where source_id in (select json_array_elements_text(${JSON.stringify(frontier)}::text::json)) returning artifact_id`;
      edges += rows.length;
      frontier = [...new Set(rows.map((r) => r.artifact_id))].filter((id) => !artifactIds.has(id));
      for (const id of frontier) artifactIds.add(id);
    }
    await tx.unsafe('set local enable_indexscan = on; set local enable_bitmapscan = on; set local enable_indexonlyscan = on');
    const arts = JSON.stringify([...artifactIds]);
    const artifactRows = await tx<{ object: string | null }[]>`
      delete from artifacts where artifact_id in (select json_array_elements_text(${arts}::text::json)) returning object`;
    const more = await tx`delete from provenance where artifact_id in (select json_array_elements_text(${arts}::text::json))`;
    const emb = await tx`
      delete from embeddings where record_id in (select json_array_elements_text(${JSON.stringify([...entryIds, ...artifactIds])}::text::json))`;
    await tx`delete from artifact_keys where artifact_id in (select json_array_elements_text(${arts}::text::json))`;
    return {
      entries,
      artifactObjects: artifactRows.flatMap((r) => (r.object ? [r.object] : [])),
      artifacts: artifactRows.length,
      edges: edges + more.count,
      embeddings: emb.count,
      levels,
      logEntriesScan: scanOn(plan1?.['QUERY PLAN'], 'log_entries'),
      provenanceScan: scanOn(plan2?.['QUERY PLAN'], 'provenance'),
    };
  });
  const t1 = performance.now();
  const objects = [...new Set([...found.entries.map((e) => e.segment), ...found.artifactObjects])];
  await pool(objects.length, 8, async (i) => vault.objects.delete(objects[i]!));
  const t2 = performance.now();
  return {
    subject: s.label,
    ms: t2 - t0,
    rowsMs: t1 - t0,
    objectsMs: t2 - t1,
    entries: found.entries.length,
    artifacts: found.artifacts,
    edges: found.edges,
    embeddings: found.embeddings,
    objects: objects.length,
    levels: found.levels,
    logEntriesScan: found.logEntriesScan,
    provenanceScan: found.provenanceScan,
  };
}

/** xorshift32 random unit vectors into a VectorIndex of `n` vectors (capacity exact: no doubling). */
function filledIndex(dimensions: number, n: number): VectorIndex {
  const index = new VectorIndex(dimensions, n);
  const v = new Float32Array(dimensions);
  let x = 0x9e3779b9;
  for (let i = 0; i < n; i++) {
    let norm = 0;
    for (let j = 0; j < dimensions; j++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      const f = (x >>> 0) / 4294967296 - 0.5;
      v[j] = f;
      norm += f * f;
    }
    const inv = 1 / Math.sqrt(norm);
    for (let j = 0; j < dimensions; j++) v[j]! *= inv;
    index.upsert(`bench_${i}`, 'entry', `key_bench_${Math.floor(i / BULK_PER_SUBJECT)}`, v);
  }
  return index;
}

function timeSearches(index: VectorIndex, queries: Float32Array[]): number {
  index.search(queries[0]!, PROBE_K); // warm-up
  const times = queries.map((q) => {
    const s = performance.now();
    index.search(q, PROBE_K);
    return performance.now() - s;
  });
  return median(times);
}

async function probeAtScale(vault: App, storeVectors: number, texts: string[], fingerprinted: number, medianErasureMs: number): Promise<ProbeAtScale> {
  const nQueries = envInt('BENCH_ERASURE_PROBE_QUERIES', storeVectors >= 500_000 ? 5 : 20, 1);
  const queries = await vault.vectors.embedder.embed(texts.slice(0, nQueries));
  const vaultIndexVectors = vault.vectors.index.size;
  const vaultIndexMedianMs = timeSearches(vault.vectors.index, queries);
  progress(`erasure: filling a vector index of ${fmtInt(storeVectors)} vectors (${fmtNum((storeVectors * vault.vectors.embedder.dimensions * 4) / 2 ** 30, 2)} GiB)`);
  const f0 = performance.now();
  let index: VectorIndex | undefined = filledIndex(vault.vectors.embedder.dimensions, storeVectors);
  const fillSeconds = (performance.now() - f0) / 1000;
  const storeIndexMedianMs = timeSearches(index, queries);
  index.clear();
  index = undefined;
  // the probe queries the index with at most PROBE_MAX_QUERIES of the fingerprinted records
  const searches = Math.min(fingerprinted, PROBE_MAX_QUERIES);
  const projectedProbeSearchMs = searches * storeIndexMedianMs;
  return {
    storeVectors,
    fillSeconds,
    queries: queries.length,
    storeIndexMedianMs,
    vaultIndexVectors,
    vaultIndexMedianMs,
    fingerprinted,
    projectedProbeSearchMs,
    searches,
    projectedErasureMs: medianErasureMs + searches * Math.max(0, storeIndexMedianMs - vaultIndexMedianMs),
  };
}

async function timeDrains(vault: App, runs: number): Promise<number> {
  await vault.erasures.drain();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const s = performance.now();
    const ran = await vault.erasures.drain();
    times.push(performance.now() - s);
    if (ran !== 0) throw new Error('an idle drain claimed an erasure');
  }
  return median(times);
}

async function measureIdleDrain(vault: App, pg: postgres.Sql, target: number): Promise<IdleDrain> {
  const [c] = await pg<{ n: number; state: number; cert: number }[]>`
    select count(*)::int as n, coalesce(avg(pg_column_size(state)), 0)::float8 as state, coalesce(avg(pg_column_size(certificate)), 0)::float8 as cert
      from erasures where certificate_state = 'provisional'`;
  const provisional = c?.n ?? 0;
  const medianMs = await timeDrains(vault, 10);
  const [src] = await pg<{ erasure_id: string }[]>`
    select erasure_id from erasures where certificate_state = 'provisional' and status = 'completed' order by created_at desc limit 1`;
  if (src && target > provisional) {
    await pg`
      insert into erasures (erasure_id, subject_hash, status, class, step, legal_basis, unlearning, seal_key_id, sealed_request, sealed_fingerprints,
                            state, certificate, certificate_state, attempts, last_error, claimed_by, claimed_until, not_before, created_at, updated_at, finished_at)
      select 'ers_' || substr(md5('bench-ers-' || g), 1, 22), sha256(convert_to('bench-ers-' || g, 'UTF8')), status, class, step, legal_basis, unlearning,
             seal_key_id, sealed_request, sealed_fingerprints, state, certificate, certificate_state, attempts, last_error, null, null,
             not_before, created_at, updated_at, finished_at
        from erasures, generate_series(1, ${target - provisional}) g
       where erasure_id = ${src.erasure_id}`;
  }
  const syntheticMedianMs = await timeDrains(vault, 10);
  return { provisional, stateBytes: c?.state ?? 0, certificateBytes: c?.cert ?? 0, medianMs, syntheticProvisional: Math.max(target, provisional), syntheticMedianMs };
}

// ------------------------------------------------------------------ one store size

const BULK_TABLES = ['log_entries', 'embeddings', 'subject_keys', 'artifacts', 'artifact_keys', 'provenance', 'destruction_ledger', 'ledger_exports'];

/**
 * scratchVault's store (fresh database, local filesystem objects, no listener, no
 * search-index rebuild, no erasure worker). BENCH_ERASURE_AUTO_EXPLAIN=<ms>, for
 * diagnosis only: the database's sessions load auto_explain and log the plan of every
 * statement slower than that to the server log (set before the vault connects).
 */
async function openStore(label: string): Promise<ScratchVault> {
  const explainMs = process.env.BENCH_ERASURE_AUTO_EXPLAIN;
  if (!explainMs) return scratchVault(label);
  if (!/^\d+$/.test(explainMs)) throw new Error('BENCH_ERASURE_AUTO_EXPLAIN must be a number of milliseconds');
  const store = await scratchVault(label, {
    beforeOpen: async (db) => {
      const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} });
      try {
        await admin.unsafe(`alter database ${db.name} set session_preload_libraries = 'auto_explain'`);
        await admin.unsafe(`alter database ${db.name} set auto_explain.log_min_duration = '${explainMs}ms'`);
      } finally {
        await admin.end({ timeout: 5 });
      }
    },
  });
  progress(`erasure: auto_explain on for ${store.db.name} (statements over ${explainMs} ms, server log)`);
  return store;
}

async function bulkLoad(pg: postgres.Sql, bulkEntries: number, model: string, backupBucket: string): Promise<{ subjects: number; artifacts: number; seconds: number }> {
  if (bulkEntries <= 0) return { subjects: 0, artifacts: 0, seconds: 0 };
  const NS = Math.max(1, Math.ceil(bulkEntries / BULK_PER_SUBJECT));
  const NA = Math.floor(bulkEntries / 10);
  const P = 1_000_003;
  if (bulkEntries % P === 0) throw new Error('bulk size is a multiple of the permutation prime');
  if (!/^[a-z0-9-]+$/.test(model)) throw new Error(`unexpected embedder model name ${model}`);
  if (!/^[a-z0-9.-]+$/.test(backupBucket)) throw new Error(`unexpected backup bucket name ${backupBucket}`);
  const eid = (expr: string) => `'entry_' || substr(md5('be' || (${expr})::text), 1, 22)`;
  const kid = (expr: string) => `'key_bench_' || (${expr})`;
  const statements: Array<[string, string]> = [
    [
      `${fmtInt(NS)} bulk subject keys`,
      `insert into subject_keys (key_id, subject_hash, state, epoch, wrapped_dek, created_at, updated_at, next_seq)
       select ${kid('s')}, sha256(convert_to('bench-bulk-' || s, 'UTF8')), 'active', (select epoch from epochs where state = 'active'),
              decode(md5('wk' || s), 'hex'), now(), now(), ${int(Math.ceil(bulkEntries / NS) + 1)}
         from generate_series(0, ${int(NS - 1)}) s`,
    ],
    [
      `${fmtInt(bulkEntries)} bulk entries`,
      `insert into log_entries (entry_id, subject_hash, key_id, seq, segment, frame_offset, frame_length, created_at)
       select ${eid('i')}, sha256(convert_to('bench-bulk-' || (i % ${int(NS)}), 'UTF8')), ${kid(`i % ${int(NS)}`)},
              i / ${int(NS)} + 1, 'log/seg_' || substr(md5('bs' || (i / 64)::text), 1, 22), 16 + (i % 64) * 700, 700, now()
         from generate_series(0, ${int(bulkEntries - 1)}) i`,
    ],
    [
      `${fmtInt(bulkEntries)} bulk embeddings`,
      `insert into embeddings (record_id, record_type, key_id, model, sealed)
       select ${eid('i')}, 'entry', ${kid(`i % ${int(NS)}`)}, '${model}', decode(md5('em' || i), 'hex')
         from generate_series(0, ${int(bulkEntries - 1)}) i`,
    ],
    [
      `${fmtInt(NA)} bulk summaries (at version 2) and their version keys`,
      `with a as (
         insert into artifacts (artifact_id, kind, state, version, height, key_id, object, generator, created_at, updated_at)
         select 'art_' || substr(md5('ba' || a::text), 1, 22), 'summary', 'live', 2, 1, 'akey_bench_' || a, null, 'bench', now(), now()
           from generate_series(0, ${int(NA - 1)}) a
         returning artifact_id, key_id)
       insert into artifact_keys (key_id, artifact_id, version, epoch, wrapped_dek, created_at)
       select key_id, artifact_id, 2, (select epoch from epochs where state = 'active'), decode(md5(key_id), 'hex'), now() from a`,
    ],
    [
      `${fmtInt(NA)} destroyed version-1 keys in the ledger, already copied to the backup bucket`,
      `with d as (
         insert into destruction_ledger (key_id, key_kind, subject_hash, destroyed_at, reason, wrapped_epoch, leased_until)
         select 'akey_bench_v1_' || a, 'artifact-version', null, now() - interval '1 day' + a * interval '1 ms', 'regenerated',
                (select epoch from epochs where state = 'active'), null
           from generate_series(0, ${int(NA - 1)}) a
         returning key_id)
       insert into ledger_exports (bucket, key_id, exported_at) select '${backupBucket}', key_id, now() from d`,
    ],
    [
      `${fmtInt(NA * 5)} bulk provenance edges`,
      `insert into provenance (artifact_id, source_id, source_type)
       select 'art_' || substr(md5('ba' || a::text), 1, 22), ${eid(`((a::bigint * 5 + j) * ${P}) % ${int(bulkEntries)}`)}, 'entry'
         from generate_series(0, ${int(NA - 1)}) a, generate_series(0, 4) j`,
    ],
  ];
  const t0 = performance.now();
  for (const [label, text] of statements) {
    if (!LEDGER_HISTORY && label.includes('in the ledger')) continue;
    const s = performance.now();
    await pg.unsafe(text);
    progress(`erasure: ${label} (${fmtSeconds((performance.now() - s) / 1000)})`);
  }
  return { subjects: NS, artifacts: NA, seconds: (performance.now() - t0) / 1000 };
}

interface Store {
  readonly targetEntries: number;
  readonly vault: App;
  readonly pg: postgres.Sql;
  readonly cleanup: () => Promise<void>;
  readonly measured: WrittenSubject[];
  readonly baselineSubjects: WrittenSubject[];
  readonly warm: WrittenSubject;
  readonly warmExpected: number;
  readonly bulk: SizeRun['bulk'];
  readonly service: SizeRun['service'];
  counts?: SizeRun['counts'];
  bytes?: SizeRun['bytes'];
  vacuumAnalyzeSeconds?: number;
  warmup?: ErasureSample;
  before?: Map<string, StatRow>;
  readonly erasures: ErasureSample[];
  readonly baseline: BaselineSample[];
  probe?: ProbeAtScale | null;
  scans?: TableScans[];
}

/** A fresh store of `targetEntries` entries: the bulk by SQL, the rest through the service. */
async function prepareStore(targetEntries: number): Promise<Store> {
  const warmShape = { entries: Math.max(10, Math.floor(ENTRIES / 10)), summaries: Math.max(1, Math.floor(SUMMARIES / 10)), perSummary: 0 };
  warmShape.perSummary = Math.max(1, Math.floor(warmShape.entries / warmShape.summaries));
  const serviceEntries = NEIGHBOUR_SUBJECTS * NEIGHBOUR_ENTRIES + 2 * SUBJECTS * ENTRIES + warmShape.entries;
  const bulkEntries = targetEntries - serviceEntries;
  if (bulkEntries < 0) throw new Error(`a store of ${targetEntries} entries cannot hold the ${serviceEntries} written through the service`);

  const { vault, db, cleanup } = await openStore(`erasure${targetEntries}`);
  const pg = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    progress(`erasure: store of ${fmtInt(targetEntries)} entries — ${fmtInt(bulkEntries)} bulk (SQL), ${fmtInt(serviceEntries)} through the service`);
    const bulk = await bulkLoad(pg, bulkEntries, vault.vectors.embedder.model, vault.config.backupBucket);
    // planner statistics for the bulk before the service writes plan against it
    for (const t of BULK_TABLES) await pg.unsafe(`vacuum analyze ${t}`);

    const s0 = performance.now();
    const neighbourTexts = new Map<string, string>();
    const neighbourIds: string[] = [];
    for (let n = 0; n < NEIGHBOUR_SUBJECTS; n++) {
      neighbourIds.push(...(await appendAll(vault, `bench-erasure-neighbour-${n}`, `neighbour-${n}`, NEIGHBOUR_ENTRIES, neighbourTexts)));
    }
    const neighbours = { ids: neighbourIds, texts: neighbourTexts };
    const shape = { entries: ENTRIES, summaries: SUMMARIES, perSummary: PER_SUMMARY };
    const measured: WrittenSubject[] = [];
    const baselineSubjects: WrittenSubject[] = [];
    for (let i = 0; i < SUBJECTS; i++) {
      for (const [list, kind] of [
        [measured, 'measured'],
        [baselineSubjects, 'baseline'],
      ] as const) {
        const label = `${kind}-${i}`;
        const w0 = performance.now();
        list.push(await writeSubject(vault, label, shape, neighbours));
        progress(`erasure: ${fmtInt(targetEntries)}: wrote subject ${label} (${fmtInt(ENTRIES)} entries, ${SUMMARIES} summaries, ${DIGESTS} digests) in ${fmtSeconds((performance.now() - w0) / 1000)}`);
      }
    }
    const warm = await writeSubject(vault, 'warmup', warmShape, neighbours);
    const serviceSeconds = (performance.now() - s0) / 1000;
    const serviceArtifacts = 2 * SUBJECTS * (SUMMARIES + DIGESTS) + warmShape.summaries + Math.ceil(warmShape.summaries / 10);
    return {
      targetEntries,
      vault,
      pg,
      cleanup: async () => {
        await pg.end({ timeout: 5 });
        await cleanup();
      },
      measured,
      baselineSubjects,
      warm,
      warmExpected: warmShape.summaries + Math.ceil(warmShape.summaries / 10),
      bulk: { entries: bulkEntries, subjects: bulk.subjects, artifacts: bulk.artifacts, seconds: bulk.seconds },
      service: { entries: serviceEntries, artifacts: serviceArtifacts, seconds: serviceSeconds },
      erasures: [],
      baseline: [],
    };
  } catch (e) {
    await pg.end({ timeout: 5 });
    await cleanup();
    throw e;
  }
}

/** VACUUM ANALYZE (a live store's tables would have been by autovacuum) and the store's counts. */
async function settleStore(st: Store): Promise<void> {
  const { pg } = st;
  const v0 = performance.now();
  for (const t of [...BULK_TABLES, 'audit_log']) await pg.unsafe(`vacuum analyze ${t}`);
  st.vacuumAnalyzeSeconds = (performance.now() - v0) / 1000;
  const [c] = await pg<
    { entries: number; subjects: number; artifacts: number; edges: number; embeddings: number; subject_keys: number; log_bytes: string; prov_bytes: string; emb_bytes: string }[]
  >`
    select (select count(*)::int from log_entries) as entries,
           (select count(distinct subject_hash)::int from log_entries) as subjects,
           (select count(*)::int from artifacts where state = 'live') as artifacts,
           (select count(*)::int from provenance) as edges,
           (select count(*)::int from embeddings) as embeddings,
           (select count(*)::int from subject_keys) as subject_keys,
           pg_total_relation_size('log_entries')::text as log_bytes,
           pg_total_relation_size('provenance')::text as prov_bytes,
           pg_total_relation_size('embeddings')::text as emb_bytes`;
  if (!c) throw new Error('no counts');
  if (c.entries !== st.targetEntries) throw new Error(`the store holds ${c.entries} entries, expected ${st.targetEntries}`);
  st.counts = { entries: c.entries, subjects: c.subjects, artifacts: c.artifacts, edges: c.edges, embeddings: c.embeddings, subjectKeys: c.subject_keys };
  st.bytes = { logEntries: Number(c.log_bytes), provenance: Number(c.prov_bytes), embeddings: Number(c.emb_bytes) };
  // this connection's own counters (the counts above scan whole tables) go out before the first snapshot
  await pg`select pg_stat_force_next_flush()`;
  progress(
    `erasure: store ready — ${fmtInt(c.entries)} entries of ${fmtInt(c.subjects)} subjects, ${fmtInt(c.artifacts)} live artifacts, ${fmtInt(c.edges)} edges; ` +
      `bulk ${fmtSeconds(st.bulk.seconds)}, service ${fmtSeconds(st.service.seconds)}, vacuum analyze ${fmtSeconds(st.vacuumAnalyzeSeconds)}`,
  );
}

function scansBetween(before: Map<string, StatRow>, after: Map<string, StatRow>, runs: number): TableScans[] {
  return [...after.values()]
    .map((a) => {
      const b = before.get(a.relname);
      const d = (x: string | null | undefined, y: string | null | undefined) => (Number(x ?? 0) - Number(y ?? 0)) / runs;
      return { table: a.relname, rows: Number(a.n_live_tup), seqScans: d(a.seq_scan, b?.seq_scan), seqTupRead: d(a.seq_tup_read, b?.seq_tup_read), idxScans: d(a.idx_scan, b?.idx_scan) };
    })
    .filter((t) => t.seqScans > 0 || t.seqTupRead > 0)
    .sort((x, y) => y.seqTupRead - x.seqTupRead);
}

function sizeRun(st: Store): SizeRun {
  const erasures = st.erasures;
  const medianWallMs = median(erasures.map((e) => e.wallMs));
  const sorted = [...erasures].sort((a, b) => a.wallMs - b.wallMs);
  const medianSample = sorted[Math.floor((sorted.length - 1) / 2)]!;
  const stepNames = erasures[0]!.steps.map((x) => x.name);
  const stepMedians = stepNames.map((name) => ({ name, ms: median(erasures.map((e) => e.steps.find((x) => x.name === name)?.ms ?? 0)) }));
  const baselineMedianMs = median(st.baseline.map((b) => b.ms));
  return {
    targetEntries: st.targetEntries,
    counts: st.counts!,
    bytes: st.bytes!,
    bulk: st.bulk,
    service: st.service,
    vacuumAnalyzeSeconds: st.vacuumAnalyzeSeconds!,
    warmup: st.warmup!,
    erasures,
    medianWallMs,
    medianEngineMs: median(erasures.map((e) => e.engineMs)),
    medianSample,
    stepMedians,
    scans: st.scans ?? [],
    baseline: st.baseline,
    baselineMedianMs,
    ratioToBaseline: medianWallMs / baselineMedianMs,
    probeAtScale: st.probe ?? null,
  };
}

// ------------------------------------------------------------------ orchestration

/**
 * Both stores are prepared first and stay open; then every measured phase alternates
 * between them (small, large, small, large...), so a machine shared with other work
 * weighs on both sizes alike.
 */
export async function runErasure(): Promise<ErasureResult> {
  const warnings: string[] = [];
  const stores: Store[] = [];
  let idleDrain: IdleDrain | null = null;
  try {
    stores.push(await prepareStore(SMALL));
    stores.push(await prepareStore(LARGE));

    // ---- warm-up erasures (unmeasured), then VACUUM ANALYZE while the counters flush
    for (const st of stores) {
      st.warmup = await eraseOne(st.vault, st.pg, st.warm, st.warmExpected);
      progress(`erasure: ${fmtInt(st.targetEntries)}: warm-up erasure ${st.warmup.status} in ${fmtNum(st.warmup.wallMs, 0)} ms`);
    }
    for (const st of stores) await quiesce(st.pg);
    const wait0 = performance.now();
    for (const st of stores) await settleStore(st);
    await sleep(Math.max(0, STATS_WAIT_MS - (performance.now() - wait0)));
    for (const st of stores) st.before = await tableStats(st.pg);

    // ---- measured erasures, alternating
    for (let i = 0; i < SUBJECTS; i++) {
      for (const st of stores) {
        const s = st.measured[i]!;
        const e = await eraseOne(st.vault, st.pg, s, SUMMARIES + DIGESTS);
        st.erasures.push(e);
        progress(
          `erasure: ${fmtInt(st.targetEntries)}: ${s.label} ${e.status}${e.ok ? '' : ' (NOT as expected)'} in ${fmtNum(e.wallMs, 0)} ms (engine ${fmtNum(e.engineMs, 0)} ms); ` +
            e.steps.map((x) => `${x.name} ${x.ms === null ? '-' : fmtNum(x.ms, 0)}`).join(', '),
        );
        await quiesce(st.pg);
      }
    }

    // ---- the probe at store scale (memory and CPU only: it overlaps the counters' flush)
    const wait1 = performance.now();
    for (const st of stores) {
      if (!PROBE_SCALE) break;
      const fp = median(st.erasures.map((e) => e.fingerprinted));
      const texts = Array.from({ length: 20 }, (_, k) => entryText(st.measured[0]!.label, k));
      const p = await probeAtScale(st.vault, st.counts!.entries + st.counts!.artifacts, texts, fp, median(st.erasures.map((e) => e.wallMs)));
      st.probe = p;
      progress(
        `erasure: ${fmtInt(st.targetEntries)}: probe search k=${PROBE_K} over ${fmtInt(p.storeVectors)} vectors ${fmtNum(p.storeIndexMedianMs, 1)} ms ` +
          `(vault index of ${fmtInt(p.vaultIndexVectors)}: ${fmtNum(p.vaultIndexMedianMs, 2)} ms); x ${fmtInt(p.searches)} searches (of ${fmtInt(fp)} records) = ${fmtSeconds(p.projectedProbeSearchMs / 1000)}`,
      );
    }
    await sleep(Math.max(0, STATS_WAIT_MS - (performance.now() - wait1)));
    for (const st of stores) st.scans = scansBetween(st.before!, await tableStats(st.pg), st.erasures.length);

    // ---- the scan-and-delete baseline, alternating
    for (let i = 0; i < SUBJECTS; i++) {
      for (const st of stores) {
        const s = st.baselineSubjects[i]!;
        const b = await baselineOne(st.vault, st.pg, s);
        st.baseline.push(b);
        progress(
          `erasure: ${fmtInt(st.targetEntries)}: baseline ${s.label} in ${fmtNum(b.ms, 0)} ms (rows ${fmtNum(b.rowsMs, 0)} ms, ${b.objects} objects ${fmtNum(b.objectsMs, 0)} ms); ` +
            `log_entries: ${b.logEntriesScan}; provenance: ${b.provenanceScan}`,
        );
      }
    }

    // ---- what an idle drain costs with this run's provisional certificates, and with 100
    idleDrain = await measureIdleDrain(stores[0]!.vault, stores[0]!.pg, 100);
    progress(
      `erasure: idle drain ${fmtNum(idleDrain.medianMs, 1)} ms with ${idleDrain.provisional} provisional certificates ` +
        `(state ${fmtInt(idleDrain.stateBytes)} B each), ${fmtNum(idleDrain.syntheticMedianMs, 1)} ms with ${idleDrain.syntheticProvisional}`,
    );
  } finally {
    for (const st of stores) await st.cleanup();
  }
  const small = sizeRun(stores[0]!);
  const large = sizeRun(stores[1]!);
  for (const r of [small, large]) {
    for (const e of r.erasures) if (!e.ok) warnings.push(`at ${fmtInt(r.targetEntries)} entries the erasure of ${e.subject} ended ${e.status} (${e.regenerated} regenerated, ${e.removed} removed)`);
    if (!r.warmup.ok) warnings.push(`at ${fmtInt(r.targetEntries)} entries the warm-up erasure ended ${r.warmup.status}`);
    for (const b of r.baseline) {
      if (!/Seq Scan/.test(b.logEntriesScan) || !/Seq Scan/.test(b.provenanceScan)) warnings.push(`baseline ${b.subject}: not a sequential scan (${b.logEntriesScan}; ${b.provenanceScan})`);
      if (b.entries !== ENTRIES || b.artifacts !== SUMMARIES + DIGESTS) warnings.push(`baseline ${b.subject}: deleted ${b.entries} entries and ${b.artifacts} artifacts`);
    }
  }
  // at the small size the planner may rightly prefer reading a small table whole; at the large one that cost follows the store
  for (const t of large.scans.filter((x) => x.rows >= 1_000 && x.seqTupRead >= x.rows)) {
    warnings.push(
      `at ${fmtInt(large.targetEntries)} entries each erasure read ${t.table} whole ${fmtNum(t.seqTupRead / t.rows, 1)} times ` +
        `(${fmtNum(t.seqScans, 1)} sequential scans, ${fmtInt(t.seqTupRead)} rows of ${fmtInt(t.rows)})`,
    );
  }
  const projectedRatio = small.probeAtScale && large.probeAtScale ? large.probeAtScale.projectedErasureMs / small.probeAtScale.projectedErasureMs : null;
  return {
    shape: {
      subjects: SUBJECTS,
      entriesPerSubject: ENTRIES,
      summariesPerSubject: SUMMARIES,
      digestsPerSubject: DIGESTS,
      entriesPerSummary: PER_SUMMARY,
      neighbourEntriesPerSummary: NEIGHBOUR_CITES,
      neighbours: { subjects: NEIGHBOUR_SUBJECTS, entriesEach: NEIGHBOUR_ENTRIES },
      ledgerHistory: LEDGER_HISTORY,
    },
    small,
    large,
    ratio: large.medianWallMs / small.medianWallMs,
    engineRatio: large.medianEngineMs / small.medianEngineMs,
    target: 2,
    projectedRatio,
    idleDrain,
    valid: [small, large].every((r) => r.erasures.every((e) => e.ok)),
    warnings,
  };
}

export function formatErasure(r: ErasureResult): string {
  const { small: s, large: l } = r;
  const sz = (x: SizeRun) => fmtInt(x.targetEntries);
  const lines: string[] = [];
  lines.push(
    `Erasure of one subject: ${fmtInt(r.shape.entriesPerSubject)} entries, ${r.shape.summariesPerSubject} summaries (each citing ${r.shape.entriesPerSummary} of its entries + ` +
      `${r.shape.neighbourEntriesPerSummary} of other subjects) + ${r.shape.digestsPerSubject} digests above them; ${r.shape.subjects} subjects per store, ` +
      'one at a time after an unmeasured warm-up erasure, alternating between the stores; real PostgreSQL, local filesystem object store' +
      (r.shape.ledgerHistory ? '' : '; NO ledger history in the bulk (BENCH_ERASURE_LEDGER_HISTORY=0)'),
  );
  lines.push(
    table(
      ['store entries', 'subjects', 'artifacts', 'edges', 'log_entries size', 'erasures (wall ms)', 'median wall ms', 'median engine ms', 'baseline median ms', 'erasure ÷ baseline'],
      [s, l].map((x) => [
        fmtInt(x.counts.entries),
        fmtInt(x.counts.subjects),
        fmtInt(x.counts.artifacts),
        fmtInt(x.counts.edges),
        `${fmtNum(x.bytes.logEntries / 2 ** 20, 1)} MiB`,
        x.erasures.map((e) => fmtNum(e.wallMs, 0)).join(' / '),
        fmtNum(x.medianWallMs, 0),
        fmtNum(x.medianEngineMs, 0),
        fmtNum(x.baselineMedianMs, 0),
        fmtRatio(x.ratioToBaseline),
      ]),
    ),
  );
  lines.push(
    `median erasure ${sz(l)} ÷ ${sz(s)} entries = ${fmtRatio(r.ratio)} (engine time ${fmtRatio(r.engineRatio)}); aim <= ${r.target}: ${r.ratio <= r.target ? 'met' : 'NOT met'}`,
  );
  lines.push('');
  lines.push(`Steps of the median erasure at each size (ms; startedAt → finishedAt of each step)`);
  const names = s.medianSample.steps.map((st) => st.name);
  const stepMs = (x: SizeRun, name: string) => x.medianSample.steps.find((st) => st.name === name)?.ms ?? null;
  const stepRows = names.map((name) => {
    const a = stepMs(s, name);
    const b = stepMs(l, name);
    return [
      name,
      a === null ? '-' : fmtNum(a, 0),
      b === null ? '-' : fmtNum(b, 0),
      a && b ? fmtRatio(b / a) : '',
      fmtNum(s.stepMedians.find((m) => m.name === name)?.ms ?? 0, 0),
      fmtNum(l.stepMedians.find((m) => m.name === name)?.ms ?? 0, 0),
    ];
  });
  stepRows.push(['between steps (claim, checkpoints, commits)', fmtNum(s.medianSample.betweenStepsMs, 0), fmtNum(l.medianSample.betweenStepsMs, 0), '', '', '']);
  stepRows.push(['total (engine)', fmtNum(s.medianSample.engineMs, 0), fmtNum(l.medianSample.engineMs, 0), fmtRatio(l.medianSample.engineMs / s.medianSample.engineMs), fmtNum(s.medianEngineMs, 0), fmtNum(l.medianEngineMs, 0)]);
  lines.push(table(['step', `${sz(s)} ms`, `${sz(l)} ms`, 'ratio', `${sz(s)} per-step median of ${s.erasures.length}`, `${sz(l)} per-step median of ${l.erasures.length}`], stepRows));
  for (const x of [s, l]) {
    const m = x.medianSample;
    lines.push(
      `  at ${sz(x)}: ${m.fingerprinted} records fingerprinted, ${m.artifactsTouching} artifacts touching, ${m.regenerated} regenerated, ${m.removed} removed; ` +
        `probe recovered ${m.probeRecovered} (${m.probeMatches} matches); the vault's vector index held ${fmtInt(m.indexVectors)} vectors; status ${m.status}, class ${m.class}; ` +
        `event loop held up to ${fmtNum(m.eventLoopMaxMs, 0)} ms at a time (max over the 3: ${fmtNum(Math.max(...x.erasures.map((e) => e.eventLoopMaxMs)), 0)} ms)`,
    );
  }
  lines.push('');
  lines.push('Whole-table reads during the measured erasures (pg_stat_user_tables, per erasure):');
  for (const x of [s, l]) {
    const top = x.scans.slice(0, 6);
    lines.push(
      `  at ${sz(x)}: ` +
        (top.length ? top.map((t) => `${t.table} ${fmtNum(t.seqScans, 1)} scans / ${fmtInt(t.seqTupRead)} rows read (table ${fmtInt(t.rows)} rows)`).join('; ') : 'no sequential scans'),
    );
  }
  lines.push('');
  lines.push(
    'Baseline (scan-and-delete, no subject index, no keys): one transaction with index scans off for the finding statements — delete the subject\'s ' +
      'log_entries rows (sequential scan), then level by level the provenance edges from what was deleted (a sequential scan per level) — then by primary key the ' +
      'artifacts, their other edges, embeddings and artifact keys; commit; then delete every entry\'s segment object and every artifact object (8 at a time).',
  );
  lines.push(
    table(
      ['store entries', 'baseline runs (ms)', 'median ms', 'rows (txn) ms', 'objects ms', 'deleted', 'log_entries plan', 'provenance plan'],
      [s, l].map((x) => {
        const b = x.baseline[0]!;
        return [
          fmtInt(x.counts.entries),
          x.baseline.map((y) => fmtNum(y.ms, 0)).join(' / '),
          fmtNum(x.baselineMedianMs, 0),
          fmtNum(median(x.baseline.map((y) => y.rowsMs)), 0),
          fmtNum(median(x.baseline.map((y) => y.objectsMs)), 0),
          `${b.entries} entries, ${b.artifacts} artifacts, ${b.edges} edges, ${b.embeddings} embeddings, ${b.objects} objects (${b.levels} levels)`,
          b.logEntriesScan,
          b.provenanceScan,
        ];
      }),
    ),
  );
  if (s.probeAtScale && l.probeAtScale) {
    lines.push('');
    lines.push(
      `Probe at store scale (projection): the probe runs one exact k=${PROBE_K} search over the whole vector index per fingerprinted record, at most ${PROBE_MAX_QUERIES} of them; the measured erasures' ` +
        'index held only the vectors written through the service. Timed searches on a VectorIndex of one random vector per entry and live artifact of the store:',
    );
    lines.push(
      table(
        ['store entries', 'index vectors', 'search ms (store-size index)', 'search ms (vault index)', 'searches (records)', 'projected probe search', 'projected erasure', 'measured erasure'],
        [s, l].map((x) => {
          const p = x.probeAtScale!;
          return [
            fmtInt(x.counts.entries),
            fmtInt(p.storeVectors),
            fmtNum(p.storeIndexMedianMs, 2),
            `${fmtNum(p.vaultIndexMedianMs, 2)} (${fmtInt(p.vaultIndexVectors)} vectors)`,
            `${fmtInt(p.searches)} (${fmtInt(p.fingerprinted)})`,
            fmtSeconds(p.projectedProbeSearchMs / 1000),
            fmtSeconds(p.projectedErasureMs / 1000),
            fmtSeconds(x.medianWallMs / 1000),
          ];
        }),
      ),
    );
    if (r.projectedRatio !== null) lines.push(`projected erasure ${sz(l)} ÷ ${sz(s)} entries with a store-size index = ${fmtRatio(r.projectedRatio)} (aim <= ${r.target}: ${r.projectedRatio <= r.target ? 'met' : 'NOT met'})`);
  }
  if (r.idleDrain) {
    const d = r.idleDrain;
    lines.push('');
    lines.push(
      `Idle drain (nothing to claim; the worker's poll and every 50 ms settle poll run one): ${fmtNum(d.medianMs, 1)} ms with this run's ${d.provisional} ` +
        `provisional certificates (state ${fmtInt(d.stateBytes)} B, certificate ${fmtInt(d.certificateBytes)} B per row, as stored); ` +
        `${fmtNum(d.syntheticMedianMs, 1)} ms with ${d.syntheticProvisional} (copies of one row): an idle poll should not grow with the provisional certificates`,
    );
  }
  lines.push('');
  lines.push(
    `setup: ${sz(s)}: bulk ${fmtSeconds(s.bulk.seconds)}, service ${fmtSeconds(s.service.seconds)} (${fmtInt(s.service.entries)} entries, ${fmtInt(s.service.artifacts)} artifacts); ` +
      `${sz(l)}: bulk ${fmtSeconds(l.bulk.seconds)} (${fmtInt(l.bulk.entries)} entries of ${fmtInt(l.bulk.subjects)} subjects, ${fmtInt(l.bulk.artifacts)} summaries), service ${fmtSeconds(l.service.seconds)}`,
  );
  for (const w of r.warnings) lines.push(`WARNING: ${w}`);
  return lines.join('\n');
}

await runIfMain(import.meta.url, runErasure, formatErasure);

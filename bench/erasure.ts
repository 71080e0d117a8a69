/**
 * Erasure: how long one subject's erasure takes, request → settled, black-box over HTTP
 * against `lethe serve` child processes, in a store of BENCH_ERASURE_BASE entries
 * (default 1,000; 10,000 with BENCH_FULL=1) and in a store 100× larger (20× too with BENCH_FULL=1) — on
 * PostgreSQL and on the embedded default (PGlite in a data directory). Aims (ratios of
 * the median erasure to the base store's, same backend, same run): 20× ≤ 1.5, 100× ≤ 2 —
 * an erasure's cost follows the subject, not the store.
 *
 * For each backend (BENCH_ERASURE_BACKENDS, default `postgres,pglite`), three stores,
 * each a fresh data directory (local filesystem object store), root key and — on
 * PostgreSQL — lethe_bench_* database:
 *
 *   1. bulk    the store is opened in a child process (this script with BENCH_ERASURE_SEED:
 *              PGlite's statements hold the event loop of the process that runs them;
 *              openApp, no listener, no worker) and
 *              filled with SQL (fixtures/bulk-store.ts: other subjects' keys and log
 *              entries, stand-in embeddings of destroyed keys, summaries with provenance,
 *              their destroyed version keys in the ledger, audit rows, backup listings)
 *              so that it holds factor × base log entries once its subjects are written.
 *              On PostgreSQL the bulk tables are then VACUUM ANALYZEd (what autovacuum
 *              does to a live store within a minute); on PGlite nothing is: the
 *              service's own start-up statistics pass (src/db/statistics.ts) analyzes
 *              them, and its time is reported.
 *   2. serve   `lethe serve` starts (tsx, PORT 0; bench/support/service.ts startService):
 *              migrations, statistics (PGlite), the search index rebuild (the bulk's
 *              embeddings are of destroyed keys: skipped by key, never opened), the
 *              erasure worker. Then, over HTTP: a neighbour subject
 *              (BENCH_ERASURE_NEIGHBOURS entries, default 20), a warm-up subject and
 *              BENCH_ERASURE_SUBJECTS measured subjects (default 3), each
 *              BENCH_ERASURE_ENTRIES entries (default 30, `POST …/entries`),
 *              BENCH_ERASURE_SUMMARIES summaries (default 3, each citing its share of the
 *              subject's entries and 2 of the neighbour's) and a digest citing them
 *              (`POST /v1/artifacts`).
 *              The two backends' stores are set up side by side (each store's bulk in a
 *              child process, each service in its own); the erasures are measured one
 *              backend at a time, the other's services idle.
 *   3. erase   the three services stay up; the warm-up erasures (unmeasured), then the
 *              measured ones alternating between the stores (base, 20×, 100×, base...)
 *              so that other work on a shared machine weighs on every size alike: each
 *              `POST /v1/erasures` → the `end` event of `GET …/events` (wall time from
 *              the request sent to the end received), then `GET /v1/erasures/{id}` for
 *              the steps' own times. Each must end `completed` with every artifact
 *              regenerated.
 *
 * The probe's vector side at store scale: a store's in-memory vector index holds only
 * what its service wrote (the bulk's embeddings cannot be opened), so, separately and in
 * this process, a VectorIndex of one random unit vector per entry of each store size is
 * filled and the probe's query (`neighbours`, k = VECTOR_NEIGHBOURS up to VECTOR_LIMIT)
 * is timed (BENCH_ERASURE_PROBE_QUERIES searches, default 5); the probe runs one per
 * fingerprinted record (at most PROBE_MAX_QUERIES), so its vector time at store scale is
 * that times the records — reported, with its ratio (BENCH_ERASURE_PROBE_SCALE=0 skips it).
 * The default run fills indexes of up to BENCH_ERASURE_PROBE_MAX_VECTORS (20,000: the
 * graph of 100,000 takes tens of seconds to build here); BENCH_FULL=1 fills every store size.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import type postgres from 'postgres';
import { openApp, type App } from '../src/app/open.js';
import { loadConfig } from '../src/config/index.js';
import { queryRows } from '../src/db/client.js';
import { PROBE_MAX_QUERIES, VECTOR_LIMIT, VECTOR_NEIGHBOURS } from '../src/erasure/probe.js';
import { createLogger } from '../src/observability/logger.js';
import { VectorIndex } from '../src/vectors/vector-index.js';
import { BULK_TABLES, seedBulkStore } from '../fixtures/bulk-store.js';
import { type Server, startScratchService } from './support/service.js';
import { envInt, FULL } from './support/mode.js';
import { openScratch, randomRootKey, type Scratch, type ScratchDatabase } from './support/scratch.js';
import { pool, runChild, runIfMain, sleep } from './support/process.js';
import { type Aim, aim, fmtInt, fmtNum, fmtRatio, fmtSeconds, median, progress, table } from './support/report.js';

// ------------------------------------------------------------------ result types

export type Backend = 'postgres' | 'pglite';

export interface StepTiming {
  readonly name: string;
  readonly ms: number | null;
}

export interface ErasureSample {
  readonly subject: string;
  readonly erasureId: string;
  readonly status: string;
  /** From the request sent until the events stream's `end` arrived. */
  readonly wallMs: number;
  readonly steps: StepTiming[];
  readonly regenerated: number;
  readonly fingerprinted: number;
  readonly ok: boolean;
}

export interface SizeRun {
  readonly factor: number;
  readonly targetEntries: number;
  readonly counts: {
    readonly entries: number;
    readonly artifacts: number;
    readonly edges: number;
    readonly embeddings: number;
    readonly ledger: number;
    readonly audit: number;
  };
  /** Adding this size's bulk (SQL). */
  readonly bulkSeconds: number;
  /** PostgreSQL: the VACUUM ANALYZE after the bulk (autovacuum's work); null on PGlite. */
  readonly vacuumAnalyzeSeconds: number | null;
  /** PGlite: the service's start-up statistics pass (tables analyzed, ms), from its log; null when none was logged. */
  readonly statistics: { readonly tables: string[]; readonly ms: number } | null;
  /** From spawning `lethe serve` to its "lethe listening". */
  readonly startSeconds: number;
  /** Writing the subjects over HTTP. */
  readonly writeSeconds: number;
  readonly warmup: ErasureSample;
  readonly erasures: ErasureSample[];
  readonly medianWallMs: number;
  /** Per-step median over the measured erasures. */
  readonly stepMedians: Array<{ name: string; ms: number }>;
  /** medianWallMs ÷ the base size's. */
  readonly ratio: number;
  /** 1-min load average when the size's erasures started and ended. */
  readonly loadAvg: [number, number];
}

export interface BackendRun {
  readonly backend: Backend;
  readonly sizes: SizeRun[];
  readonly seconds: number;
}

export interface ProbeVectors {
  readonly dimensions: number;
  readonly sizes: Array<{ readonly vectors: number; readonly fillSeconds: number; readonly medianSearchMs: number; readonly projectedMs: number }>;
  /** Searches the probe runs for the measured subject: min(entries, PROBE_MAX_QUERIES). */
  readonly searches: number;
  /** Largest ÷ smallest projected vector time. */
  readonly ratio: number;
}

export interface ErasureResult {
  readonly shape: {
    readonly base: number;
    readonly factors: number[];
    readonly subjectsPerSize: number;
    readonly entriesPerSubject: number;
    readonly summariesPerSubject: number;
    readonly digestsPerSubject: number;
    readonly neighbourEntries: number;
  };
  readonly backends: BackendRun[];
  readonly probeVectors: ProbeVectors | null;
  readonly aims: Aim[];
  readonly valid: boolean;
  readonly warnings: string[];
}

// ------------------------------------------------------------------ settings

const BASE = envInt('BENCH_ERASURE_BASE', FULL ? 10_000 : 1_000, 200);
/** Store sizes as multiples of BASE: the default run measures the base and 100x (20x too with BENCH_FULL=1: the default run's ten minutes). */
const FACTORS: readonly number[] = FULL ? [1, 20, 100] : [1, 100];
const AIMS: Record<number, number> = { 20: 1.5, 100: 2 };
const SUBJECTS = envInt('BENCH_ERASURE_SUBJECTS', 3, 1);
const ENTRIES = envInt('BENCH_ERASURE_ENTRIES', 30, 4);
const SUMMARIES = Math.min(ENTRIES, envInt('BENCH_ERASURE_SUMMARIES', 3, 1));
const NEIGHBOURS = envInt('BENCH_ERASURE_NEIGHBOURS', 20, 4);
const NEIGHBOUR_CITES = 2;
const PROBE_SCALE = process.env.BENCH_ERASURE_PROBE_SCALE !== '0';
const PROBE_QUERIES = envInt('BENCH_ERASURE_PROBE_QUERIES', 5, 1);
/** The default run fills vector indexes up to this size (building a 100,000-vector graph takes tens of seconds here); BENCH_FULL=1 fills every store size. */
const PROBE_MAX_VECTORS = envInt('BENCH_ERASURE_PROBE_MAX_VECTORS', 20_000, 1_000);
const BACKENDS = (process.env.BENCH_ERASURE_BACKENDS ?? 'postgres,pglite')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean) as Backend[];
for (const b of BACKENDS) if (b !== 'postgres' && b !== 'pglite') throw new Error(`BENCH_ERASURE_BACKENDS: unknown backend ${b}`);
const SETTLE_TIMEOUT_MS = 10 * 60 * 1000;
const WRITE_CONCURRENCY = 8;

// ------------------------------------------------------------------ HTTP

const LETTERS = 'abcdefghijklmnopqrstuvwxyz';

/** Pseudo-words: texts of different subjects share no wording. */
function words(n: number): string {
  const raw = randomBytes(n * 10);
  const out: string[] = [];
  for (let w = 0; w < n; w++) {
    let s = '';
    for (let i = 1; i <= 4 + (raw[w * 10]! % 6); i++) s += LETTERS[raw[w * 10 + i]! % 26];
    out.push(s);
  }
  return out.join(' ');
}

const entryText = (label: string, k: number) => `Note ${k} of ${label} says ${words(7)}. It adds ${words(9)}. Then ${words(8)}.`;
const firstSentence = (text: string) => `${text.split('. ')[0]!}.`;

class Client {
  constructor(
    readonly base: string,
    readonly tokens: { writer: string; eraser: string },
  ) {}

  async call<T>(role: 'writer' | 'eraser', method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(`${this.base}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.tokens[role]}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
    return JSON.parse(text) as T;
  }

  append(subject: string, text: string): Promise<{ entryId: string }> {
    return this.call('writer', 'POST', `/v1/subjects/${encodeURIComponent(subject)}/entries`, { text });
  }

  artifact(kind: 'summary' | 'digest', text: string, sources: string[]): Promise<{ artifactId: string }> {
    return this.call('writer', 'POST', '/v1/artifacts', { kind, text, sources });
  }

  /** Request → the events stream's `end`: the erasure settled. */
  async erase(subject: string): Promise<{ erasureId: string; wallMs: number }> {
    const t0 = performance.now();
    const { erasureId } = await this.call<{ erasureId: string }>('eraser', 'POST', '/v1/erasures', { subject, reason: 'benchmark', legalBasis: 'gdpr-art17' });
    const res = await fetch(`${this.base}/v1/erasures/${erasureId}/events`, {
      headers: { authorization: `Bearer ${this.tokens.eraser}`, accept: 'text/event-stream' },
    });
    if (res.status !== 200 || !res.body) throw new Error(`GET /v1/erasures/${erasureId}/events: ${res.status}`);
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let seen = '';
    const deadline = Date.now() + SETTLE_TIMEOUT_MS;
    for (;;) {
      const { value, done } = await reader.read();
      if (value) seen = (seen + decoder.decode(value, { stream: true })).slice(-4096);
      if (/(^|\n)event: end\n/.test(seen)) break;
      if (done) throw new Error(`the events stream of ${erasureId} closed before its end event`);
      if (Date.now() > deadline) throw new Error(`erasure ${erasureId} did not settle within ${SETTLE_TIMEOUT_MS} ms`);
    }
    const wallMs = performance.now() - t0;
    await reader.cancel().catch(() => {});
    return { erasureId, wallMs };
  }
}

interface View {
  status: string;
  steps: Array<{ name: string; startedAt?: string; finishedAt?: string; detail?: string }>;
}

interface Written {
  readonly label: string;
  readonly subject: string;
  readonly artifacts: number;
}

async function writeSubject(c: Client, label: string, neighbours: { ids: string[]; texts: string[] }): Promise<Written> {
  const subject = `bench-erasure-${label}-${randomBytes(3).toString('hex')}`;
  const ids = new Array<string>(ENTRIES);
  const texts = new Array<string>(ENTRIES);
  texts[0] = entryText(label, 0);
  ids[0] = (await c.append(subject, texts[0])).entryId; // creates the key
  await pool(ENTRIES - 1, WRITE_CONCURRENCY, async (j) => {
    texts[j + 1] = entryText(label, j + 1);
    ids[j + 1] = (await c.append(subject, texts[j + 1]!)).entryId;
  });
  const per = Math.ceil(ENTRIES / SUMMARIES);
  const summaries = new Array<string>(SUMMARIES);
  await pool(SUMMARIES, 4, async (i) => {
    const own = Array.from({ length: per }, (_, k) => i * per + k).filter((k) => k < ENTRIES);
    const other = Array.from({ length: NEIGHBOUR_CITES }, (_, k) => (i * NEIGHBOUR_CITES + k) % neighbours.ids.length);
    const text = `Summary ${i} of ${label}. ${[...own.map((k) => firstSentence(texts[k]!)), ...other.map((k) => firstSentence(neighbours.texts[k]!))].join(' ')}`;
    summaries[i] = (await c.artifact('summary', text, [...own.map((k) => ids[k]!), ...other.map((k) => neighbours.ids[k]!)])).artifactId;
  });
  await c.artifact('digest', `Digest of ${label}. ${words(12)}.`, summaries);
  return { label, subject, artifacts: SUMMARIES + 1 };
}

async function eraseOne(c: Client, w: Written): Promise<ErasureSample> {
  const { erasureId, wallMs } = await c.erase(w.subject);
  const view = await c.call<View>('eraser', 'GET', `/v1/erasures/${erasureId}`);
  const detail = (name: string) => view.steps.find((s) => s.name === name)?.detail ?? '';
  const regenerated = Number(/^(\d+) artifact\(s\) regenerated/.exec(detail('cascade'))?.[1] ?? 0);
  const fingerprinted = Number(/^(\d+) record/.exec(detail('fingerprint'))?.[1] ?? 0);
  return {
    subject: w.label,
    erasureId,
    status: view.status,
    wallMs,
    steps: view.steps.map((s) => ({
      name: s.name,
      ms: s.startedAt && s.finishedAt ? new Date(s.finishedAt).getTime() - new Date(s.startedAt).getTime() : null,
    })),
    regenerated,
    fingerprinted,
    ok: view.status === 'completed' && regenerated === w.artifacts,
  };
}

// ------------------------------------------------------------------ one backend

/** Waits until no other backend of this database is running a statement (background work; bench/forget.ts uses it). */
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

interface LogLine {
  msg?: string;
  analyzed?: string[];
  ms?: number;
}

/** The service's start-up statistics pass, from its log (PGlite). */
function statisticsOf(server: Server): SizeRun['statistics'] {
  for (const line of server.stderrTail) {
    try {
      const e = JSON.parse(line) as LogLine;
      if (e.msg === 'planner statistics refreshed' && Array.isArray(e.analyzed)) return { tables: e.analyzed, ms: e.ms ?? 0 };
    } catch {
      // not a JSON line
    }
  }
  return null;
}

async function counts(app: App): Promise<SizeRun['counts']> {
  const [c] = await queryRows<Record<string, string | number>>(
    app.db.db,
    sql`select (select count(*) from log_entries) as entries, (select count(*) from artifacts where state = 'live') as artifacts,
               (select count(*) from provenance) as edges, (select count(*) from embeddings) as embeddings,
               (select count(*) from destruction_ledger) as ledger, (select count(*) from audit_log) as audit`,
  );
  const n = (k: string) => Number(c?.[k] ?? 0);
  return { entries: n('entries'), artifacts: n('artifacts'), edges: n('edges'), embeddings: n('embeddings'), ledger: n('ledger'), audit: n('audit') };
}

interface Store {
  readonly factor: number;
  readonly targetEntries: number;
  readonly env: Record<string, string>;
  readonly tokens: { writer: string; eraser: string };
  /** Its database (none on PGlite) and data directory; the service, once started, stops with it. */
  readonly scratch: Scratch<ScratchDatabase | undefined>;
  counts?: SizeRun['counts'];
  bulkSeconds?: number;
  vacuumAnalyzeSeconds?: number | null;
  server?: Server;
  client?: Client;
  startSeconds?: number;
  statistics?: SizeRun['statistics'];
  writeSeconds?: number;
  warm?: Written;
  measured?: Written[];
  warmup?: ErasureSample;
  readonly erasures: ErasureSample[];
  loads: number[];
}

/** A fresh store of `factor` × BASE entries once its subjects are written: the bulk added in this process (service stopped). */
async function prepareStore(backend: Backend, factor: number): Promise<Store> {
  const scratch = backend === 'postgres' ? await openScratch(`erasure${factor}x`) : await openScratch(`erasure-${backend}-${factor}x`, { database: false });
  const { db, dataDir } = scratch;
  const tokens = { writer: `writer-${randomBytes(18).toString('base64url')}`, eraser: `eraser-${randomBytes(18).toString('base64url')}` };
  const env: Record<string, string> = {
    ...(db ? { DATABASE_URL: db.url } : {}),
    LETHE_DATA_DIR: dataDir,
    LETHE_ROOT_KEY: randomRootKey(),
    LETHE_TOKENS: `writer=${tokens.writer},eraser=${tokens.eraser}`,
    LETHE_LOG_LEVEL: 'info',
  };
  const st: Store = { factor, targetEntries: BASE * factor, env, tokens, scratch, erasures: [], loads: [] };
  try {
    const writing = (SUBJECTS + 1) * ENTRIES + NEIGHBOURS;
    const bulk = st.targetEntries - writing;
    if (bulk < 0) throw new Error(`a store of ${st.targetEntries} entries cannot hold the ${writing} written through the service`);
    // in a process of its own: PGlite's statements hold the event loop of the process that runs them
    const seeded = await runChild<SeedResult>(fileURLToPath(import.meta.url), {
      env: { BENCH_ERASURE_SEED: JSON.stringify({ backend, env, bulk } satisfies SeedSpec) },
    });
    st.bulkSeconds = seeded.bulkSeconds;
    st.vacuumAnalyzeSeconds = seeded.vacuumAnalyzeSeconds;
    // what the store holds once the subjects are written (their entries and artifacts added)
    st.counts = { ...seeded.counts, entries: seeded.counts.entries + writing, artifacts: seeded.counts.artifacts + (SUBJECTS + 1) * (SUMMARIES + 1) };
    progress(
      `erasure: ${backend} ${factor}x: ${fmtInt(st.targetEntries)} entries, bulk ${fmtSeconds(st.bulkSeconds)}` +
        (st.vacuumAnalyzeSeconds !== null ? `, vacuum analyze ${fmtSeconds(st.vacuumAnalyzeSeconds)}` : ''),
    );
    return st;
  } catch (e) {
    await dropStore(st);
    throw e;
  }
}

interface SeedSpec {
  readonly backend: Backend;
  readonly env: Record<string, string>;
  readonly bulk: number;
}

interface SeedResult {
  readonly bulkSeconds: number;
  readonly vacuumAnalyzeSeconds: number | null;
  readonly counts: SizeRun['counts'];
}

/**
 * The child's part (BENCH_ERASURE_SEED): the store opened in this process (migrations,
 * an active epoch; no listener, no worker), its bulk added, on PostgreSQL its bulk
 * tables VACUUM ANALYZEd (what autovacuum does to a live store within a minute of such a
 * change), its counts read, the store closed.
 */
async function seedStore(): Promise<SeedResult> {
  const spec = JSON.parse(process.env.BENCH_ERASURE_SEED!) as SeedSpec;
  const app = await openApp(loadConfig({ ...spec.env, LETHE_LOG_LEVEL: 'warn' }), { logger: createLogger('warn', process.stderr), listen: false });
  try {
    const b0 = performance.now();
    if (spec.bulk > 0) await seedBulkStore(app.db.db, { entries: spec.bulk, model: app.vectors.embedder.model, backupBucket: app.config.backupBucket });
    const bulkSeconds = (performance.now() - b0) / 1000;
    let vacuumAnalyzeSeconds: number | null = null;
    if (spec.backend === 'postgres') {
      const v0 = performance.now();
      for (const t of BULK_TABLES) await app.db.db.execute(sql.raw(`vacuum analyze ${t}`));
      vacuumAnalyzeSeconds = (performance.now() - v0) / 1000;
    }
    return { bulkSeconds, vacuumAnalyzeSeconds, counts: await counts(app) };
  } finally {
    await app.close();
  }
}

async function dropStore(st: Store): Promise<void> {
  await st.scratch.cleanup();
}

/** Starts the store's service and writes its subjects over HTTP: a neighbour, a warm-up subject and the measured ones. */
async function serveStore(backend: Backend, st: Store): Promise<void> {
  const s0 = performance.now();
  // a large embedded store reads its whole embeddings table before it listens (the index rebuild): minutes on a busy machine
  st.server = await startScratchService(st.scratch, st.env, 600_000);
  st.startSeconds = (performance.now() - s0) / 1000;
  st.statistics = backend === 'pglite' ? statisticsOf(st.server) : null;
  const c = new Client(`http://127.0.0.1:${st.server.port}`, st.tokens);
  st.client = c;
  const w0 = performance.now();
  const texts = Array.from({ length: NEIGHBOURS }, (_, i) => entryText('neighbour', i));
  const subject = `bench-erasure-neighbour-${randomBytes(3).toString('hex')}`;
  const ids = new Array<string>(NEIGHBOURS);
  ids[0] = (await c.append(subject, texts[0]!)).entryId;
  await pool(NEIGHBOURS - 1, WRITE_CONCURRENCY, async (i) => {
    ids[i + 1] = (await c.append(subject, texts[i + 1]!)).entryId;
  });
  const neighbours = { ids, texts };
  st.warm = await writeSubject(c, `${st.factor}x-warmup`, neighbours);
  st.measured = [];
  for (let i = 0; i < SUBJECTS; i++) st.measured.push(await writeSubject(c, `${st.factor}x-${i}`, neighbours));
  st.writeSeconds = (performance.now() - w0) / 1000;
  progress(
    `erasure: ${backend} ${st.factor}x: service up in ${fmtSeconds(st.startSeconds)}` +
      (st.statistics ? ` (start-up statistics pass ${fmtNum(st.statistics.ms / 1000, 1)} s: ${st.statistics.tables.length} tables)` : '') +
      `, subjects written in ${fmtSeconds(st.writeSeconds)}`,
  );
}

/** One backend's three stores, prepared and served (their bulk, services and subjects). */
async function setUpBackend(backend: Backend, stores: Store[]): Promise<void> {
  // a store's service starts and takes its subjects while the next store's bulk goes in
  let serving: Promise<void> = Promise.resolve();
  serving.catch(() => {});
  for (const f of FACTORS) {
    const st = await prepareStore(backend, f);
    stores.push(st);
    serving = serving.then(() => serveStore(backend, st));
    serving.catch(() => {}); // awaited below; a failure meanwhile is not an unhandled rejection
  }
  await serving;
}

/**
 * One backend's erasures, alternating between its stores (warm-ups, then base, 20x,
 * 100x, base, 20x, 100x...), so that other work on a shared machine weighs on every size
 * alike; then its stores are dropped.
 */
async function measureBackend(backend: Backend, stores: Store[], setUpSeconds: number): Promise<BackendRun> {
  const started = performance.now();
  try {
    for (const st of stores) {
      st.warmup = await eraseOne(st.client!, st.warm!);
      progress(`erasure: ${backend} ${st.factor}x: warm-up ${st.warmup.status} in ${fmtNum(st.warmup.wallMs, 0)} ms`);
    }
    for (let i = 0; i < SUBJECTS; i++) {
      for (const st of stores) {
        st.loads.push(os.loadavg()[0]!);
        const e = await eraseOne(st.client!, st.measured![i]!);
        st.erasures.push(e);
        progress(
          `erasure: ${backend} ${st.factor}x: ${e.subject} ${e.status}${e.ok ? '' : ' (NOT as expected)'} in ${fmtNum(e.wallMs, 0)} ms; ${e.steps.map((x) => `${x.name} ${x.ms ?? '-'}`).join(', ')}`,
        );
      }
    }
    for (const st of stores) st.loads.push(os.loadavg()[0]!);
  } finally {
    for (const st of stores) await dropStore(st);
  }
  const sizes: SizeRun[] = [];
  for (const st of stores) {
    const medianWallMs = median(st.erasures.map((e) => e.wallMs));
    const names = st.erasures[0]!.steps.map((x) => x.name);
    sizes.push({
      factor: st.factor,
      targetEntries: st.targetEntries,
      counts: st.counts!,
      bulkSeconds: st.bulkSeconds!,
      vacuumAnalyzeSeconds: st.vacuumAnalyzeSeconds ?? null,
      statistics: st.statistics ?? null,
      startSeconds: st.startSeconds!,
      writeSeconds: st.writeSeconds!,
      warmup: st.warmup!,
      erasures: st.erasures,
      medianWallMs,
      stepMedians: names.map((name) => ({ name, ms: median(st.erasures.map((e) => e.steps.find((x) => x.name === name)?.ms ?? 0)) })),
      ratio: sizes.length ? medianWallMs / sizes[0]!.medianWallMs : 1,
      loadAvg: [Math.min(...st.loads), Math.max(...st.loads)],
    });
  }
  for (const s of sizes)
    progress(`erasure: ${backend} ${s.factor}x (${fmtInt(s.counts.entries)} entries): median ${fmtNum(s.medianWallMs, 0)} ms, ${fmtRatio(s.ratio)} the base`);
  return { backend, sizes, seconds: setUpSeconds + (performance.now() - started) / 1000 };
}

// ------------------------------------------------------------------ the probe's vector side at store scale

function randomUnit(v: Float32Array, state: { x: number }): Float32Array {
  let norm = 0;
  for (let j = 0; j < v.length; j++) {
    let x = state.x;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    state.x = x >>> 0;
    const f = state.x / 4294967296 - 0.5;
    v[j] = f;
    norm += f * f;
  }
  const inv = 1 / Math.sqrt(norm);
  for (let j = 0; j < v.length; j++) v[j]! *= inv;
  return v;
}

interface FilledIndex {
  readonly index: VectorIndex;
  readonly vectors: number;
  readonly fillSeconds: number;
}

/** Vectors per upsertMany while an index is filled. */
const FILL_BATCH = 1024;

/** One index per size, filled with random unit vectors. */
async function fillIndexes(dims: number, sizes: number[]): Promise<FilledIndex[]> {
  const out: FilledIndex[] = [];
  for (const n of sizes) {
    const state = { x: 0x9e3779b9 ^ n };
    const f0 = performance.now();
    const index = new VectorIndex(dims);
    // in batches (the graph inserts a batch on several threads), as the rebuild does
    for (let i = 0; i < n; i += FILL_BATCH) {
      const batch = [];
      for (let j = i; j < Math.min(n, i + FILL_BATCH); j++) {
        batch.push({ id: `bench_${j}`, type: 'entry' as const, keyId: `key_bench_${Math.floor(j / 50)}`, vector: randomUnit(new Float32Array(dims), state) });
      }
      index.upsertMany(batch);
      await new Promise((r) => setImmediate(r));
    }
    out.push({ index, vectors: n, fillSeconds: (performance.now() - f0) / 1000 });
  }
  return out;
}

/** The probe's query timed on each filled index, then the indexes dropped. */
function probeVectors(dims: number, filled: FilledIndex[]): ProbeVectors {
  const searches = Math.min(ENTRIES, PROBE_MAX_QUERIES);
  const out: ProbeVectors['sizes'] = [];
  for (const f of filled) {
    const state = { x: 0x85ebca6b };
    const queries = Array.from({ length: PROBE_QUERIES + 1 }, () => randomUnit(new Float32Array(dims), state));
    const times: number[] = [];
    for (const [i, q] of queries.entries()) {
      const t = performance.now();
      f.index.neighbours(q, { k: VECTOR_NEIGHBOURS, floor: 0.8, limit: VECTOR_LIMIT });
      if (i > 0) times.push(performance.now() - t); // the first one warms up
    }
    f.index.clear();
    const medianSearchMs = median(times);
    out.push({ vectors: f.vectors, fillSeconds: f.fillSeconds, medianSearchMs, projectedMs: medianSearchMs * searches });
    progress(
      `erasure: probe vectors: ${fmtInt(f.vectors)} vectors (filled in ${fmtSeconds(f.fillSeconds)}), search ${fmtNum(medianSearchMs, 2)} ms x ${searches} = ${fmtNum(medianSearchMs * searches, 0)} ms`,
    );
  }
  return { dimensions: dims, sizes: out, searches, ratio: out.at(-1)!.projectedMs / out[0]!.projectedMs };
}

// ------------------------------------------------------------------ orchestration

export async function runErasure(): Promise<ErasureResult> {
  // the backends' stores are set up side by side (bulks and services in child processes: two cores),
  // then each backend's erasures are measured while the other's services sit idle
  const stores = new Map<Backend, Store[]>(BACKENDS.map((b) => [b, []]));
  const backends: BackendRun[] = [];
  try {
    const s0 = performance.now();
    const setUp = await Promise.allSettled(BACKENDS.map((b) => setUpBackend(b, stores.get(b)!)));
    const failed = setUp.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    const setUpSeconds = (performance.now() - s0) / 1000;
    for (const b of BACKENDS) {
      progress(`erasure: === ${b}`);
      backends.push(await measureBackend(b, stores.get(b)!, setUpSeconds));
      stores.set(b, []);
    }
  } finally {
    for (const list of stores.values()) for (const st of list) await dropStore(st);
  }
  // the probe's vector side, after the erasures (filling an index holds this process's event loop, which the HTTP clients share)
  const dims = loadConfig({ LETHE_DATA_DIR: os.tmpdir(), LETHE_ROOT_KEY: randomRootKey() }).embeddingDimensions;
  const probeSizes = FACTORS.map((f) => BASE * f).filter((n) => FULL || n <= PROBE_MAX_VECTORS);
  const probe = PROBE_SCALE ? probeVectors(dims, await fillIndexes(dims, probeSizes)) : null;
  const aims: Aim[] = [];
  const warnings: string[] = [];
  for (const r of backends) {
    for (const s of r.sizes) {
      const bound = AIMS[s.factor];
      if (bound !== undefined) aims.push(aim(`erasure ${r.backend} ${s.factor}x store ÷ base`, s.ratio, `<= ${bound}`, s.ratio <= bound));
      for (const e of [s.warmup, ...s.erasures])
        if (!e.ok) warnings.push(`${r.backend} ${s.factor}x: the erasure of ${e.subject} ended ${e.status} with ${e.regenerated} regenerated`);
    }
  }
  return {
    shape: {
      base: BASE,
      factors: [...FACTORS],
      subjectsPerSize: SUBJECTS,
      entriesPerSubject: ENTRIES,
      summariesPerSubject: SUMMARIES,
      digestsPerSubject: 1,
      neighbourEntries: NEIGHBOURS,
    },
    backends,
    probeVectors: probe,
    aims,
    valid: warnings.length === 0,
    warnings,
  };
}

export function formatErasure(r: ErasureResult): string {
  const lines: string[] = [];
  lines.push(
    `One subject's erasure (${r.shape.entriesPerSubject} entries, ${r.shape.summariesPerSubject} summaries + ${r.shape.digestsPerSubject} digest, every artifact regenerated), ` +
      `request → settled over HTTP against \`lethe serve\`, ${r.shape.subjectsPerSize} subjects per size after a warm-up; the store grown from ${fmtInt(r.shape.base)} entries to ` +
      `${r.shape.factors
        .slice(1)
        .map((f) => `${f}x`)
        .join(' and ')} (bulk by SQL); PostgreSQL VACUUM ANALYZEd after each bulk, PGlite analyzed by the service's own start-up pass`,
  );
  for (const b of r.backends) {
    lines.push('');
    lines.push(`${b.backend} (${fmtSeconds(b.seconds)}):`);
    lines.push(
      table(
        ['store', 'entries', 'artifacts', 'edges', 'ledger', 'audit rows', 'erasures (wall ms)', 'median ms', 'ratio', 'bulk', 'statistics', 'start', 'load'],
        b.sizes.map((s) => [
          `${s.factor}x`,
          fmtInt(s.counts.entries),
          fmtInt(s.counts.artifacts),
          fmtInt(s.counts.edges),
          fmtInt(s.counts.ledger),
          fmtInt(s.counts.audit),
          s.erasures.map((e) => fmtNum(e.wallMs, 0)).join(' / '),
          fmtNum(s.medianWallMs, 0),
          fmtRatio(s.ratio),
          fmtSeconds(s.bulkSeconds),
          s.vacuumAnalyzeSeconds !== null
            ? `vacuum analyze ${fmtSeconds(s.vacuumAnalyzeSeconds)}`
            : s.statistics
              ? `start-up pass ${fmtNum(s.statistics.ms / 1000, 1)} s (${s.statistics.tables.length} tables)`
              : 'none logged',
          fmtSeconds(s.startSeconds),
          `${fmtNum(s.loadAvg[0], 1)}-${fmtNum(s.loadAvg[1], 1)}`,
        ]),
      ),
    );
    const names = b.sizes[0]!.stepMedians.map((m) => m.name);
    lines.push(
      table(
        ['step (median ms)', ...b.sizes.map((s) => `${s.factor}x`)],
        names.map((n) => [n, ...b.sizes.map((s) => fmtNum(s.stepMedians.find((m) => m.name === n)?.ms ?? 0, 0))]),
      ),
    );
  }
  if (r.probeVectors) {
    const p = r.probeVectors;
    lines.push('');
    lines.push(
      `The probe's vector side at store scale (in process: a VectorIndex of one random ${p.dimensions}-dimension vector per entry; the probe's query, ` +
        `${p.searches} per erasure of this shape): ` +
        p.sizes
          .map(
            (s) =>
              `${fmtInt(s.vectors)} vectors ${fmtNum(s.medianSearchMs, 2)} ms a search, ${fmtNum(s.projectedMs, 0)} ms an erasure (fill ${fmtSeconds(s.fillSeconds)})`,
          )
          .join('; ') +
        `; ${fmtRatio(p.ratio)} from the smallest to the largest (reported)`,
    );
  }
  lines.push('');
  for (const a of r.aims) lines.push(`${a.name} = ${fmtRatio(a.ratio)}; aim ${a.aim}: ${a.met ? 'met' : 'NOT met'}`);
  for (const w of r.warnings) lines.push(`WARNING: ${w}`);
  return lines.join('\n');
}

if (process.env.BENCH_ERASURE_SEED) await runIfMain(import.meta.url, seedStore, () => '');
else await runIfMain(import.meta.url, runErasure, formatErasure);

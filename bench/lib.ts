/**
 * Shared helpers for the benchmarks: settings from the environment, scratch
 * databases and vaults, timing statistics, child processes that report JSON, and
 * plain-text tables.
 *
 * Benchmarks never assert on timings: they measure, compare against a baseline
 * measured in the same run, and print.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from 'minio';
import postgres from 'postgres';
import { loadConfig } from '../src/config/index.js';
import { createLogger } from '../src/observability/logger.js';
import { openApp, type App } from '../src/app/open.js';

export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
export const BENCH_DIR = fileURLToPath(new URL('.', import.meta.url));

/** BENCH_QUICK=1: small counts and short durations, for a smoke run. */
export const QUICK = process.env.BENCH_QUICK === '1' || process.env.BENCH_QUICK === 'true';

/**
 * BENCH_FULL=1: the full counts a section keeps out of the default run for time — the
 * million-scale stores and graphs, 1,000 backups, 100,000-key provider rotations. The
 * default `npm run bench` aims at 10 minutes on the 2-core development machine.
 */
export const FULL = process.env.BENCH_FULL === '1' || process.env.BENCH_FULL === 'true';

/** The wall-time target of a default `npm run bench`, child processes' start-up included (issue 17). */
export const DEFAULT_RUN_TARGET_SECONDS = 600;

/** A count by mode: `quick` with BENCH_QUICK=1, else `full` with BENCH_FULL=1, else `normal` (the default run). */
export function byMode<T>(counts: { readonly quick: T; readonly normal: T; readonly full: T }): T {
  return QUICK ? counts.quick : FULL ? counts.full : counts.normal;
}

/**
 * One figure's aim: the same-run ratio, the aim as text (e.g. `<= 2`) and whether the
 * ratio meets it. Sections carry `aims: Aim[]` in their results; run.ts prints them all
 * in one table. Figures that are only reported have no aim (and no entry).
 */
export interface Aim {
  readonly name: string;
  readonly ratio: number;
  readonly aim: string;
  readonly met: boolean;
}

/** An Aim; a ratio that is not a finite number never meets its aim. */
export function aim(name: string, ratio: number, aimText: string, met: boolean): Aim {
  return { name, ratio, aim: aimText, met: met && Number.isFinite(ratio) };
}

/** `aim <= 2: met` / `aim <= 2: NOT met`, for a section's own lines. */
export function aimVerdict(a: Aim): string {
  return `aim ${a.aim}: ${a.met ? 'met' : 'NOT met'}`;
}

/** A section's aims as a table (empty string when it has none). */
export function formatAims(aims: readonly Aim[] | undefined): string {
  if (!aims || aims.length === 0) return '';
  return table(
    ['figure', 'ratio', 'aim', 'verdict'],
    aims.map((a) => [a.name, fmtRatio(a.ratio), a.aim, a.met ? 'met' : 'NOT met']),
  );
}

/** A whole number >= `min` from the environment variable `name` (`_` and `,` allowed as separators), else `fallback`. */
export function envInt(name: string, fallback: number, min: number): number {
  const raw = process.env[name]?.trim();
  if (!raw) return fallback;
  const n = Number(raw.replace(/[_,]/g, ''));
  if (!Number.isSafeInteger(n) || n < min) throw new Error(`${name} must be a whole number >= ${min}`);
  return n;
}

/** Number of keys for the re-wrap benchmark (BENCH_KEYS, default 20,000; 1,000,000 with BENCH_FULL=1; 20,000 when quick). */
export function benchKeys(): number {
  return envInt('BENCH_KEYS', byMode({ quick: 20_000, normal: 20_000, full: 1_000_000 }), 10);
}

/** Server holding the scratch databases (admin connection; trust auth). */
export const PG_ADMIN_URL = process.env.BENCH_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export function databaseUrl(name: string): string {
  const u = new URL(PG_ADMIN_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

const liveDatabases = new Set<string>();
let interruptHandler = false;

/** Ctrl-C / SIGTERM: drop this process's scratch databases before exiting. */
function dropOnInterrupt(): void {
  if (interruptHandler) return;
  interruptHandler = true;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      progress(`${signal}: dropping ${[...liveDatabases].join(', ') || 'no databases'}`);
      Promise.allSettled([...liveDatabases].map((n) => dropScratchDatabase(n))).finally(() => process.exit(130));
    });
  }
}

/** Creates a fresh lethe_bench_* database; returns its name and URL. */
export async function createScratchDatabase(label: string): Promise<{ name: string; url: string }> {
  const name = `lethe_bench_${label}_${process.pid}_${randomBytes(3).toString('hex')}`;
  if (!/^lethe_bench_[a-z0-9_]+$/.test(name)) throw new Error(`bad database name ${name}`);
  dropOnInterrupt();
  const sql = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    await sql.unsafe(`create database ${name}`);
    liveDatabases.add(name);
  } finally {
    await sql.end({ timeout: 5 });
  }
  return { name, url: databaseUrl(name) };
}

/** Drops a database this benchmark created (only lethe_bench_* names). */
export async function dropScratchDatabase(name: string): Promise<void> {
  if (!/^lethe_bench_[a-z0-9_]+$/.test(name)) throw new Error(`refusing to drop ${name}`);
  const sql = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    await sql.unsafe(`drop database if exists ${name} with (force)`);
    liveDatabases.delete(name);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

export async function makeTempDir(label: string): Promise<string> {
  return mkdtemp(path.join(tmpdir(), `lethe-bench-${label}-`));
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/** A random root key in the form LETHE_ROOT_KEY expects. */
export function randomRootKey(): string {
  return randomBytes(32).toString('base64');
}

export interface ScratchVault {
  readonly vault: App;
  readonly db: { readonly name: string; readonly url: string };
  readonly dataDir: string;
  /** Closes the vault, drops the database and removes the data directory; a failing step is reported, not thrown. */
  readonly cleanup: () => Promise<void>;
}

/**
 * Opens a vault on a fresh scratch database (migrations run; local filesystem object
 * store under a fresh temp dir; no listener, so no search index rebuild at open).
 */
export async function scratchVault(
  label: string,
  options: { beforeOpen?: (db: { readonly name: string; readonly url: string }) => Promise<void> } = {},
): Promise<ScratchVault> {
  const db = await createScratchDatabase(label);
  const dataDir = await makeTempDir(label);
  const env: Record<string, string> = { DATABASE_URL: db.url, LETHE_DATA_DIR: dataDir, LETHE_ROOT_KEY: randomRootKey(), LETHE_LOG_LEVEL: 'warn' };
  let vault: App;
  try {
    // database settings that must be in place before the vault's sessions connect
    await options.beforeOpen?.(db);
    // no S3_* variables: the local filesystem object store under dataDir; listen false: no rebuild at open
    vault = await openApp(loadConfig(env), { logger: createLogger('warn', process.stderr), listen: false });
  } catch (e) {
    await dropScratchDatabase(db.name).catch(() => {});
    await removeDir(dataDir);
    throw e;
  }
  return {
    vault,
    db,
    dataDir,
    cleanup: () =>
      cleanup(label, [
        ['vault', () => vault.close()],
        ['database', () => dropScratchDatabase(db.name)],
        ['data dir', () => removeDir(dataDir)],
      ]),
  };
}

/**
 * Runs cleanup steps in order. A step that fails is reported on stderr as
 * `<label>: cleanup of the <name> failed: <message>`, not thrown, and the next step still runs.
 */
export async function cleanup(label: string, steps: Array<[string, () => Promise<unknown>]>): Promise<void> {
  for (const [name, step] of steps) {
    try {
      await step();
    } catch (e) {
      progress(`${label}: cleanup of the ${name} failed: ${(e as Error).message}`);
    }
  }
}

// ---------------------------------------------------------------- statistics

/** Latency figures of a series of timed calls, in milliseconds. */
export interface LatencyStats {
  readonly runs: number;
  readonly warmups: number;
  readonly medianMs: number;
  readonly p95Ms: number;
  readonly minMs: number;
  readonly maxMs: number;
  readonly meanMs: number;
}

/** The median (mean of the middle two for an even count). */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** Latency figures of `samples` (ms; nearest-rank p95); `warmups` is only recorded. */
export function stats(samples: number[], warmups: number): LatencyStats {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
  return {
    runs: s.length,
    warmups,
    medianMs: median(s),
    p95Ms: at(95),
    minMs: s[0]!,
    maxMs: s[s.length - 1]!,
    meanMs: s.reduce((a, b) => a + b, 0) / s.length,
  };
}

/** user + system CPU seconds of this process since `since` (a process.cpuUsage() reading). */
export function cpuSeconds(since: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1e6;
}

/** Progress for humans, on stderr (stdout carries the tables). */
export function progress(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

/** Forces full garbage collections (node --expose-gc; run.ts passes it to the sections that measure memory). */
export function gcNow(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('this benchmark needs node --expose-gc (run.ts passes it)');
  for (let i = 0; i < 4; i++) gc();
}

/** The heap and array-buffer bytes in use now. */
export function memNow(): { heapUsed: number; arrayBuffers: number } {
  const m = process.memoryUsage();
  return { heapUsed: m.heapUsed, arrayBuffers: m.arrayBuffers };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Runs a TypeScript file in a fresh Node process (tsx loader, optional extra node
 * flags). The child writes its JSON result to the file named by BENCH_RESULT_FILE;
 * its stdout and stderr pass through. Resolves to the parsed result.
 */
export async function runChild<T>(script: string, options: { nodeArgs?: string[]; args?: string[]; env?: Record<string, string> } = {}): Promise<T> {
  const dir = await makeTempDir('result');
  const resultFile = path.join(dir, 'result.json');
  try {
    const child = spawn(process.execPath, [...(options.nodeArgs ?? []), '--import', 'tsx', script, ...(options.args ?? [])], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...options.env, BENCH_RESULT_FILE: resultFile, BENCH_CHILD: '1' },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (c, signal) => resolve(signal ? 128 : c));
    });
    if (code !== 0) throw new Error(`${path.relative(REPO_ROOT, script)} exited with code ${code}`);
    return JSON.parse(await readFile(resultFile, 'utf8')) as T;
  } finally {
    await removeDir(dir);
  }
}

/** In a child started by runChild: hands the result back. */
export async function reportResult(result: unknown): Promise<void> {
  const file = process.env.BENCH_RESULT_FILE;
  if (file) await writeFile(file, JSON.stringify(result));
}

/** True when `importMetaUrl` is the script node was started with. */
export function isMain(importMetaUrl: string): boolean {
  const entry = process.argv[1];
  return entry !== undefined && path.resolve(entry) === fileURLToPath(importMetaUrl);
}

/**
 * A benchmark script's entry point: when `importMetaUrl` is the script node was started
 * with, runs the benchmark, hands the result back (reportResult) and, unless it runs as
 * a child of run.ts (BENCH_CHILD), prints it formatted on stdout.
 */
export async function runIfMain<T>(importMetaUrl: string, run: () => Promise<T>, format: (r: T) => string): Promise<void> {
  if (!isMain(importMetaUrl)) return;
  const result = await run();
  await reportResult(result);
  if (!process.env.BENCH_CHILD) process.stdout.write(`${format(result)}\n`);
}

// ---------------------------------------------------------------- formatting

export function fmtInt(n: number): string {
  if (!Number.isFinite(n)) return 'n/a';
  return Math.round(n).toLocaleString('en-US');
}

export function fmtNum(n: number, digits = 1): string {
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export function fmtRatio(r: number): string {
  if (!Number.isFinite(r)) return 'n/a';
  return `${r >= 10 ? r.toFixed(1) : r >= 0.1 ? r.toFixed(2) : r.toFixed(3)}x`;
}

export function fmtMiB(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

export function fmtSeconds(s: number): string {
  return s >= 100 ? `${s.toFixed(0)} s` : `${s.toFixed(1)} s`;
}

export function fmtBytes(n: number): string {
  if (n >= 1024 * 1024) return `${n / (1024 * 1024)} MiB`;
  if (n >= 1024) return `${n / 1024} KiB`;
  return `${n} B`;
}

/** A plain-text table; the first column is left-aligned, numeric-looking cells of the others right-aligned. */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const isNumeric = (s: string) => /^[-+~]?[\d.,]+/.test(s) || s === 'n/a' || s === 'NaN';
  const line = (cells: string[], header = false) =>
    `| ${cells
      .map((c, i) => (header || i === 0 || !isNumeric(c) ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join(' | ')} |`;
  const sep = `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`;
  return [line(headers, true), sep, ...rows.map((r) => line(r))].join('\n');
}

/** Runs fn(0..count-1) with at most `limit` in flight. */
export async function pool(count: number, limit: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, count) }, async () => {
      while (next < count) await fn(next++);
    }),
  );
}

/** A minio client for a MinIO server the bench started (infra/minio-server.ts). */
export function minioClient(m: { readonly endpoint: string; readonly accessKey: string; readonly secretKey: string }): Client {
  const url = new URL(m.endpoint);
  return new Client({ endPoint: url.hostname, port: Number(url.port), useSSL: false, accessKey: m.accessKey, secretKey: m.secretKey, region: 'us-east-1', pathStyle: true });
}

/** Every object under `prefix` in the bucket (current versions), with its size. */
export async function listObjects(client: Client, bucket: string, prefix = ''): Promise<Array<{ name: string; size: number }>> {
  return new Promise((resolve, reject) => {
    const out: Array<{ name: string; size: number }> = [];
    const stream = client.listObjectsV2(bucket, prefix, true);
    stream.on('data', (o) => {
      if (o.name) out.push({ name: o.name, size: o.size ?? 0 });
    });
    stream.on('error', reject);
    stream.on('end', () => resolve(out));
  });
}

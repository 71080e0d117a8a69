/**
 * Shared helpers for the benchmarks: settings from the environment, scratch
 * databases, child processes that report JSON, and plain-text tables.
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
import postgres from 'postgres';

export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
export const BENCH_DIR = fileURLToPath(new URL('.', import.meta.url));

/** BENCH_QUICK=1: small counts and short durations, for a smoke run. */
export const QUICK = process.env.BENCH_QUICK === '1' || process.env.BENCH_QUICK === 'true';

/** Number of keys for the re-wrap benchmark (BENCH_KEYS, default 1,000,000; 20,000 when quick). */
export function benchKeys(): number {
  const raw = process.env.BENCH_KEYS?.trim();
  if (raw) {
    const n = Number(raw.replace(/[_,]/g, ''));
    if (!Number.isSafeInteger(n) || n < 10) throw new Error('BENCH_KEYS must be a whole number >= 10');
    return n;
  }
  return QUICK ? 20_000 : 1_000_000;
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

/** Progress for humans, on stderr (stdout carries the tables). */
export function progress(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
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

/**
 * The bench's modes and settings: where the repository is, BENCH_QUICK / BENCH_FULL and a
 * count by mode, whole numbers from the environment.
 */
import os from 'node:os';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BENCH_DIR = fileURLToPath(new URL('..', import.meta.url));

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
/** A 1-min load average above this (1.5 per CPU: 3 on the 2-core machine) makes a run's figures not comparable. */
export const COMPARABLE_LOAD = 1.5 * os.cpus().length;

/** A count by mode: `quick` with BENCH_QUICK=1, else `full` with BENCH_FULL=1, else `normal` (the default run). */
export function byMode<T>(counts: { readonly quick: T; readonly normal: T; readonly full: T }): T {
  return QUICK ? counts.quick : FULL ? counts.full : counts.normal;
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

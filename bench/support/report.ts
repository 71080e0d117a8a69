/**
 * What a section prints and hands back: aims (a same-run ratio against its aim), latency
 * statistics, numbers formatted, plain-text tables, progress lines on stderr.
 *
 * Benchmarks never assert on timings: they measure, compare against a baseline measured
 * in the same run, and print.
 */

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

/** Progress for humans, on stderr (stdout carries the tables). */
export function progress(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
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
    `| ${cells.map((c, i) => (header || i === 0 || !isNumeric(c) ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  const sep = `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`;
  return [line(headers, true), sep, ...rows.map((r) => line(r))].join('\n');
}

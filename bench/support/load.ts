/**
 * HTTP load against a running service: autocannon runs summarised, with the service's
 * CPU time per request and resident memory (from /proc), and a bounded map over items.
 */
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

export interface LoadResult {
  readonly label: string;
  readonly connections: number;
  readonly durationSeconds: number;
  /** Mean of autocannon's per-second samples. */
  readonly reqPerSec: number;
  readonly requestsTotal: number;
  readonly ok2xx: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly latencyMs: { readonly p50: number; readonly p99: number; readonly mean: number; readonly max: number };
}

export function runAutocannon(opts: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(opts, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

export function summarize(label: string, r: autocannon.Result): LoadResult {
  return {
    label,
    connections: r.connections,
    durationSeconds: r.duration,
    reqPerSec: r.requests.average,
    requestsTotal: r.requests.total,
    ok2xx: r['2xx'],
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    latencyMs: { p50: r.latency.p50, p99: r.latency.p99, mean: r.latency.mean, max: r.latency.max },
  };
}

export async function mapLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/** CPU seconds (user + system) a process has used so far, from /proc (undefined off Linux). */
export function processCpuSeconds(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}
/** A process's resident set (VmRSS, bytes) from /proc (undefined off Linux or once it is gone). */
export function processRssBytes(pid: number): number | undefined {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('VmRSS:'));
    // "VmRSS:   123456 kB"
    return line ? Number(line.split(/\s+/)[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** USER_HZ: /proc counts CPU time in these ticks per second (100 on Linux). */
const CLOCK_TICKS = 100;

/** One autocannon run with the service's CPU time per request over it (null when /proc is not there). */
export async function measured(label: string, pid: number, opts: autocannon.Options): Promise<LoadResult & { serviceCpuUsPerReq: number | null }> {
  const before = processCpuSeconds(pid);
  const r = summarize(label, await runAutocannon(opts));
  const after = processCpuSeconds(pid);
  return { ...r, serviceCpuUsPerReq: before === undefined || after === undefined || r.requestsTotal === 0 ? null : ((after - before) * 1e6) / r.requestsTotal };
}

/**
 * Lease throughput against /healthz: the service runs as a child process
 * (`node --import tsx src/cli/main.ts serve`) on a fresh lethe_bench_* database and
 * is driven over loopback by autocannon from this process.
 *
 * Baseline: GET /healthz (the HTTP stack and middleware, no vault work), at the same
 * number of connections. Measured: POST /v1/subjects/{subject}/key/lease over a fixed
 * set of subjects whose keys exist (made by one POST /v1/keys/batch) and whose DEKs are
 * cached (every subject is leased once first), so the figure is the warm lease path:
 * token check, cache hit, group-committed lease record + audit row in PostgreSQL, JSON
 * response. At 16 connections (the aim: lease >= 0.5x /healthz; the issue's peer
 * figures are at 16 clients), and at 64 too with BENCH_FULL=1. The service's CPU time
 * per request in each phase is read from /proc (Linux), next to the rates.
 *
 * Each phase has an unmeasured autocannon warm-up first; healthz and lease alternate at
 * each connection count. Each connection walks the subject list from its own offset,
 * so concurrent requests hit different keys. BENCH_QUICK=1: 1 s phases, 200 subjects;
 * BENCH_FULL=1: 10 s phases.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type autocannon from 'autocannon';
import postgres from 'postgres';
import { type LoadResult, mapLimit, measured, runAutocannon } from './support/load.js';
import { byMode, envInt, FULL, QUICK } from './support/mode.js';
import { openScratch } from './support/scratch.js';
import { runIfMain } from './support/process.js';
import { startScratchService } from './support/service.js';
import { type Aim, aim, aimVerdict, fmtInt, fmtNum, fmtRatio, progress, table } from './support/report.js';

export interface LeasePhase {
  readonly connections: number;
  readonly healthz: LoadResult & { readonly serviceCpuUsPerReq: number | null };
  readonly lease: LoadResult & { readonly serviceCpuUsPerReq: number | null };
  /** lease req/s ÷ healthz req/s at these connections. */
  readonly ratio: number;
}

export interface LeaseResult {
  readonly subjects: number;
  /** The headline's connections (the aim's). */
  readonly connections: number;
  /** The headline phase (16 connections). */
  readonly healthz: LoadResult;
  readonly lease: LoadResult;
  /** lease req/s ÷ healthz req/s at the headline's connections; aim >= 0.5. */
  readonly ratio: number;
  readonly target: number;
  /** Every connection count measured (16; then 64 with BENCH_FULL=1). */
  readonly phases: LeasePhase[];
  readonly valid: boolean;
  readonly warnings: string[];
  /** DEK cache hits ÷ lookups during the headline lease phase (from /metrics). */
  readonly cacheHitRate: number | null;
  /** key.lease audit rows written during the headline phase (should equal 2xx). */
  readonly leaseAuditRows: number;
  /** Group-commit statements that recorded those leases (distinct audit timestamps). */
  readonly leaseBatches: number;
  readonly leasesPerBatch: number;
  readonly batchesPerSec: number;
  readonly loadAvg1: [number, number];
  readonly aims: Aim[];
}

/** Sum of a Prometheus counter's samples whose labels contain `labelMatch`. */
function counter(text: string, name: string, labelMatch: string): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{`) && line.includes(labelMatch)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** The lease bench's connection counts: the first carries the aim (64 too with BENCH_FULL=1). */
const CONNECTIONS: readonly number[] = FULL ? [16, 64] : [16];

export async function runLease(): Promise<LeaseResult> {
  const subjects = envInt('BENCH_LEASE_SUBJECTS', QUICK ? 200 : 1000, 1);
  const duration = byMode({ quick: 1, normal: 4, full: 10 });
  const warmup = byMode({ quick: 0.5, normal: 1, full: 2 });
  const writerToken = `writer-${randomBytes(18).toString('base64url')}`;
  const adminToken = `admin-${randomBytes(18).toString('base64url')}`;
  const load0 = os.loadavg()[0]!;

  const scratch = await openScratch('lease');
  const { db } = scratch;
  try {
    progress(`lease: starting the service on ${db.name}`);
    const server = await startScratchService(scratch, { LETHE_TOKENS: `writer=${writerToken},admin=${adminToken}` });
    const pid = server.child.pid!;
    const base = `http://127.0.0.1:${server.port}`;
    const auth = { authorization: `Bearer ${writerToken}` };
    const names = Array.from({ length: subjects }, (_, i) => `bench-subject-${String(i).padStart(6, '0')}`);
    const paths = names.map((s) => `/v1/subjects/${s}/key/lease`);

    progress(`lease: creating ${subjects} subject keys (POST /v1/keys/batch), then one lease each`);
    const made = await fetch(`${base}/v1/keys/batch`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ subjects: names }),
    });
    const madeBody = (await made.json()) as { created?: number };
    if (made.status !== 200 || madeBody.created !== subjects) throw new Error(`key batch failed: ${made.status} ${JSON.stringify(madeBody).slice(0, 300)}`);
    const warmCache = () =>
      mapLimit(paths, 16, async (p) => {
        const res = await fetch(`${base}${p}`, { method: 'POST', headers: auth });
        const body = (await res.json()) as { keyId?: string; dek?: string };
        if (res.status !== 200 || !body.keyId?.startsWith('key_') || body.dek?.length !== 43) {
          throw new Error(`lease warm-up failed: ${res.status} ${JSON.stringify(body)}`);
        }
      });
    await warmCache();

    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    const phases: LeasePhase[] = [];
    let before: { metrics: string; seq: number } | undefined;
    let after: { metrics: string; seq: number } | undefined;
    let audit = { rows: 0, batches: 0 };
    const auditSeq = async () => Number((await sql`select coalesce(max(seq), 0)::bigint as s from audit_log`)[0]?.s ?? 0);
    try {
      for (const connections of CONNECTIONS) {
        progress(
          `lease: GET /healthz, then POST .../key/lease over ${subjects} subjects; ${connections} connections, ${warmup} s warm-up + ${duration} s each`,
        );
        const healthzOpts: autocannon.Options = { url: `${base}/healthz`, connections, method: 'GET' };
        await runAutocannon({ ...healthzOpts, duration: warmup });
        const healthz = await measured('GET /healthz', pid, { ...healthzOpts, duration });

        let clientNo = 0;
        const leaseOpts: autocannon.Options = {
          url: base,
          connections,
          method: 'POST',
          headers: auth,
          requests: paths.map((path) => ({ path })),
          setupClient: (client) => {
            // every connection starts at its own place in the subject list
            const offset = Math.floor(((clientNo++ % connections) * paths.length) / connections);
            client.setRequests([...paths.slice(offset), ...paths.slice(0, offset)].map((path) => ({ path, method: 'POST', headers: auth })));
          },
        };
        await runAutocannon({ ...leaseOpts, duration: warmup });
        // the cache entries are 60 s old at most; refresh them so none expire mid-run
        await warmCache();
        const first = phases.length === 0;
        if (first) before = { metrics: await (await fetch(`${base}/metrics`)).text(), seq: await auditSeq() };
        const lease = await measured('POST /v1/subjects/{s}/key/lease', pid, { ...leaseOpts, duration });
        if (first) {
          after = { metrics: await (await fetch(`${base}/metrics`)).text(), seq: await auditSeq() };
          // one group-commit batch appends its audit rows with one shared timestamp
          const [row] = await sql<{ rows: number; batches: number }[]>`
            select count(*)::int as rows, count(distinct at)::int as batches
              from audit_log where action = 'key.lease' and seq > ${before!.seq} and seq <= ${after.seq}`;
          audit = { rows: row?.rows ?? 0, batches: row?.batches ?? 0 };
        }
        phases.push({ connections, healthz, lease, ratio: lease.reqPerSec / healthz.reqPerSec });
      }
    } finally {
      await sql.end({ timeout: 5 });
    }
    const headline = phases[0]!;
    const hits =
      counter(after!.metrics, 'lethe_dek_cache_lookups_total', 'result="hit"') - counter(before!.metrics, 'lethe_dek_cache_lookups_total', 'result="hit"');
    const misses =
      counter(after!.metrics, 'lethe_dek_cache_lookups_total', 'result="miss"') - counter(before!.metrics, 'lethe_dek_cache_lookups_total', 'result="miss"');

    const warnings: string[] = [];
    for (const p of phases) {
      for (const r of [p.healthz, p.lease]) {
        if (r.non2xx > 0 || r.errors > 0 || r.timeouts > 0) {
          warnings.push(`${r.label} at ${p.connections} connections: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts: the run is NOT valid`);
        }
      }
    }
    if (audit.rows < headline.lease.ok2xx) warnings.push(`only ${audit.rows} key.lease audit rows for ${headline.lease.ok2xx} granted leases`);
    const target = 0.5;
    return {
      subjects,
      connections: headline.connections,
      healthz: headline.healthz,
      lease: headline.lease,
      ratio: headline.ratio,
      target,
      phases,
      valid: warnings.length === 0,
      warnings,
      cacheHitRate: hits + misses > 0 ? hits / (hits + misses) : null,
      leaseAuditRows: audit.rows,
      leaseBatches: audit.batches,
      leasesPerBatch: audit.batches > 0 ? audit.rows / audit.batches : 0,
      batchesPerSec: audit.batches / headline.lease.durationSeconds,
      loadAvg1: [load0, os.loadavg()[0]!],
      aims: [aim(`lease ÷ /healthz req/s, ${headline.connections} connections`, headline.ratio, `>= ${target}`, headline.ratio >= target)],
    };
  } finally {
    await scratch.cleanup();
  }
}

export function formatLease(r: LeaseResult): string {
  const cpu = (x: number | null) => (x === null ? 'n/a' : fmtInt(x));
  const rows = r.phases.flatMap((p) =>
    [p.healthz, p.lease].map((l) => [
      l.label,
      String(p.connections),
      fmtInt(l.reqPerSec),
      fmtNum(l.latencyMs.p50, 0),
      fmtNum(l.latencyMs.p99, 0),
      cpu(l.serviceCpuUsPerReq),
      fmtInt(l.ok2xx),
      fmtInt(l.non2xx + l.errors + l.timeouts),
    ]),
  );
  const lines = [
    `Lease throughput vs /healthz (baseline) at the same connections; ${fmtNum(r.lease.durationSeconds, 0)} s each, ${r.subjects} subjects, loopback`,
    table(['endpoint', 'connections', 'req/s', 'p50 ms', 'p99 ms', 'service CPU µs/req', '2xx', 'non-2xx/err'], rows),
    ...r.phases.map(
      (p) =>
        `lease / healthz at ${p.connections} connections = ${fmtRatio(p.ratio)}${p.connections === r.connections ? ` (${aimVerdict(r.aims[0]!)})` : ' (reported)'}`,
    ),
    `DEK cache hit rate ${r.cacheHitRate === null ? 'n/a' : `${(r.cacheHitRate * 100).toFixed(1)}%`}; ${fmtInt(r.leaseAuditRows)} key.lease audit rows for ${fmtInt(r.lease.ok2xx)} granted leases ` +
      `(${r.connections} connections)`,
    `lease group commit: ${fmtInt(r.leaseBatches)} statements (${fmtNum(r.batchesPerSec, 0)}/s), ${fmtNum(r.leasesPerBatch, 1)} leases per statement; ` +
      `1-min load average ${fmtNum(r.loadAvg1[0], 2)} -> ${fmtNum(r.loadAvg1[1], 2)}`,
  ];
  for (const w of r.warnings) lines.push(`WARNING: ${w}`);
  return lines.join('\n');
}

await runIfMain(import.meta.url, runLease, formatLease);

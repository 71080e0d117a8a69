/**
 * Lease throughput against /healthz: the service runs as a child process
 * (`node --import tsx src/cli/main.ts serve`) on a fresh lethe_bench_* database and
 * is driven over loopback by autocannon from this process.
 *
 * Baseline: GET /healthz (the HTTP stack and middleware, no vault work).
 * Measured: POST /v1/subjects/{subject}/key/lease over a fixed set of subjects whose
 * keys exist and whose DEKs are cached (every subject is leased once first), so the
 * figure is the warm lease path: token check, cache hit, group-committed lease
 * record + audit row in PostgreSQL, JSON response.
 *
 * Each phase has an unmeasured autocannon warm-up first. Each connection walks the
 * subject list from its own offset, so concurrent requests hit different keys.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import postgres from 'postgres';
import {
  createScratchDatabase,
  dropScratchDatabase,
  fmtInt,
  fmtNum,
  fmtRatio,
  makeTempDir,
  progress,
  QUICK,
  randomRootKey,
  removeDir,
  REPO_ROOT,
  runIfMain,
  table,
} from './lib.js';

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

export interface LeaseResult {
  readonly subjects: number;
  readonly healthz: LoadResult;
  readonly lease: LoadResult;
  /** lease req/s ÷ healthz req/s; target >= 0.5. */
  readonly ratio: number;
  readonly target: number;
  readonly valid: boolean;
  readonly warnings: string[];
  /** DEK cache hits ÷ lookups during the measured lease phase (from /metrics). */
  readonly cacheHitRate: number | null;
  /** key.lease audit rows written during the measured phase (should equal 2xx). */
  readonly leaseAuditRows: number;
  /** Group-commit transactions that recorded those leases (distinct audit timestamps). */
  readonly leaseBatches: number;
  readonly leasesPerBatch: number;
  readonly batchesPerSec: number;
}

export interface Server {
  readonly child: ChildProcess;
  readonly port: number;
  readonly stderrTail: string[];
}

export function serviceEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    // never let the caller's lethe settings leak into the benchmark service
    if (k.startsWith('LETHE_') || k.startsWith('BENCH_') || ['DATABASE_URL', 'PORT', 'HOST', 'NODE_ENV'].includes(k)) continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

export async function startService(env: Record<string, string>): Promise<Server> {
  // BENCH_SERVER_NODE_ARGS: extra node flags for the service (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof")
  const extraArgs = process.env.BENCH_SERVER_NODE_ARGS?.split(/\s+/).filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...extraArgs, '--import', 'tsx', 'src/cli/main.ts', 'serve'], {
    cwd: REPO_ROOT,
    env: serviceEnv(env),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const stderrTail: string[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not log "lethe listening" within 60 s:\n${stderrTail.join('\n')}`)), 60_000);
    const lines = createInterface({ input: child.stderr! });
    lines.on('line', (line) => {
      stderrTail.push(line);
      if (stderrTail.length > 50) stderrTail.shift();
      try {
        const entry = JSON.parse(line) as { msg?: string; port?: number };
        if (entry.msg === 'lethe listening' && typeof entry.port === 'number') {
          clearTimeout(timer);
          resolve(entry.port);
        }
      } catch {
        // not a JSON log line (a stack trace, a tsx warning): kept in the tail
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`service exited (code ${code}, signal ${signal}) before listening:\n${stderrTail.join('\n')}`));
    });
    child.once('error', reject);
  });
  return { child, port, stderrTail };
}

export async function stopService(server: Server): Promise<void> {
  const { child } = server;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
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

/** Sum of a Prometheus counter's samples whose labels contain `labelMatch`. */
function counter(text: string, name: string, labelMatch: string): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{`) && line.includes(labelMatch)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

export async function mapLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

export async function runLease(): Promise<LeaseResult> {
  const subjects = Number(process.env.BENCH_LEASE_SUBJECTS ?? (QUICK ? 100 : 1000));
  const connections = 50;
  const duration = QUICK ? 2 : 10;
  const warmup = QUICK ? 1 : 2;
  const writerToken = `writer-${randomBytes(18).toString('base64url')}`;
  const adminToken = `admin-${randomBytes(18).toString('base64url')}`;

  const db = await createScratchDatabase('lease');
  const dataDir = await makeTempDir('lease');
  let server: Server | undefined;
  try {
    progress(`lease: starting the service on ${db.name}`);
    server = await startService({
      DATABASE_URL: db.url,
      LETHE_DATA_DIR: dataDir,
      LETHE_ROOT_KEY: randomRootKey(),
      LETHE_TOKENS: `writer=${writerToken},admin=${adminToken}`,
      PORT: '0',
      HOST: '127.0.0.1',
      // info, not warn: "lethe listening" (with the port) is an info line. The
      // service logs nothing per request below debug, so this costs nothing.
      LETHE_LOG_LEVEL: 'info',
    });
    const base = `http://127.0.0.1:${server.port}`;
    const auth = { authorization: `Bearer ${writerToken}` };
    const paths = Array.from({ length: subjects }, (_, i) => `/v1/subjects/bench-subject-${String(i).padStart(6, '0')}/key/lease`);

    progress(`lease: creating ${subjects} subject keys (one lease each)`);
    await mapLimit(paths, 16, async (p) => {
      const res = await fetch(`${base}${p}`, { method: 'POST', headers: auth });
      const body = (await res.json()) as { keyId?: string; dek?: string };
      if (res.status !== 200 || !body.keyId?.startsWith('key_') || body.dek?.length !== 43) {
        throw new Error(`lease warm-up failed: ${res.status} ${JSON.stringify(body)}`);
      }
    });

    progress(`lease: GET /healthz, ${connections} connections, ${warmup} s warm-up + ${duration} s`);
    const healthzOpts: autocannon.Options = { url: `${base}/healthz`, connections, method: 'GET' };
    await runAutocannon({ ...healthzOpts, duration: warmup });
    const healthz = summarize('GET /healthz', await runAutocannon({ ...healthzOpts, duration }));

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
    progress(`lease: POST .../key/lease over ${subjects} subjects, ${connections} connections, ${warmup} s warm-up + ${duration} s`);
    await runAutocannon({ ...leaseOpts, duration: warmup });
    // the cache entries are 60 s old at most; refresh them so none expire mid-run
    await mapLimit(paths, 16, async (p) => {
      const res = await fetch(`${base}${p}`, { method: 'POST', headers: auth });
      await res.arrayBuffer();
    });

    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    const auditSeq = async () => Number((await sql`select coalesce(max(seq), 0)::bigint as s from audit_log`)[0]?.s ?? 0);
    let before: { metrics: string; seq: number };
    let after: { metrics: string };
    let leaseRun: autocannon.Result;
    let audit: { rows: number; batches: number };
    try {
      before = { metrics: await (await fetch(`${base}/metrics`)).text(), seq: await auditSeq() };
      leaseRun = await runAutocannon({ ...leaseOpts, duration });
      after = { metrics: await (await fetch(`${base}/metrics`)).text() };
      // one group-commit batch appends its audit rows with one shared timestamp
      const [row] = await sql<{ rows: number; batches: number }[]>`
        select count(*)::int as rows, count(distinct at)::int as batches
          from audit_log where action = 'key.lease' and seq > ${before.seq}`;
      audit = { rows: row?.rows ?? 0, batches: row?.batches ?? 0 };
    } finally {
      await sql.end({ timeout: 5 });
    }
    const lease = summarize('POST /v1/subjects/{s}/key/lease', leaseRun);
    const hits = counter(after.metrics, 'lethe_dek_cache_lookups_total', 'result="hit"') - counter(before.metrics, 'lethe_dek_cache_lookups_total', 'result="hit"');
    const misses =
      counter(after.metrics, 'lethe_dek_cache_lookups_total', 'result="miss"') - counter(before.metrics, 'lethe_dek_cache_lookups_total', 'result="miss"');
    const leaseAuditRows = audit.rows;

    const warnings: string[] = [];
    for (const r of [healthz, lease]) {
      if (r.non2xx > 0 || r.errors > 0 || r.timeouts > 0) {
        warnings.push(`${r.label}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts: the run is NOT valid`);
      }
    }
    if (leaseAuditRows < lease.ok2xx) warnings.push(`only ${leaseAuditRows} key.lease audit rows for ${lease.ok2xx} granted leases`);
    const ratio = lease.reqPerSec / healthz.reqPerSec;
    return {
      subjects,
      healthz,
      lease,
      ratio,
      target: 0.5,
      valid: warnings.length === 0,
      warnings,
      cacheHitRate: hits + misses > 0 ? hits / (hits + misses) : null,
      leaseAuditRows,
      leaseBatches: audit.batches,
      leasesPerBatch: audit.batches > 0 ? audit.rows / audit.batches : 0,
      batchesPerSec: audit.batches / lease.durationSeconds,
    };
  } finally {
    if (server) await stopService(server);
    await removeDir(dataDir);
    await dropScratchDatabase(db.name);
  }
}

export function formatLease(r: LeaseResult): string {
  const row = (l: LoadResult) => [
    l.label,
    fmtInt(l.reqPerSec),
    fmtNum(l.latencyMs.p50, 0),
    fmtNum(l.latencyMs.p99, 0),
    fmtInt(l.ok2xx),
    fmtInt(l.non2xx + l.errors + l.timeouts),
  ];
  const lines = [
    `Lease throughput vs /healthz (baseline); ${r.healthz.connections} connections, ${fmtNum(r.lease.durationSeconds, 0)} s each, ${r.subjects} subjects, loopback`,
    table(['endpoint', 'req/s', 'p50 ms', 'p99 ms', '2xx', 'non-2xx/err'], [row(r.healthz), row(r.lease)]),
    `lease / healthz = ${fmtRatio(r.ratio)} (target >= ${r.target}: ${r.ratio >= r.target ? 'met' : 'NOT met'}); DEK cache hit rate ${
      r.cacheHitRate === null ? 'n/a' : `${(r.cacheHitRate * 100).toFixed(1)}%`
    }; ${fmtInt(r.leaseAuditRows)} key.lease audit rows for ${fmtInt(r.lease.ok2xx)} granted leases`,
    `lease group commit: ${fmtInt(r.leaseBatches)} transactions (${fmtNum(r.batchesPerSec, 0)}/s), ${fmtNum(r.leasesPerBatch, 1)} leases per transaction`,
  ];
  for (const w of r.warnings) lines.push(`WARNING: ${w}`);
  return lines.join('\n');
}

await runIfMain(import.meta.url, runLease, formatLease);

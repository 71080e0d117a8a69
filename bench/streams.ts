/**
 * Lease latency with 400 open erasure events streams against none, in the same run
 * (issue 14: SSE without load). The service runs as a child process on a fresh
 * lethe_bench_* database, as in the lease benchmark.
 *
 * Set-up: BENCH_STREAM_ERASURES (default 40) erasures held open at drain_leases by a
 * writer's lease, and BENCH_STREAMS (default 400) streams spread evenly over them
 * (10 per erasure), each connected and past its first event before measuring.
 *
 * Baseline: POST .../key/lease p50 / p99 under autocannon (50 connections over 250
 * subjects' keys; 1 s warm-up + 4 s per phase; 1,000 subjects and 2 + 10 s with
 * BENCH_FULL=1) with no stream open. Measured: the same with the streams open. Then the streams close and
 * the baseline runs once more (a check that the order did not favour either phase).
 * Also reported: the watchers and streams the service counts (lethe_erasure_watchers,
 * lethe_erasure_event_streams), the watchers' database reads during each phase, and
 * the database's committed transactions per second (pg_stat_database).
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import postgres from 'postgres';
import { startScratchService } from './support/service.js';
import { type LoadResult, mapLimit, runAutocannon, summarize } from './support/load.js';
import { byMode, envInt } from './support/mode.js';
import { openScratch } from './support/scratch.js';
import { runIfMain, sleep } from './support/process.js';
import { type Aim, aim, fmtInt, fmtNum, fmtRatio, formatAims, progress, table } from './support/report.js';

export interface StreamsPhase {
  readonly load: LoadResult;
  /** Erasure watcher database reads during the phase (lethe_erasure_watcher_refreshes_total). */
  readonly watcherReads: number;
  /** Committed transactions per second on the bench database during the phase. */
  readonly commitsPerSec: number;
}

export interface StreamsResult {
  readonly erasures: number;
  readonly streams: number;
  /** What the service counted with every stream connected. */
  readonly watchersOpen: number;
  readonly streamsOpen: number;
  /** What it counted after every stream closed. */
  readonly watchersAfter: number;
  readonly streamsAfter: number;
  readonly without: StreamsPhase;
  readonly with: StreamsPhase;
  readonly withoutAgain: StreamsPhase;
  /** lease p50 with the streams ÷ without; target <= 1.5. */
  readonly p50Ratio: number;
  readonly p99Ratio: number;
  readonly target: number;
  /** Lease p50 with the streams ÷ without, aim <= 1.5. */
  readonly aims: Aim[];
  readonly valid: boolean;
  readonly warnings: string[];
}

function metric(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** One events stream held open; resolves once its first event arrived. */
function openStream(base: URL, path: string, token: string): Promise<http.ClientRequest> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: base.hostname, port: base.port, path, agent: false, headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } },
      (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`events stream answered ${res.statusCode}`));
          res.resume();
          return;
        }
        res.once('data', () => resolve(req));
        res.on('data', () => {});
        res.on('error', () => {});
      },
    );
    req.on('error', (e) => reject(e));
  });
}

export async function runStreams(): Promise<StreamsResult> {
  const erasureCount = envInt('BENCH_STREAM_ERASURES', 40, 1);
  const streamCount = envInt('BENCH_STREAMS', 400, 1);
  const subjects = byMode({ quick: 100, normal: 250, full: 1000 });
  const connections = 50;
  const duration = byMode({ quick: 2, normal: 4, full: 10 });
  const warmup = byMode({ quick: 1, normal: 1, full: 2 });
  const writerToken = `writer-${randomBytes(18).toString('base64url')}`;
  const eraserToken = `eraser-${randomBytes(18).toString('base64url')}`;

  const scratch = await openScratch('streams');
  const { db } = scratch;
  const open: http.ClientRequest[] = [];
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    progress(`streams: starting the service on ${db.name}`);
    const server = await startScratchService(scratch, {
      LETHE_TOKENS: `writer=${writerToken},eraser=${eraserToken}`,
      // one token opens every stream here; the held leases outlast the run
      LETHE_SSE_STREAMS_PER_TOKEN: String(streamCount),
      LETHE_LEASE_TTL_SECONDS: '3600',
    });
    const base = `http://127.0.0.1:${server.port}`;
    const writer = { authorization: `Bearer ${writerToken}` };
    const eraser = { authorization: `Bearer ${eraserToken}`, 'content-type': 'application/json' };
    const paths = Array.from({ length: subjects }, (_, i) => `/v1/subjects/bench-subject-${String(i).padStart(6, '0')}/key/lease`);
    progress(`streams: creating ${subjects} subject keys (one lease each)`);
    await mapLimit(paths, 16, async (p) => {
      const res = await fetch(`${base}${p}`, { method: 'POST', headers: writer });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`lease warm-up failed: ${res.status}`);
    });

    progress(`streams: ${erasureCount} erasures held open at drain_leases by a lease`);
    const erasureIds: string[] = [];
    await mapLimit(
      Array.from({ length: erasureCount }, (_, i) => `bench-held-${String(i).padStart(4, '0')}`),
      8,
      async (subject) => {
        const leased = await fetch(`${base}/v1/subjects/${subject}/key/lease`, { method: 'POST', headers: writer });
        await leased.arrayBuffer();
        if (leased.status !== 200) throw new Error(`lease of a held subject failed: ${leased.status}`);
        const res = await fetch(`${base}/v1/erasures`, { method: 'POST', headers: eraser, body: JSON.stringify({ subject }) });
        const body = (await res.json()) as { erasureId?: string };
        if (res.status !== 202 || !body.erasureId) throw new Error(`erasure request failed: ${res.status} ${JSON.stringify(body)}`);
        erasureIds.push(body.erasureId);
      },
    );
    const parked = async () => {
      const rows = await sql<
        { n: number }[]
      >`select count(*)::int as n from erasures where status = 'running' and step = 'drain_leases' and claimed_by is null`;
      return rows[0]?.n ?? 0;
    };
    const deadline = Date.now() + 120_000;
    while ((await parked()) < erasureCount) {
      if (Date.now() > deadline) throw new Error(`only ${await parked()} of ${erasureCount} erasures reached drain_leases in 120 s`);
      await sleep(250);
    }

    let clientNo = 0;
    const leaseOpts = {
      url: base,
      connections,
      method: 'POST' as const,
      headers: writer,
      requests: paths.map((path) => ({ path })),
      setupClient: (client: { setRequests(r: unknown[]): void }) => {
        const offset = Math.floor(((clientNo++ % connections) * paths.length) / connections);
        client.setRequests([...paths.slice(offset), ...paths.slice(0, offset)].map((path) => ({ path, method: 'POST', headers: writer })));
      },
    };
    const commits = async () =>
      Number((await sql<{ c: string }[]>`select xact_commit::text as c from pg_stat_database where datname = current_database()`)[0]?.c ?? 0);
    const phase = async (label: string): Promise<StreamsPhase> => {
      progress(`streams: ${label}: POST .../key/lease, ${connections} connections, ${warmup} s warm-up + ${duration} s`);
      await runAutocannon({ ...leaseOpts, duration: warmup } as never);
      // the cache entries are 60 s old at most; refresh them so none expire mid-run
      await mapLimit(paths, 16, async (p) => {
        await (await fetch(`${base}${p}`, { method: 'POST', headers: writer })).arrayBuffer();
      });
      const m0 = metric(await (await fetch(`${base}/metrics`)).text(), 'lethe_erasure_watcher_refreshes_total');
      // pg_stat_database is updated when a backend reports; a short pause lets the counters settle
      await sleep(600);
      const c0 = await commits();
      const t0 = performance.now();
      const load = summarize(`lease, ${label}`, await runAutocannon({ ...leaseOpts, duration } as never));
      await sleep(600);
      const c1 = await commits();
      const seconds = (performance.now() - t0) / 1000;
      const m1 = metric(await (await fetch(`${base}/metrics`)).text(), 'lethe_erasure_watcher_refreshes_total');
      return { load, watcherReads: m1 - m0, commitsPerSec: (c1 - c0) / seconds };
    };

    const without = await phase('no events stream');

    progress(`streams: opening ${streamCount} events streams over ${erasureCount} erasures`);
    await mapLimit(
      Array.from({ length: streamCount }, (_, i) => erasureIds[i % erasureIds.length]!),
      50,
      async (id) => {
        open.push(await openStream(new URL(base), `/v1/erasures/${id}/events`, eraserToken));
      },
    );
    const during = await (await fetch(`${base}/metrics`)).text();
    const watchersOpen = metric(during, 'lethe_erasure_watchers');
    const streamsOpen = metric(during, 'lethe_erasure_event_streams');
    const withStreams = await phase(`${streamCount} events streams open`);

    progress('streams: closing the streams');
    for (const req of open.splice(0)) req.destroy();
    let after = await (await fetch(`${base}/metrics`)).text();
    for (let i = 0; i < 100 && (metric(after, 'lethe_erasure_event_streams') > 0 || metric(after, 'lethe_erasure_watchers') > 0); i++) {
      await sleep(50);
      after = await (await fetch(`${base}/metrics`)).text();
    }
    const withoutAgain = await phase('no events stream, again');

    const warnings: string[] = [];
    for (const p of [without, withStreams, withoutAgain]) {
      const r = p.load;
      if (r.non2xx > 0 || r.errors > 0 || r.timeouts > 0)
        warnings.push(`${r.label}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts: the run is NOT valid`);
    }
    if (streamsOpen !== streamCount) warnings.push(`the service counted ${streamsOpen} open streams, not ${streamCount}`);
    if (watchersOpen !== erasureCount) warnings.push(`the service ran ${watchersOpen} watchers for ${erasureCount} erasures`);
    return {
      erasures: erasureCount,
      streams: streamCount,
      watchersOpen,
      streamsOpen,
      watchersAfter: metric(after, 'lethe_erasure_watchers'),
      streamsAfter: metric(after, 'lethe_erasure_event_streams'),
      without,
      with: withStreams,
      withoutAgain,
      p50Ratio: withStreams.load.latencyMs.p50 / without.load.latencyMs.p50,
      p99Ratio: withStreams.load.latencyMs.p99 / without.load.latencyMs.p99,
      target: 1.5,
      aims: [
        aim(
          `lease p50 with ${streamCount} events streams open ÷ none`,
          withStreams.load.latencyMs.p50 / without.load.latencyMs.p50,
          '<= 1.5',
          withStreams.load.latencyMs.p50 / without.load.latencyMs.p50 <= 1.5 && warnings.length === 0,
        ),
      ],
      valid: warnings.length === 0,
      warnings,
    };
  } finally {
    for (const req of open) req.destroy();
    await sql.end({ timeout: 5 });
    await scratch.cleanup();
  }
}

export function formatStreams(r: StreamsResult): string {
  const row = (p: StreamsPhase) => [
    p.load.label,
    fmtInt(p.load.reqPerSec),
    fmtNum(p.load.latencyMs.p50, 0),
    fmtNum(p.load.latencyMs.p99, 0),
    fmtInt(p.watcherReads),
    fmtNum(p.commitsPerSec, 0),
    fmtInt(p.load.non2xx + p.load.errors + p.load.timeouts),
  ];
  const lines = [
    `Lease latency with ${r.streams} erasure events streams open (${r.erasures} erasures held open, ${r.streams / r.erasures} streams each) vs none; ${r.without.load.connections} connections, ${fmtNum(r.without.load.durationSeconds, 0)} s each`,
    table(['phase', 'req/s', 'p50 ms', 'p99 ms', 'watcher reads', 'db commits/s', 'non-2xx/err'], [row(r.without), row(r.with), row(r.withoutAgain)]),
    `lease p50 with ÷ without = ${fmtRatio(r.p50Ratio)} (target <= ${r.target}: ${r.p50Ratio <= r.target ? 'met' : 'NOT met'}); p99 ${fmtRatio(r.p99Ratio)}`,
    `the service counted ${fmtInt(r.streamsOpen)} streams on ${fmtInt(r.watchersOpen)} watchers while open; ${fmtInt(r.streamsAfter)} streams and ${fmtInt(r.watchersAfter)} watchers after they closed`,
    formatAims(r.aims),
  ];
  for (const w of r.warnings) lines.push(`WARNING: ${w}`);
  return lines.join('\n');
}

await runIfMain(import.meta.url, runStreams, formatStreams);

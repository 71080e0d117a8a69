/**
 * Updates and forgets of one subject under steady appends (issue 31): what an agent
 * rewriting its memories costs next to writing them, and what it does to the writes.
 *
 * One service in this process on PostgreSQL and MinIO; one subject seeded with
 * memories; APPENDERS clients append to it without pause through every phase.
 *   1. baseline    appends alone: their latency (median, p99)
 *   2. supersede   one more client updates the seeded memories one after another
 *                  (POST …/supersede); the appends go on. Ratio: supersede median ÷
 *                  append median in the same window. Aim <= 2.
 *   3. forget      FORGETTERS clients forget seeded memories (DELETE /v1/entries/{id}),
 *                  each one every 250 ms; the appends go on. Append p99 ÷ the baseline's
 *                  (aim <= 2); after the window, forgets per second from the first request
 *                  to the last erasure's end (they share re-keys: coalesced), of those ending
 *                  within DRAIN_MS (20 s) of it. Failed appends: aim 0.
 */
import { randomBytes } from 'node:crypto';
import { startServer, type RunningServer } from '../src/app/serve.js';
import { loadConfig } from '../src/config/index.js';
import { createLogger } from '../src/observability/logger.js';
import { envInt, QUICK } from './support/mode.js';
import { runIfMain, sleep } from './support/process.js';
import { type Aim, aim, fmtInt, fmtNum, fmtRatio, formatAims, median, progress, table } from './support/report.js';
import { cleanup, openScratch, randomRootKey, type Scratch } from './support/scratch.js';

/** How long the section waits for the window's forgets to end (their backlog drains at the erasure worker's pace). */
const DRAIN_MS = envInt('BENCH_SUPERSEDE_DRAIN_MS', 20_000, 0);

interface Latencies {
  readonly n: number;
  readonly medianMs: number;
  readonly p99Ms: number;
}

export interface SupersedeResult {
  readonly appenders: number;
  readonly forgetters: number;
  readonly seconds: number;
  readonly baseline: Latencies;
  readonly duringSupersede: { readonly appends: Latencies; readonly supersedes: Latencies };
  readonly duringForget: {
    readonly appends: Latencies;
    readonly forgets: number;
    /** Forgets still running DRAIN_MS after the window (left out of the rate and the median). */
    readonly unfinished: number;
    readonly forgetsPerSecond: number;
    readonly erasureMedianMs: number;
  };
  /** Appends that failed in any phase (the aim: none). */
  readonly failedAppends: number;
  readonly aims: Aim[];
}

function latencies(xs: number[]): Latencies {
  const s = [...xs].sort((a, b) => a - b);
  return {
    n: s.length,
    medianMs: s.length ? median(s) : Number.NaN,
    p99Ms: s.length ? s[Math.min(s.length - 1, Math.ceil(0.99 * s.length) - 1)]! : Number.NaN,
  };
}

export async function runSupersede(): Promise<SupersedeResult> {
  const SECONDS = envInt('BENCH_SUPERSEDE_SECONDS', QUICK ? 5 : 8, 1);
  const APPENDERS = envInt('BENCH_SUPERSEDE_APPENDERS', 4, 1);
  const FORGETTERS = envInt('BENCH_SUPERSEDE_FORGETTERS', 4, 1);
  const SEED = envInt('BENCH_SUPERSEDE_SEED', 1200, 10);
  const FORGET_EVERY_MS = envInt('BENCH_SUPERSEDE_FORGET_EVERY_MS', 250, 0);
  const writer = `writer-${randomBytes(18).toString('base64url')}`;
  const eraser = `eraser-${randomBytes(18).toString('base64url')}`;
  const bucket = `lethe-bench-${randomBytes(4).toString('hex')}`;
  let scratch: Scratch | undefined;
  let server: RunningServer | undefined;
  try {
    scratch = await openScratch('supersede', { minio: true });
    const config = loadConfig({
      DATABASE_URL: scratch.db.url,
      LETHE_DATA_DIR: scratch.dataDir,
      LETHE_ROOT_KEY: randomRootKey(),
      LETHE_TOKENS: `writer=${writer},eraser=${eraser}`,
      PORT: '0',
      HOST: '127.0.0.1',
      LETHE_LOG_LEVEL: 'warn',
      LETHE_ERASURE_POLL_MS: '50',
      ...scratch.s3,
      S3_BUCKET: bucket,
      S3_BACKUP_BUCKET: `${bucket}-bak`,
    });
    server = await startServer(config, createLogger('warn', process.stderr));
    const base = `http://127.0.0.1:${server.port}`;
    const call = async (token: string, method: string, path: string, body?: unknown): Promise<unknown> => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${method} ${path.split('/').slice(0, 4).join('/')} answered ${res.status}: ${text.slice(0, 200)}`);
      return JSON.parse(text) as unknown;
    };
    const subject = 'bench-supersede';
    // every text its own words (random hex): the probe finds no copy of one memory in another, as in an agent's real memories
    const words = () => `${randomBytes(6).toString('hex')} ${randomBytes(6).toString('hex')} ${randomBytes(6).toString('hex')}`;
    const append = async () => ((await call(writer, 'POST', `/v1/subjects/${subject}/entries`, { text: `memory ${words()}` })) as { entryId: string }).entryId;
    progress(`supersede: seeding ${fmtInt(SEED)} memories`);
    const seeded: string[] = [];
    for (let i = 0; i < SEED; i += 16) seeded.push(...(await Promise.all(Array.from({ length: Math.min(16, SEED - i) }, append))));

    /** Appends from APPENDERS clients until `stop` resolves: their latencies. */
    let failedAppends = 0;
    const steadyAppends = (stop: Promise<void>) => {
      const samples: number[] = [];
      let stopped = false;
      void stop.then(() => {
        stopped = true;
      });
      const lane = async () => {
        while (!stopped) {
          const t0 = performance.now();
          try {
            await append();
            samples.push(performance.now() - t0);
          } catch (e) {
            // no write may fail because of a forget: counted, and the aim says so
            failedAppends++;
            progress(`supersede: an append failed: ${(e as Error).message.slice(0, 160)}`);
          }
        }
      };
      return Promise.all(Array.from({ length: APPENDERS }, lane)).then(() => samples);
    };
    const phase = async <T>(name: string, work: (deadline: number) => Promise<T>): Promise<{ appends: number[]; result: T }> => {
      progress(`supersede: ${name} for ${SECONDS} s under ${APPENDERS} appenders`);
      let end!: () => void;
      const stop = new Promise<void>((r) => {
        end = r;
      });
      const appends = steadyAppends(stop);
      const result = await work(performance.now() + SECONDS * 1000);
      end();
      return { appends: await appends, result };
    };

    const baseline = await phase('baseline', (deadline) => sleep(Math.max(0, deadline - performance.now())));
    let next = 0;
    const updated = await phase('supersede', async (deadline) => {
      const samples: number[] = [];
      while (performance.now() < deadline && next < seeded.length) {
        const id = seeded[next++]!;
        const t0 = performance.now();
        await call(writer, 'POST', `/v1/subjects/${subject}/entries/${id}/supersede`, { text: `updated ${words()}` });
        samples.push(performance.now() - t0);
      }
      return samples;
    });
    // forgets at a steady pace (each client one every FORGET_EVERY_MS) for the window; their erasures are awaited after it
    const requested: Array<{ erasureId: string; at: number }> = [];
    const forgot = await phase('forget', async (deadline) => {
      const lane = async () => {
        while (performance.now() < deadline && next < seeded.length) {
          const id = seeded[next++]!;
          const at = performance.now();
          const { erasureId } = (await call(eraser, 'DELETE', `/v1/entries/${id}`)) as { erasureId: string };
          requested.push({ erasureId, at });
          await sleep(FORGET_EVERY_MS);
        }
      };
      await Promise.all(Array.from({ length: FORGETTERS }, lane));
    });
    progress(`supersede: waiting for the ${requested.length} forgets to finish`);
    const first = Math.min(...requested.map((r) => r.at));
    const erasureMs: number[] = [];
    let lastDone = first;
    // the backlog drains at the erasure worker's pace: waited for at most DRAIN_MS (the default run's 10 minutes), the rest counted as still running
    const drainUntil = performance.now() + DRAIN_MS;
    const pending = new Map(requested.map((r) => [r.erasureId, r]));
    while (pending.size > 0 && performance.now() < drainUntil) {
      for (const [id, r] of [...pending]) {
        const { status } = (await call(eraser, 'GET', `/v1/erasures/${id}`)) as { status: string };
        if (status === 'pending' || status === 'running') continue;
        pending.delete(id);
        lastDone = Math.max(lastDone, performance.now());
        erasureMs.push(performance.now() - r.at);
      }
      await sleep(100);
    }
    const unfinished = pending.size;
    const base0 = latencies(baseline.appends);
    const duringSupersede = { appends: latencies(updated.appends), supersedes: latencies(updated.result) };
    const forgets = requested.length;
    const duringForget = {
      appends: latencies(forgot.appends),
      forgets,
      unfinished,
      forgetsPerSecond: erasureMs.length ? erasureMs.length / ((lastDone - first) / 1000) : 0,
      erasureMedianMs: erasureMs.length ? median(erasureMs) : 0,
    };
    const supersedeRatio = duringSupersede.supersedes.medianMs / duringSupersede.appends.medianMs;
    const p99Ratio = duringForget.appends.p99Ms / base0.p99Ms;
    return {
      appenders: APPENDERS,
      forgetters: FORGETTERS,
      seconds: SECONDS,
      baseline: base0,
      duringSupersede,
      duringForget,
      failedAppends,
      aims: [
        aim('failed appends (of all phases) + 1', failedAppends + 1, '<= 1 (none failed)', failedAppends === 0),
        aim('supersede ÷ append (median, same window)', supersedeRatio, '<= 2', supersedeRatio <= 2),
        aim('append p99 while forgets run ÷ appends alone', p99Ratio, '<= 2', p99Ratio <= 2),
      ],
    };
  } finally {
    await cleanup('supersede', [['service', async () => server?.close()]]);
    await scratch?.cleanup();
  }
}

export function formatSupersede(r: SupersedeResult): string {
  const row = (name: string, l: Latencies) => [name, fmtInt(l.n), fmtNum(l.medianMs, 1), fmtNum(l.p99Ms, 1)];
  return [
    `one subject, ${r.appenders} clients appending throughout; ${r.seconds} s per phase`,
    table(
      ['calls', 'n', 'median ms', 'p99 ms'],
      [
        row('appends alone', r.baseline),
        row('appends while updates run', r.duringSupersede.appends),
        row('updates (supersede), one client', r.duringSupersede.supersedes),
        row(`appends while ${r.forgetters} clients forget`, r.duringForget.appends),
      ],
    ),
    `forgets requested in the window: ${fmtInt(r.duringForget.forgets)} (${fmtInt(r.duringForget.unfinished)} still running ${DRAIN_MS / 1000} s after it, left out); ` +
      `${fmtNum(r.duringForget.forgetsPerSecond, 1)}/s from the first request to the last end; each from request to its end: median ${fmtNum(r.duringForget.erasureMedianMs, 0)} ms ` +
      `(of those finished: the backlog's later ones wait longer); ` +
      `supersede ÷ append ${fmtRatio(r.duringSupersede.supersedes.medianMs / r.duringSupersede.appends.medianMs)}; failed appends: ${fmtInt(r.failedAppends)}`,
    formatAims(r.aims),
  ].join('\n');
}

await runIfMain(import.meta.url, runSupersede, formatSupersede);

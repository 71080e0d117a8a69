/**
 * Memory calls against LangGraph's own Postgres store (issue 35): `LetheStore` (over a
 * `lethe serve` child on a fresh lethe_bench_* database) and `PostgresStore`
 * (@langchain/langgraph-checkpoint-postgres, its tables in a schema of the same database),
 * driven from this process with the same items at 1, 16 and 64 clients:
 *
 *   put      a new item each call (one subject per client, its key created by a first put)
 *   get      items put before, round robin
 *   search   a namespace of the client's holding SEARCH_ITEMS items (put before, the same in both
 *            stores, so the figure does not depend on how many the put phases stored) with an
 *            equality filter, no query, limit 10 (16 clients)
 *   and put through a LetheStore with a writer (sealing in this process, segments registered
 *   in batches: the designed high-rate path), as a third column.
 *
 * Each phase: a short warm-up, then calls for the phase's seconds, the two stores in
 * alternating order. Calls/s, p50 and p99 per call; the lethe service's CPU per call (/proc).
 * Aims at 16 clients: put ≥ 0.5× and get ≥ 0.8× PostgresStore's. No timing is asserted.
 * BENCH_QUICK=1: 0.5 s phases at 1 and 16 clients; default 1.5 s; BENCH_FULL=1: 6 s.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { BaseStore } from '@langchain/langgraph-checkpoint';
import { PostgresStore } from '@langchain/langgraph-checkpoint-postgres/store';
import path from 'node:path';
import { Lethe } from '../src/client/lethe.js';
import { FsObjectStore } from '../src/storage/fs.js';
import { encodeSubjectLabel, LetheStore } from '../src/client/langgraph.js';
import { processCpuSeconds } from './support/load.js';
import { byMode, COMPARABLE_LOAD, QUICK } from './support/mode.js';
import { runIfMain } from './support/process.js';
import { type Aim, aim, aimVerdict, fmtInt, fmtNum, fmtRatio, progress, table } from './support/report.js';
import { openScratch } from './support/scratch.js';
import { startScratchService } from './support/service.js';

type Op = 'put' | 'get' | 'search';
type StoreName = 'lethe' | 'lethe-writer' | 'postgres';

export interface Phase {
  readonly store: StoreName;
  readonly op: Op;
  readonly clients: number;
  readonly calls: number;
  readonly seconds: number;
  readonly perSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** The lethe service's CPU per call (LetheStore only; null elsewhere or off Linux). */
  readonly serviceCpuUsPerCall: number | null;
}

export interface StoreResult {
  readonly phaseSeconds: number;
  readonly phases: Phase[];
  readonly loadAvg1: [number, number];
  readonly aims: Aim[];
  readonly warnings: string[];
}

const CLIENTS = QUICK ? [1, 16] : [1, 16, 64];
const HEADLINE = 16;
const SEARCH_CLIENTS = 16;
const SEARCH_ITEMS = 50;

function quantile(sorted: number[], q: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** `clients` loops calling `call(client, i)` for `seconds`; latencies of every call. */
async function drive(
  clients: number,
  seconds: number,
  call: (client: number, i: number) => Promise<unknown>,
): Promise<{ calls: number; seconds: number; ms: number[] }> {
  const ms: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let i = 0; performance.now() - t0 < seconds * 1000; i++) {
        const s = performance.now();
        await call(c, i);
        ms.push(performance.now() - s);
      }
    }),
  );
  return { calls: ms.length, seconds: (performance.now() - t0) / 1000, ms };
}

const value = (c: number, i: number) => ({
  text: `client ${c} prefers seat ${i % 40} by the window on flight ${i}`,
  kind: i % 2 === 0 ? 'pref' : 'fact',
  n: i,
});

export async function runStore(): Promise<StoreResult> {
  const phaseSeconds = byMode({ quick: 0.5, normal: 1.5, full: 6 });
  const warmup = Math.min(0.5, phaseSeconds);
  const load0 = os.loadavg()[0]!;
  const scratch = await openScratch('store');
  const tokens = { writer: `writer-${randomBytes(18).toString('base64url')}`, eraser: `eraser-${randomBytes(18).toString('base64url')}` };
  const phases: Phase[] = [];
  try {
    const server = await startScratchService(scratch, { LETHE_TOKENS: `writer=${tokens.writer},eraser=${tokens.eraser}` });
    const lethe = new Lethe({ baseUrl: `http://127.0.0.1:${server.port}`, tokens });
    // the writer client seals in this process and registers segments in batches (the designed high-rate path)
    const writer = lethe.writer({ store: new FsObjectStore(path.join(scratch.dataDir, 'objects'), 'lethe'), segmentMaxAgeMs: 10 });
    scratch.defer('writer', () => writer.close());
    const stores: Record<StoreName, BaseStore> = {
      lethe: new LetheStore({ lethe, subjectLabel: 1, fields: ['text'] }),
      'lethe-writer': new LetheStore({ lethe, subjectLabel: 1, fields: ['text'], writer }),
      postgres: new PostgresStore({ connectionOptions: { connectionString: scratch.db.url, max: Math.max(...CLIENTS) }, schema: 'langgraph_bench' }),
    };
    scratch.defer('PostgresStore', () => (stores.postgres as PostgresStore).stop());
    await (stores.postgres as PostgresStore).setup();
    const run = randomBytes(3).toString('hex');
    // a subject id that is its own label: PostgresStore refuses the `%` of encodeSubjectLabel's escapes
    const ns = (c: number) => ['memories', encodeSubjectLabel(`user-bench-${run}-${c}`)];
    const searchNs = (c: number) => ['searched', encodeSubjectLabel(`user-search-${run}-${c}`)];
    /** The keys each store holds per client, for get. */
    const held: Record<StoreName, string[][]> = { lethe: [], 'lethe-writer': [], postgres: [] };

    const phase = async (store: StoreName, op: Op, clients: number) => {
      const s = stores[store];
      const keys = held[store];
      const call = async (c: number, i: number) => {
        if (op === 'put') {
          const key = `k-${op}-${clients}-${c}-${i}-${randomBytes(3).toString('hex')}`;
          await s.put(ns(c), key, value(c, i));
          (keys[c] ??= []).push(key);
        } else if (op === 'get') {
          const mine = keys[c]!;
          if ((await s.get(ns(c), mine[i % mine.length]!)) === null) throw new Error(`${store}: get found no item`);
        } else {
          await s.search(searchNs(c), { filter: { kind: 'pref' }, limit: 10 });
        }
      };
      await drive(clients, warmup, call);
      const pid = server.child.pid!;
      const cpu0 = store !== 'postgres' ? processCpuSeconds(pid) : undefined;
      const r = await drive(clients, phaseSeconds, call);
      const cpu1 = store !== 'postgres' ? processCpuSeconds(pid) : undefined;
      const sorted = r.ms.sort((a, b) => a - b);
      phases.push({
        store,
        op,
        clients,
        calls: r.calls,
        seconds: r.seconds,
        perSec: r.calls / r.seconds,
        p50Ms: quantile(sorted, 0.5),
        p99Ms: quantile(sorted, 0.99),
        serviceCpuUsPerCall: cpu0 !== undefined && cpu1 !== undefined ? ((cpu1 - cpu0) * 1e6) / r.calls : null,
      });
      progress(`store: ${store} ${op} at ${clients}: ${fmtInt(r.calls / r.seconds)}/s`);
    };

    for (const op of ['put', 'get'] as const) {
      for (const [k, clients] of CLIENTS.entries()) {
        const order: StoreName[] = k % 2 === 0 ? ['postgres', 'lethe'] : ['lethe', 'postgres'];
        for (const store of order) await phase(store, op, clients);
        if (op === 'put') await phase('lethe-writer', op, clients);
      }
    }
    for (const store of ['postgres', 'lethe'] as const) {
      await Promise.all(
        Array.from({ length: SEARCH_CLIENTS }, async (_, c) => {
          for (let i = 0; i < SEARCH_ITEMS; i++) await stores[store].put(searchNs(c), `s-${i}`, value(c, i));
        }),
      );
      await phase(store, 'search', SEARCH_CLIENTS);
    }
  } finally {
    await scratch.cleanup();
  }

  const find = (store: StoreName, op: Op, clients: number) => phases.find((p) => p.store === store && p.op === op && p.clients === clients);
  const ratio = (op: Op, clients: number) => (find('lethe', op, clients)?.perSec ?? 0) / (find('postgres', op, clients)?.perSec || 1);
  const load1 = os.loadavg()[0]!;
  // the load it started at: what the section adds itself is no other work (bench/run.ts judges sections the same way)
  const warnings = load0 > COMPARABLE_LOAD ? [`started at a load average of ${fmtNum(load0, 2)} on ${os.cpus().length} cores: not comparable`] : [];
  return {
    phaseSeconds,
    phases,
    loadAvg1: [load0, load1],
    warnings,
    aims: [
      aim(`LetheStore.put ÷ PostgresStore.put at ${HEADLINE} clients`, ratio('put', HEADLINE), '>= 0.5', ratio('put', HEADLINE) >= 0.5),
      aim(`LetheStore.get ÷ PostgresStore.get at ${HEADLINE} clients`, ratio('get', HEADLINE), '>= 0.8', ratio('get', HEADLINE) >= 0.8),
    ],
  };
}

export function formatStore(r: StoreResult): string {
  const ops: Op[] = ['put', 'get', 'search'];
  const rows = ops.flatMap((op) =>
    [...new Set(r.phases.filter((p) => p.op === op).map((p) => p.clients))].map((clients) => {
      const l = r.phases.find((p) => p.store === 'lethe' && p.op === op && p.clients === clients);
      const g = r.phases.find((p) => p.store === 'postgres' && p.op === op && p.clients === clients);
      const w = r.phases.find((p) => p.store === 'lethe-writer' && p.op === op && p.clients === clients);
      return [
        op,
        String(clients),
        fmtInt(g?.perSec ?? 0),
        fmtInt(l?.perSec ?? 0),
        fmtRatio((l?.perSec ?? 0) / (g?.perSec || 1)),
        w ? `${fmtInt(w.perSec)} (${fmtRatio(w.perSec / (g?.perSec || 1))})` : '',
        `${fmtNum(g?.p50Ms ?? 0, 1)} / ${fmtNum(g?.p99Ms ?? 0, 1)}`,
        `${fmtNum(l?.p50Ms ?? 0, 1)} / ${fmtNum(l?.p99Ms ?? 0, 1)}`,
        l?.serviceCpuUsPerCall == null ? 'n/a' : fmtInt(l.serviceCpuUsPerCall),
      ];
    }),
  );
  return [
    `Memory calls: LetheStore (lethe serve) vs LangGraph's PostgresStore on the same PostgreSQL, same items, ${fmtNum(r.phaseSeconds, 1)} s phases`,
    table(
      ['call', 'clients', 'PostgresStore /s', 'LetheStore /s', 'ratio', 'with a writer /s', 'Postgres p50/p99 ms', 'lethe p50/p99 ms', 'service CPU µs/call'],
      rows,
    ),
    ...r.aims.map((a) => `${a.name} = ${fmtRatio(a.ratio)} (${aimVerdict(a)})`),
    `1-min load average ${fmtNum(r.loadAvg1[0], 2)} -> ${fmtNum(r.loadAvg1[1], 2)}`,
    ...r.warnings.map((w) => `WARNING: ${w}`),
  ].join('\n');
}

await runIfMain(import.meta.url, runStore, formatStore);

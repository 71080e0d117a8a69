/**
 * Sharded indexes (LETHE_INDEX_SHARDS=6) across `lethe serve` replicas on one PostgreSQL:
 * what each replica holds, what a scoped search pays for asking a peer, and how long a
 * killed replica's shards take to be searchable again. One scratch database and data
 * directory (local filesystem object store), one root key, child processes (tsx).
 *
 *   seed      one unsharded replica; BENCH_SHARDS_SUBJECTS (1,500; 10,000 with
 *             BENCH_FULL=1) subjects × BENCH_SHARDS_ENTRIES (4) entries through the writer
 *             client (LetheWriter: leases, seals, writes segments to the replicas' bucket
 *             in the data directory, registers them; the service's indexer embeds them),
 *             until the index queue is empty: real records, not measured (faster on
 *             this machine than one POST .../entries per entry). Its RSS on the empty
 *             store, before the first append, is the idle baseline.
 *   unsharded a fresh replica with LETHE_INDEX_SHARDS=1 on the seeded store (its start-up
 *             rebuild holds every vector): vectors, RSS; it stays up, idle, for the searches.
 *   N = 1..3  fresh sharded replicas (LETHE_INDEX_SHARDS=6), started one after another;
 *             once every shard is held, ready, split evenly and their indexes together
 *             hold every vector (bench/support/replicas.ts waitForSplit): each replica's
 *             lethe_index_vectors, shards and RSS (/proc VmRSS; after 2 s more, the
 *             start-up's garbage partly collected). N = 1 and 2 stop cleanly (their
 *             shards go back); the three of N = 3 stay for the rest.
 *   search    BENCH_SHARDS_QUERIES (300; 1,000 with BENCH_FULL=1) scoped searches
 *             (POST /v1/search {query, subject, k: 10}; the query a fragment of one of
 *             the subject's entries), one at a time after 20 unmeasured, each query on
 *             the unsharded replica and on the next of the three sharded ones, which
 *             first alternating (both sides under the same load; about two in three
 *             sharded ones go through a peer: the answer's consulted shard is not one the
 *             replica asked answers for). p50 / p95 of each.
 *   takeover  the replica holding shard 0 SIGKILLed (its process group); polled every
 *             100 ms: when its shards had a live new owner (the lease part), when every
 *             shard was live and ready again, and when a scoped search (on a survivor)
 *             for a subject of each lost shard answered with its hits and no shard
 *             missing. The searches in between are counted (partial, never silently short).
 *
 * Aims: max per-replica vectors at N ÷ N = 1's <= 1.2 / N; sharded scoped p50 ÷ unsharded
 * <= 1.5; kill → every shard ready and searched whole <= 30 s. Every replica shares this
 * machine's CPUs and one PostgreSQL: per-replica memory is the figure that carries over
 * to several machines, the latencies include a peer's work on the same two cores.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { FsObjectStore, LetheWriter } from '../src/client/index.js';
import { byMode, envInt } from './support/mode.js';
import { runIfMain, sleep } from './support/process.js';
import { indexVectors, type Replica, readiness, replicaRss, shardRows, startReplica, waitForSplit } from './support/replicas.js';
import { type Aim, aim, fmtInt, fmtNum, fmtRatio, fmtSeconds, formatAims, type LatencyStats, progress, stats, table } from './support/report.js';
import { openScratch, randomRootKey } from './support/scratch.js';
import { killGroup, stopService } from './support/service.js';
import { sentences } from './search.js';

// ------------------------------------------------------------------ settings

const SHARDS = 6;
const SUBJECTS = envInt('BENCH_SHARDS_SUBJECTS', byMode({ quick: 300, normal: 1_500, full: 10_000 }), 10);
const ENTRIES = envInt('BENCH_SHARDS_ENTRIES', byMode({ quick: 2, normal: 4, full: 5 }), 1);
const QUERIES = envInt('BENCH_SHARDS_QUERIES', byMode({ quick: 60, normal: 300, full: 1_000 }), 10);
const WARMUPS = 20;
const K = 10;
/** The bucket (a directory under the data directory's objects/) the replicas and the seeding writer share. */
const BUCKET = 'lethe-bench-shards';
const SPLIT_TIMEOUT_MS = 120_000;
const TAKEOVER_TIMEOUT_MS = 90_000;
const TAKEOVER_AIM_S = 30;
/** The lease a dead replica's shards wait out (src/vault/shards.ts LEASE_MS). */
const LEASE_S = 10;

// ------------------------------------------------------------------ result types

export interface ReplicaFigures {
  readonly replica: number;
  readonly shards: number[];
  readonly vectors: number;
  readonly rssBytes: number;
}

export interface SplitPhase {
  readonly replicas: number;
  /** From the first replica's start to every shard ready and split. */
  readonly readySeconds: number;
  readonly perReplica: ReplicaFigures[];
  readonly maxVectors: number;
  /** maxVectors ÷ the N = 1 replica's vectors. */
  readonly vectorShare: number;
  readonly loadAvg: [number, number];
}

export interface SearchRun {
  readonly stats: LatencyStats;
  /** Answers marked partial, or naming a missing shard. */
  readonly partial: number;
  /** Answers without a hit of the subject's, or with a hit of another subject's. */
  readonly wrong: number;
  readonly loadAvg: [number, number];
}

export interface ShardedSearch extends SearchRun {
  /** Searches whose subject's shard the asked replica answered for itself, and their latencies. */
  readonly local: LatencyStats | null;
  /** Searches that went through a peer. */
  readonly viaPeer: LatencyStats | null;
}

export interface Takeover {
  readonly lostShards: number[];
  /** The victim's lease left at the kill (database clock). */
  readonly leaseLeftSeconds: number;
  /** Kill → every lost shard owned, live, by a survivor (the lease part). */
  readonly takenSeconds: number;
  /** Kill → every shard live and ready. */
  readonly readySeconds: number;
  /** Kill → ready and a scoped search for a subject of each lost shard whole (hits, no shard missing). */
  readonly wholeSeconds: number;
  readonly searches: number;
  /** Of those, answers marked partial (each naming its missing shards). */
  readonly partialAnswers: number;
  /** Answers that lacked the subject's hits without saying so (must be 0). */
  readonly silentlyShort: number;
  readonly maxSearchMs: number;
  readonly survivorsVectors: number[];
  readonly loadAvg: [number, number];
}

export interface ShardsResult {
  readonly shards: number;
  readonly subjects: number;
  readonly entriesPerSubject: number;
  readonly vectors: number;
  readonly seedSeconds: number;
  readonly idleRssBytes: number;
  readonly unsharded: { readonly vectors: number; readonly rssBytes: number; readonly readySeconds: number };
  readonly phases: SplitPhase[];
  readonly k: number;
  readonly queries: number;
  readonly search: { readonly unsharded: SearchRun; readonly sharded: ShardedSearch; readonly p50Ratio: number; readonly p95Ratio: number };
  readonly takeover: Takeover;
  readonly cpus: number;
  readonly warnings: string[];
  readonly aims: Aim[];
}

// ------------------------------------------------------------------ HTTP

interface Answer {
  readonly hits: Array<{ id: string; subject: string | null }>;
  readonly partial?: boolean;
  readonly shards?: { total: number; consulted: number[]; missing: number[] };
}

async function post<T>(url: string, token: string, path: string, body: unknown): Promise<T> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`POST ${path}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

interface Query {
  readonly subject: string;
  readonly query: string;
}

/** One scoped search, timed (client side, the whole round trip). */
async function searchOnce(url: string, token: string, q: Query): Promise<{ ms: number; answer: Answer }> {
  const t0 = performance.now();
  const answer = await post<Answer>(url, token, '/v1/search', { query: q.query, subject: q.subject, k: K });
  return { ms: performance.now() - t0, answer };
}

const isPartial = (a: Answer) => a.partial === true || (a.shards?.missing.length ?? 0) > 0;
/** The subject's own hits only, and at least one. */
const isRight = (a: Answer, q: Query) => a.hits.length > 0 && a.hits.every((h) => h.subject === q.subject);

// ------------------------------------------------------------------ phases

/** What one side of the paired searches saw, query by query. */
class Side {
  readonly ms: number[] = [];
  readonly local: number[] = [];
  readonly viaPeer: number[] = [];
  partial = 0;
  wrong = 0;
  run(loadAvg: [number, number]): SearchRun {
    return { stats: stats(this.ms, WARMUPS), partial: this.partial, wrong: this.wrong, loadAvg };
  }
}

/**
 * The same scoped searches, one at a time, on the unsharded replica and round robin over
 * the sharded ones, query by query (which goes first alternates): both sides under the
 * same load. `answering` (each sharded replica's own shards) tells local from via a peer.
 */
async function measurePaired(
  unsharded: Replica,
  sharded: readonly Replica[],
  answering: ReadonlyArray<ReadonlySet<number>>,
  token: string,
  queries: readonly Query[],
): Promise<{ plain: SearchRun; shardedRun: ShardedSearch; shardOf: Map<string, number> }> {
  for (let i = 0; i < WARMUPS; i++) {
    await searchOnce(unsharded.url, token, queries[i % queries.length]!);
    await searchOnce(sharded[i % sharded.length]!.url, token, queries[i % queries.length]!);
  }
  const load0 = os.loadavg()[0]!;
  const plain = new Side();
  const split = new Side();
  const shardOf = new Map<string, number>();
  const one = async (side: Side, q: Query, url: string, at?: number) => {
    const { ms, answer } = await searchOnce(url, token, q);
    side.ms.push(ms);
    if (isPartial(answer)) side.partial++;
    if (!isRight(answer, q)) side.wrong++;
    const consulted = answer.shards?.consulted ?? [];
    if (at === undefined || consulted.length === 0) return;
    if (consulted.length === 1) shardOf.set(q.subject, consulted[0]!);
    (consulted.every((s) => answering[at]!.has(s)) ? side.local : side.viaPeer).push(ms);
  };
  for (let i = 0; i < queries.length; i++) {
    const q = queries[i]!;
    const at = i % sharded.length;
    if (i % 2 === 0) {
      await one(plain, q, unsharded.url);
      await one(split, q, sharded[at]!.url, at);
    } else {
      await one(split, q, sharded[at]!.url, at);
      await one(plain, q, unsharded.url);
    }
  }
  const loadAvg: [number, number] = [load0, os.loadavg()[0]!];
  return {
    plain: plain.run(loadAvg),
    shardedRun: {
      ...split.run(loadAvg),
      local: split.local.length > 0 ? stats(split.local, 0) : null,
      viaPeer: split.viaPeer.length > 0 ? stats(split.viaPeer, 0) : null,
    },
    shardOf,
  };
}

/** Starts `n` fresh sharded replicas one after another and waits for them to split the shards; their figures. */
async function splitPhase(
  scratch: Parameters<typeof startReplica>[0],
  sql: postgres.Sql,
  env: Record<string, string>,
  n: number,
  vectors: number,
): Promise<{ replicas: Replica[]; figures: Omit<SplitPhase, 'vectorShare'> }> {
  const load0 = os.loadavg()[0]!;
  const t0 = performance.now();
  const replicas: Replica[] = [];
  for (let i = 0; i < n; i++) replicas.push(await startReplica(scratch, env, SHARDS));
  const split = await waitForSplit(sql, replicas, SHARDS, vectors, SPLIT_TIMEOUT_MS);
  const readySeconds = (performance.now() - t0) / 1000;
  // the start-up rebuilds' garbage is partly collected by then (no forced GC in a service)
  await sleep(2000);
  const perReplica = replicas.map((r, i) => ({ replica: i + 1, shards: split.held[i]!, vectors: split.vectors[i]!, rssBytes: replicaRss(r) }));
  progress(
    `shards: N = ${n}: split in ${fmtSeconds(readySeconds)}; vectors ${perReplica.map((p) => fmtInt(p.vectors)).join(' / ')}; ` +
      `RSS ${perReplica.map((p) => fmtNum(p.rssBytes / 2 ** 20, 0)).join(' / ')} MiB`,
  );
  return {
    replicas,
    figures: { replicas: n, readySeconds, perReplica, maxVectors: Math.max(...perReplica.map((p) => p.vectors)), loadAvg: [load0, os.loadavg()[0]!] },
  };
}

/** SIGKILLs the replica holding shard 0 and times its shards' way back (see the header). */
async function takeover(sql: postgres.Sql, replicas: readonly Replica[], token: string, probeOf: ReadonlyMap<number, Query>): Promise<Takeover> {
  const rows = await shardRows(sql);
  const victim = replicas.find((r) => r.id === rows.find((x) => x.shard === 0)?.owner);
  if (!victim) throw new Error('no replica of the three holds shard 0');
  const lost = rows.filter((r) => r.owner === victim.id).map((r) => r.shard);
  const probes = lost.map((s) => probeOf.get(s));
  if (probes.some((p) => !p)) throw new Error(`no measured subject falls in each lost shard (${lost.join(', ')})`);
  const survivors = replicas.filter((r) => r !== victim);
  const [left] = await sql<Array<{ s: number }>>`
    select extract(epoch from (max(expires_at) - now()))::float8 as s from index_shards where owner = ${victim.id}`;
  const load0 = os.loadavg()[0]!;
  progress(
    `shards: SIGKILL to the replica holding shards ${lost.join(', ')} (pid ${victim.server.child.pid}, lease left ${fmtNum(left?.s ?? Number.NaN, 1)} s)`,
  );
  const t0 = performance.now();
  await killGroup(victim.server, 'SIGKILL');
  const since = () => (performance.now() - t0) / 1000;
  let taken: number | undefined;
  let ready: number | undefined;
  let whole: number | undefined;
  let searches = 0;
  let partialAnswers = 0;
  let silentlyShort = 0;
  let maxSearchMs = 0;
  for (let round = 0; whole === undefined; round++) {
    if (since() * 1000 > TAKEOVER_TIMEOUT_MS) throw new Error(`the lost shards were not searchable whole within ${TAKEOVER_TIMEOUT_MS / 1000} s`);
    const now = await shardRows(sql);
    const owned = (r: (typeof now)[number]) => r.live && r.owner !== null && r.owner !== victim.id;
    if (taken === undefined && lost.every((s) => owned(now.find((r) => r.shard === s)!))) taken = since();
    if (ready === undefined && now.length === SHARDS && now.every((r) => owned(r) && r.state === 'ready')) ready = since();
    // a search for a subject of each lost shard, on the survivors in turn
    let allWhole = true;
    for (const [i, q] of probes.entries()) {
      const { ms, answer } = await searchOnce(survivors[(round + i) % survivors.length]!.url, token, q!);
      searches++;
      maxSearchMs = Math.max(maxSearchMs, ms);
      if (isPartial(answer)) {
        partialAnswers++;
        allWhole = false;
      } else if (!isRight(answer, q!)) {
        silentlyShort++;
        allWhole = false;
      }
    }
    if (ready !== undefined && allWhole) whole = since();
    else await sleep(100);
  }
  const survivorsVectors = await Promise.all(survivors.map((r) => indexVectors(r.url)));
  progress(`shards: taken over in ${fmtSeconds(taken ?? Number.NaN)}, ready ${fmtSeconds(ready ?? Number.NaN)}, searched whole ${fmtSeconds(whole)}`);
  return {
    lostShards: lost,
    leaseLeftSeconds: left?.s ?? Number.NaN,
    takenSeconds: taken ?? Number.NaN,
    readySeconds: ready ?? Number.NaN,
    wholeSeconds: whole,
    searches,
    partialAnswers,
    silentlyShort,
    maxSearchMs,
    survivorsVectors,
    loadAvg: [load0, os.loadavg()[0]!],
  };
}

// ------------------------------------------------------------------ the section

export async function runShards(): Promise<ShardsResult> {
  const warnings: string[] = [];
  const scratch = await openScratch('shards');
  const sql = postgres(scratch.db.url, { max: 1, onnotice: () => {} });
  scratch.defer('sql client', () => sql.end({ timeout: 5 }));
  const writer = `writer-${randomBytes(18).toString('base64url')}`;
  // every replica on the same database, data directory and root key
  const env: Record<string, string> = { LETHE_ROOT_KEY: randomRootKey(), LETHE_TOKENS: `writer=${writer}`, S3_BUCKET: BUCKET };
  const replicas: Replica[] = [];
  try {
    // ---- seed (not measured) through an unsharded replica; its RSS on the empty store is the idle baseline
    const seeder = await startReplica(scratch, env, 1);
    await sleep(500);
    const idleRssBytes = replicaRss(seeder);
    const run = randomBytes(3).toString('hex');
    const subjects = Array.from({ length: SUBJECTS }, (_, i) => `bench-shards-${run}-${i}`);
    const texts = sentences(SUBJECTS * ENTRIES, 61);
    progress(`shards: seeding ${fmtInt(SUBJECTS)} subjects × ${ENTRIES} entries through LetheWriter`);
    const s0 = performance.now();
    const w = new LetheWriter({
      baseUrl: seeder.url,
      token: writer,
      // the service's own bucket, where it reads the segments back from
      store: new FsObjectStore(path.join(scratch.dataDir, 'objects'), BUCKET),
      segmentMaxEntries: 500,
      segmentMaxBytes: 8 * 1024 * 1024,
      segmentMaxAgeMs: 50,
      reserveBlock: ENTRIES,
    });
    try {
      await Promise.all(texts.map((text, i) => w.append(subjects[i % SUBJECTS]!, { text })));
    } finally {
      await w.close();
    }
    // registered entries are embedded by the service's indexer (index_queue): seeded once it is empty
    for (const deadline = performance.now() + SPLIT_TIMEOUT_MS; Number((await sql`select count(*)::int as n from index_queue`)[0]!.n) > 0; await sleep(100)) {
      if (performance.now() > deadline) throw new Error(`the index queue did not drain within ${SPLIT_TIMEOUT_MS / 1000} s of seeding`);
    }
    const seedSeconds = (performance.now() - s0) / 1000;
    const vectors = SUBJECTS * ENTRIES;
    // the indexer's last batch is published in memory just after its queue rows go
    let seeded = await indexVectors(seeder.url);
    for (const deadline = performance.now() + 10_000; seeded !== vectors && performance.now() < deadline; seeded = await indexVectors(seeder.url))
      await sleep(100);
    if (seeded !== vectors) warnings.push(`the seeding replica's index holds ${seeded} vectors 10 s after its index queue emptied, not ${vectors}`);
    progress(`shards: seeded in ${fmtSeconds(seedSeconds)} (${fmtInt(vectors / seedSeconds)} entries/s)`);
    await stopService(seeder.server);

    // the same queries for both: a fragment of one of each subject's entries, subjects in a shuffled order
    const queries: Query[] = Array.from({ length: QUERIES }, (_, i) => {
      const s = (i * 7919) % SUBJECTS;
      const words = texts[s + SUBJECTS * (i % ENTRIES)]!.split(' ');
      return { subject: subjects[s]!, query: words.slice(0, 6).join(' ') };
    });

    // ---- unsharded: a fresh replica (its start-up rebuild holds every vector)
    const u0 = performance.now();
    const unsharded = await startReplica(scratch, env, 1);
    for (const deadline = performance.now() + SPLIT_TIMEOUT_MS; (await indexVectors(unsharded.url)) !== vectors; await sleep(200)) {
      if (performance.now() > deadline) throw new Error(`the unsharded replica did not hold ${vectors} vectors within ${SPLIT_TIMEOUT_MS / 1000} s`);
    }
    const unshardedReady = (performance.now() - u0) / 1000;
    await sleep(2000);
    const unshardedFigures = { vectors: await indexVectors(unsharded.url), rssBytes: replicaRss(unsharded), readySeconds: unshardedReady };
    progress(`shards: unsharded replica: ${fmtInt(unshardedFigures.vectors)} vectors, RSS ${fmtNum(unshardedFigures.rssBytes / 2 ** 20, 0)} MiB`);

    // ---- N = 1, 2, 3 fresh sharded replicas
    const phases: SplitPhase[] = [];
    for (const n of [1, 2, 3]) {
      const { replicas: started, figures } = await splitPhase(scratch, sql, env, n, vectors);
      phases.push({ ...figures, vectorShare: figures.maxVectors / (phases[0]?.maxVectors ?? figures.maxVectors) });
      if (n < 3) for (const r of started) await stopService(r.server);
      else replicas.push(...started);
    }

    // ---- search: the unsharded replica (idle meanwhile: it holds no shard lease) vs the three sharded ones, paired
    const answering = await Promise.all(replicas.map(async (r) => new Set((await readiness(r.url)).shards?.answering ?? [])));
    progress(`shards: ${QUERIES} scoped searches, each on the unsharded replica and round robin over the 3 sharded ones`);
    const { plain: plainRun, shardedRun: shardedSearch, shardOf } = await measurePaired(unsharded, replicas, answering, writer, queries);
    await stopService(unsharded.server);
    for (const [label, r] of [
      ['unsharded', plainRun],
      ['sharded', shardedSearch],
    ] as const) {
      if (r.partial > 0) warnings.push(`${label}: ${r.partial} of ${QUERIES} searches answered partial`);
      if (r.wrong > 0) warnings.push(`${label}: ${r.wrong} of ${QUERIES} searches without the subject's hits only`);
    }

    // ---- takeover: a subject of each shard to search for
    const probeOf = new Map<number, Query>();
    for (const q of queries) {
      const s = shardOf.get(q.subject);
      if (s !== undefined && !probeOf.has(s)) probeOf.set(s, q);
    }
    const taken = await takeover(sql, replicas, writer, probeOf);
    if (taken.silentlyShort > 0) warnings.push(`takeover: ${taken.silentlyShort} searches lacked the subject's hits without saying a shard was missing`);
    const survivorsTotal = taken.survivorsVectors.reduce((a, b) => a + b, 0);
    if (survivorsTotal !== vectors) warnings.push(`takeover: the survivors hold ${survivorsTotal} vectors once whole, not ${vectors}`);

    for (const w of warnings) progress(`shards: WARNING ${w}`);
    const p50Ratio = shardedSearch.stats.medianMs / plainRun.stats.medianMs;
    const p95Ratio = shardedSearch.stats.p95Ms / plainRun.stats.p95Ms;
    const aims: Aim[] = [
      ...phases
        .filter((p) => p.replicas > 1)
        .map((p) =>
          aim(
            `max per-replica vectors, ${p.replicas} replicas ÷ 1 (${SHARDS} shards)`,
            p.vectorShare,
            `<= ${fmtNum(1.2 / p.replicas, 2)}`,
            p.vectorShare <= 1.2 / p.replicas,
          ),
        ),
      aim('scoped search p50, 3 sharded replicas (round robin) ÷ 1 unsharded', p50Ratio, '<= 1.5', p50Ratio <= 1.5),
      aim(
        `shard takeover after SIGKILL (every shard ready, searched whole) ÷ ${TAKEOVER_AIM_S} s`,
        taken.wholeSeconds / TAKEOVER_AIM_S,
        '<= 1',
        taken.wholeSeconds <= TAKEOVER_AIM_S,
      ),
    ];
    return {
      shards: SHARDS,
      subjects: SUBJECTS,
      entriesPerSubject: ENTRIES,
      vectors,
      seedSeconds,
      idleRssBytes,
      unsharded: unshardedFigures,
      phases,
      k: K,
      queries: QUERIES,
      search: { unsharded: plainRun, sharded: shardedSearch, p50Ratio, p95Ratio },
      takeover: taken,
      cpus: os.cpus().length,
      warnings,
      aims,
    };
  } catch (e) {
    for (const r of replicas) progress(`shards: replica pid ${r.server.child.pid} stderr tail:\n${r.server.stderrTail.slice(-10).join('\n')}`);
    throw e;
  } finally {
    await scratch.cleanup();
  }
}

// ------------------------------------------------------------------ report

const mib = (b: number) => fmtNum(b / 2 ** 20, 0);
const load = (l: readonly [number, number]) => `${fmtNum(l[0], 2)} -> ${fmtNum(l[1], 2)}`;

export function formatShards(r: ShardsResult): string {
  const memoryRows: string[][] = [
    [
      'unsharded (LETHE_INDEX_SHARDS=1)',
      '1',
      'all',
      fmtInt(r.unsharded.vectors),
      '1.00x',
      mib(r.unsharded.rssBytes),
      mib(r.unsharded.rssBytes - r.idleRssBytes),
      fmtNum(r.unsharded.readySeconds, 1),
      '',
    ],
  ];
  for (const p of r.phases) {
    for (const x of p.perReplica) {
      memoryRows.push([
        x.replica === 1 ? `N = ${p.replicas} sharded` : '',
        String(x.replica),
        x.shards.join(','),
        fmtInt(x.vectors),
        fmtRatio(x.vectors / r.phases[0]!.maxVectors),
        mib(x.rssBytes),
        mib(x.rssBytes - r.idleRssBytes),
        x.replica === 1 ? fmtNum(p.readySeconds, 1) : '',
        x.replica === 1 ? load(p.loadAvg) : '',
      ]);
    }
  }
  const s = r.search;
  const row = (label: string, x: LatencyStats | null, n: number, extra: string, l: string) =>
    x ? [label, fmtInt(n), fmtNum(x.medianMs, 2), fmtNum(x.p95Ms, 2), extra, l] : [label, '0', 'n/a', 'n/a', extra, l];
  const t = r.takeover;
  const lines = [
    `${fmtInt(r.subjects)} subjects × ${r.entriesPerSubject} entries = ${fmtInt(r.vectors)} vectors, seeded through LetheWriter in ${fmtSeconds(r.seedSeconds)} (not measured); ` +
      `${r.shards} shards; one PostgreSQL, one ${r.cpus}-CPU machine; every replica a fresh process`,
    table(['replicas', 'replica', 'shards', 'vectors', '÷ N=1', 'RSS MiB', 'RSS − idle MiB', 'ready s', '1-min load'], memoryRows),
    `idle: a replica's RSS on the empty store ${mib(r.idleRssBytes)} MiB; RSS read 2 s after every shard was ready (/proc VmRSS, no forced GC). ` +
      'Replicas start one after another: replica 1 of each N held and indexed every shard until the next came up, and its RSS keeps some of that. ' +
      `max per replica ÷ N = 1: ${r.phases
        .filter((p) => p.replicas > 1)
        .map((p) => `N = ${p.replicas} ${fmtRatio(p.vectorShare)} (aim <= ${fmtNum(1.2 / p.replicas, 2)})`)
        .join(', ')}`,
    '',
    `scoped search (POST /v1/search, k = ${r.k}), ${fmtInt(r.queries)} queries one at a time after 20 unmeasured, ms (client round trip):`,
    table(
      ['where', 'searches', 'p50', 'p95', 'partial / wrong', '1-min load'],
      [
        row('1 unsharded replica', s.unsharded.stats, s.unsharded.stats.runs, `${s.unsharded.partial} / ${s.unsharded.wrong}`, load(s.unsharded.loadAvg)),
        row('3 sharded, round robin', s.sharded.stats, s.sharded.stats.runs, `${s.sharded.partial} / ${s.sharded.wrong}`, load(s.sharded.loadAvg)),
        row('  of which answered locally', s.sharded.local, s.sharded.local?.runs ?? 0, '', ''),
        row('  of which through a peer', s.sharded.viaPeer, s.sharded.viaPeer?.runs ?? 0, '', ''),
      ],
    ),
    `sharded ÷ unsharded: p50 ${fmtRatio(s.p50Ratio)} (aim <= 1.5), p95 ${fmtRatio(s.p95Ratio)}`,
    '',
    `takeover: SIGKILL to the replica holding shards ${t.lostShards.join(', ')} (its lease had ${fmtNum(t.leaseLeftSeconds, 1)} s of ${LEASE_S} s left):`,
    table(
      ['from the kill to', 'seconds'],
      [
        ['its shards owned by a survivor (the lease part)', fmtNum(t.takenSeconds, 1)],
        ['every shard live and ready (+ rebuild)', fmtNum(t.readySeconds, 1)],
        ['ready and a search for each lost shard whole', fmtNum(t.wholeSeconds, 1)],
      ],
    ),
    `${fmtInt(t.searches)} searches meanwhile: ${fmtInt(t.partialAnswers)} answered partial (missing shards named), ${fmtInt(t.silentlyShort)} silently short; ` +
      `slowest ${fmtNum(t.maxSearchMs, 0)} ms; survivors then hold ${t.survivorsVectors.map(fmtInt).join(' + ')} vectors; 1-min load ${load(t.loadAvg)}`,
  ];
  if (r.warnings.length) lines.push(...r.warnings.map((w) => `WARNING: ${w}`));
  lines.push(formatAims(r.aims));
  return lines.join('\n');
}

await runIfMain(import.meta.url, runShards, formatShards);

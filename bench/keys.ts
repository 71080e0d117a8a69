/**
 * Key creation against the floor of anything durable, and the peers this machine can run
 * (issue 17): the service runs as a child process on a fresh lethe_bench_* database and
 * is driven over loopback by autocannon from this process.
 *
 *   creation   PUT /v1/subjects/{new subject}/key at 1, 16 and 64 connections (every
 *              request a subject never seen), against the bare PostgreSQL rate of a
 *              one-row insert-and-commit into a scratch table of the same database by
 *              postgres.js with the same number of clients — measured alternately at
 *              each client count. Aim: >= 0.5x at 16.
 *   bulk       POST /v1/keys/batch with 10,000 new subjects (BENCH_QUICK: 1,000): keys/s
 *              of the whole request, median of 3. Aim: >= 10,000 keys/s.
 *   providers  the same warm lease (POST .../key/lease) and key creation (PUT .../key) at
 *              16 connections through the PKCS#11 provider (SoftHSM2, infra/softhsm.ts)
 *              and the AWS KMS provider (local-kms, infra/local-kms-server.ts), each in a
 *              service of its own, as ratios to the local keyring measured here the same
 *              way. Figures only: a KMS wraps each new key over the network.
 *
 * Next to each rate: the service's CPU time per request (/proc, Linux) and the database's
 * commits per request (pg_stat_database), which show the group commits at work.
 * BENCH_QUICK=1: 1 s phases; default 2 s; BENCH_FULL=1: 8 s phases.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type autocannon from 'autocannon';
import postgres from 'postgres';
import { type Server, startScratchService } from './support/service.js';
import { type LoadResult, mapLimit, measured, runAutocannon } from './support/load.js';
import { byMode, QUICK } from './support/mode.js';
import { openScratch, PG_ADMIN_URL } from './support/scratch.js';
import { runIfMain } from './support/process.js';
import { type Aim, aim, aimVerdict, fmtInt, fmtNum, fmtRatio, median, progress, table } from './support/report.js';
import { KMS_CREDENTIALS, type ProviderKind, providerSetup } from './providers.js';

type Load = LoadResult & { readonly serviceCpuUsPerReq: number | null; readonly commitsPerReq: number | null };

export interface CreationPoint {
  readonly clients: number;
  /** One-row insert-and-commit by postgres.js, `clients` in flight. */
  readonly bare: { readonly commits: number; readonly seconds: number; readonly perSec: number };
  /** PUT /v1/subjects/{new}/key, `clients` connections. */
  readonly keys: Load;
  /** keys req/s ÷ bare commits/s. */
  readonly ratio: number;
}

export interface ProviderFigures {
  readonly kind: ProviderKind;
  readonly lease: Load;
  readonly create: Load;
  /** ÷ the local keyring's figure at the same connections, this run. */
  readonly leaseRatio: number;
  readonly createRatio: number;
}

export interface BulkRun {
  readonly subjects: number;
  readonly seconds: number;
  readonly keysPerSec: number;
  readonly created: number;
}

export interface KeysResult {
  readonly connections: number;
  readonly durationSeconds: number;
  readonly points: CreationPoint[];
  /** The local keyring's warm lease and creation at `connections` (the providers' baseline). */
  readonly local: { readonly lease: Load; readonly create: Load };
  readonly providers: ProviderFigures[];
  readonly bulk: { readonly subjects: number; readonly runs: BulkRun[]; readonly medianKeysPerSec: number };
  readonly valid: boolean;
  readonly warnings: string[];
  readonly loadAvg1: [number, number];
  readonly aims: Aim[];
}

const CLIENTS = [1, 16, 64] as const;
/** The connections of the aim and of the provider comparison. */
const HEADLINE = 16;
const BULK_AIM = 10_000;

interface Service {
  readonly server: Server;
  readonly base: string;
  readonly auth: { authorization: string };
  readonly db: { readonly name: string; readonly url: string };
  readonly commits: () => Promise<number>;
  readonly stop: () => Promise<void>;
}

/** A lethe service on a fresh database (and data dir), with `env` on top (a key provider's settings). */
async function openService(label: string, env: Record<string, string> = {}): Promise<Service> {
  const scratch = await openScratch(label);
  const { db } = scratch;
  const token = `writer-${randomBytes(18).toString('base64url')}`;
  const stats = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} });
  scratch.defer('statistics connection', () => stats.end({ timeout: 5 }));
  const stop = () => scratch.cleanup();
  let server: Server;
  try {
    server = await startScratchService(scratch, { LETHE_TOKENS: `writer=${token}`, ...env });
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    server,
    base: `http://127.0.0.1:${server.port}`,
    auth: { authorization: `Bearer ${token}` },
    db,
    // the statistics collector lags a little: pg_stat_clear_snapshot gives the latest the server reports
    commits: async () => {
      await stats`select pg_stat_clear_snapshot()`;
      return Number((await stats`select xact_commit from pg_stat_database where datname = ${db.name}`)[0]?.xact_commit ?? 0);
    },
    stop,
  };
}

/** An autocannon run with the service's CPU and the database's commits per request. */
async function load(s: Service, label: string, opts: autocannon.Options): Promise<Load> {
  const c0 = await s.commits();
  const r = await measured(label, s.server.child.pid!, opts);
  const c1 = await s.commits();
  return { ...r, commitsPerReq: r.requestsTotal > 0 ? (c1 - c0) / r.requestsTotal : null };
}

let subjectCounter = 0;
/** PUT .../key for a subject never seen, at `connections`. */
function creationOpts(s: Service, connections: number, duration: number): autocannon.Options {
  const tag = randomBytes(3).toString('hex');
  return {
    url: s.base,
    connections,
    duration,
    requests: [{ method: 'PUT', headers: s.auth, setupRequest: (req) => ({ ...req, path: `/v1/subjects/bench-new-${tag}-${subjectCounter++}/key` }) }],
  };
}

/** Warm leases over `subjects` made by one batch call (their DEKs cached first), at `connections`. */
async function leaseLoad(s: Service, connections: number, warmup: number, duration: number, subjects: number): Promise<Load> {
  const tag = randomBytes(3).toString('hex');
  const names = Array.from({ length: subjects }, (_, i) => `bench-lease-${tag}-${i}`);
  await bulkCreate(s, names);
  const paths = names.map((n) => `/v1/subjects/${n}/key/lease`);
  const warm = () =>
    mapLimit(paths, 16, async (p) => {
      const res = await fetch(`${s.base}${p}`, { method: 'POST', headers: s.auth });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`lease warm-up failed: ${res.status}`);
    });
  await warm();
  let clientNo = 0;
  const opts: autocannon.Options = {
    url: s.base,
    connections,
    requests: paths.map((path) => ({ path })),
    setupClient: (client) => {
      const offset = Math.floor(((clientNo++ % connections) * paths.length) / connections);
      client.setRequests([...paths.slice(offset), ...paths.slice(0, offset)].map((path) => ({ path, method: 'POST', headers: s.auth })));
    },
  };
  await runAutocannon({ ...opts, duration: warmup });
  await warm();
  return load(s, 'POST /v1/subjects/{s}/key/lease', { ...opts, duration });
}

/** One POST /v1/keys/batch; the seconds it took, client side. */
async function bulkCreate(s: Service, subjects: readonly string[]): Promise<BulkRun> {
  const body = JSON.stringify({ subjects });
  const t0 = performance.now();
  const res = await fetch(`${s.base}/v1/keys/batch`, { method: 'POST', headers: { ...s.auth, 'content-type': 'application/json' }, body });
  const answer = (await res.json()) as { created?: number };
  const seconds = (performance.now() - t0) / 1000;
  if (res.status !== 200) throw new Error(`POST /v1/keys/batch answered ${res.status}: ${JSON.stringify(answer).slice(0, 300)}`);
  return { subjects: subjects.length, seconds, keysPerSec: subjects.length / seconds, created: answer.created ?? 0 };
}

/** One-row insert-and-commit by `clients` postgres.js connections for `seconds` (after a short warm-up). */
async function bareCommits(url: string, clients: number, seconds: number, warmup: number): Promise<CreationPoint['bare']> {
  const sql = postgres(url, { max: clients, onnotice: () => {} });
  try {
    await sql`create table if not exists bench_bare_commit (id text primary key, payload bytea not null, created_at timestamptz not null default now())`;
    const payload = randomBytes(114); // the size of a wrapped DEK
    const tag = randomBytes(3).toString('hex');
    const run = async (ms: number) => {
      let n = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: clients }, async (_, w) => {
          let i = 0;
          while (performance.now() - t0 < ms) {
            await sql`insert into bench_bare_commit (id, payload) values (${`${tag}-${ms}-${w}-${i++}`}, ${payload})`;
            n++;
          }
        }),
      );
      return { commits: n, seconds: (performance.now() - t0) / 1000 };
    };
    await run(warmup * 1000);
    const r = await run(seconds * 1000);
    return { ...r, perSec: r.commits / r.seconds };
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * Runs `fn`, again (up to 3 times, 3 s apart) when PostgreSQL has no free connection for
 * it (53300: the server is shared, e.g. with a test suite); then fails saying so.
 */
async function withFreeConnections<T>(clients: number, fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if ((e as { code?: string }).code !== '53300') throw e;
      if (attempt === 3) throw new Error(`PostgreSQL had no ${clients} free connections (max_connections) in 3 tries: other work holds them`);
      progress(`keys: PostgreSQL has no ${clients} free connections now; trying again in 3 s`);
      await new Promise((r) => setTimeout(r, 3000));
    }
  }
}

export async function runKeys(): Promise<KeysResult> {
  const duration = byMode({ quick: 1, normal: 2, full: 8 });
  const warmup = byMode({ quick: 0.3, normal: 0.5, full: 1 });
  const bulkSubjects = QUICK ? 1_000 : 10_000;
  const leaseSubjects = QUICK ? 100 : 200;
  const load0 = os.loadavg()[0]!;
  const warnings: string[] = [];
  const checkLoad = (what: string, l: Load) => {
    if (l.non2xx > 0 || l.errors > 0 || l.timeouts > 0)
      warnings.push(`${what}: ${l.non2xx} non-2xx, ${l.errors} errors, ${l.timeouts} timeouts: the run is NOT valid`);
  };

  // ---- the local keyring: creation vs bare commits, bulk, and the providers' baseline
  progress('keys: starting the service (local keyring)');
  const local = await openService('keys');
  const points: CreationPoint[] = [];
  const bulkRuns: BulkRun[] = [];
  let localLease: Load;
  let localCreate: Load;
  try {
    for (const clients of CLIENTS) {
      progress(`keys: ${clients} client(s): bare insert-and-commit, then PUT .../key for new subjects, ${warmup} s warm-up + ${duration} s each`);
      const bare = await withFreeConnections(clients, () => bareCommits(local.db.url, clients, duration, warmup));
      await runAutocannon(creationOpts(local, clients, warmup));
      const keys = await load(local, 'PUT /v1/subjects/{new}/key', creationOpts(local, clients, duration));
      checkLoad(`PUT .../key at ${clients}`, keys);
      if (keys.non2xx === 0 && keys.ok2xx !== keys.requestsTotal)
        warnings.push(`PUT .../key at ${clients}: ${keys.requestsTotal - keys.ok2xx} answers were not 201`);
      points.push({ clients, bare, keys, ratio: keys.reqPerSec / bare.perSec });
    }
    progress(`keys: POST /v1/keys/batch, ${fmtInt(bulkSubjects)} new subjects, 3 times (after a warm-up of 1,000)`);
    const tag = randomBytes(3).toString('hex');
    await bulkCreate(
      local,
      Array.from({ length: 1_000 }, (_, i) => `bench-bulk-warm-${tag}-${i}`),
    );
    for (let run = 0; run < 3; run++) {
      const r = await bulkCreate(
        local,
        Array.from({ length: bulkSubjects }, (_, i) => `bench-bulk-${tag}-${run}-${i}`),
      );
      if (r.created !== bulkSubjects) warnings.push(`bulk run ${run}: ${r.created} created of ${bulkSubjects}`);
      bulkRuns.push(r);
    }
    progress(`keys: local keyring, warm lease and creation at ${HEADLINE} connections (the providers' baseline)`);
    localLease = await leaseLoad(local, HEADLINE, warmup, duration, leaseSubjects);
    localCreate = await load(local, 'PUT /v1/subjects/{new}/key', creationOpts(local, HEADLINE, duration));
    checkLoad('local lease', localLease);
    checkLoad('local creation', localCreate);
  } finally {
    await local.stop();
  }

  // ---- the same operations through each external provider, in a service of its own
  const providers: ProviderFigures[] = [];
  for (const kind of ['pkcs11', 'aws-kms'] as const) {
    progress(`keys: ${kind}: starting its store and a service on it`);
    const setup = await providerSetup(kind);
    try {
      const s = await openService(`keys_${kind.replace('-', '_')}`, {
        ...setup.env(`bench-keys-${randomBytes(3).toString('hex')}`),
        ...(kind === 'aws-kms' ? KMS_CREDENTIALS : {}),
      });
      try {
        progress(`keys: ${kind}: warm lease and creation at ${HEADLINE} connections`);
        const lease = await leaseLoad(s, HEADLINE, warmup, duration, leaseSubjects);
        await runAutocannon(creationOpts(s, HEADLINE, warmup));
        const create = await load(s, 'PUT /v1/subjects/{new}/key', creationOpts(s, HEADLINE, duration));
        checkLoad(`${kind} lease`, lease);
        checkLoad(`${kind} creation`, create);
        providers.push({ kind, lease, create, leaseRatio: lease.reqPerSec / localLease.reqPerSec, createRatio: create.reqPerSec / localCreate.reqPerSec });
      } finally {
        await s.stop();
      }
    } finally {
      await setup.stop();
    }
  }

  const headline = points.find((p) => p.clients === HEADLINE)!;
  const medianKeysPerSec = median(bulkRuns.map((r) => r.keysPerSec));
  return {
    connections: HEADLINE,
    durationSeconds: duration,
    points,
    local: { lease: localLease, create: localCreate },
    providers,
    bulk: { subjects: bulkSubjects, runs: bulkRuns, medianKeysPerSec },
    valid: warnings.length === 0,
    warnings,
    loadAvg1: [load0, os.loadavg()[0]!],
    aims: [
      aim(`key creation ÷ bare PostgreSQL insert-and-commit, ${HEADLINE} clients`, headline.ratio, '>= 0.5', headline.ratio >= 0.5),
      aim(
        `bulk creation keys/s (POST /v1/keys/batch, ${fmtInt(bulkSubjects)} subjects) ÷ ${fmtInt(BULK_AIM)}/s`,
        medianKeysPerSec / BULK_AIM,
        '>= 1',
        medianKeysPerSec >= BULK_AIM,
      ),
    ],
  };
}

export function formatKeys(r: KeysResult): string {
  const cpu = (x: number | null) => (x === null ? 'n/a' : fmtInt(x));
  const commits = (x: number | null) => (x === null ? 'n/a' : fmtNum(x, 2));
  const lines = [
    `Key creation (PUT .../key, a new subject each) vs bare PostgreSQL one-row insert-and-commit (postgres.js), same clients, alternating; ${fmtNum(r.durationSeconds, 0)} s each`,
    table(
      ['clients', 'bare commits/s', 'PUT .../key /s', 'ratio', 'p50 ms', 'p99 ms', 'service CPU µs/key', 'commits/key'],
      r.points.map((p) => [
        String(p.clients),
        fmtInt(p.bare.perSec),
        fmtInt(p.keys.reqPerSec),
        fmtRatio(p.ratio),
        fmtNum(p.keys.latencyMs.p50, 0),
        fmtNum(p.keys.latencyMs.p99, 0),
        cpu(p.keys.serviceCpuUsPerReq),
        commits(p.keys.commitsPerReq),
      ]),
    ),
    `bulk: POST /v1/keys/batch of ${fmtInt(r.bulk.subjects)} new subjects: ${r.bulk.runs.map((b) => `${fmtNum(b.seconds, 2)} s`).join(', ')}; median ${fmtInt(r.bulk.medianKeysPerSec)} keys/s`,
    `Through the key providers at ${r.connections} connections (ratio = provider ÷ local keyring, this run)`,
    table(
      ['provider', 'warm lease /s', 'lease ÷ local', 'PUT .../key /s', 'creation ÷ local', 'creation p50 ms', 'service CPU µs/key'],
      [
        [
          'local keyring',
          fmtInt(r.local.lease.reqPerSec),
          '1.00x',
          fmtInt(r.local.create.reqPerSec),
          '1.00x',
          fmtNum(r.local.create.latencyMs.p50, 0),
          cpu(r.local.create.serviceCpuUsPerReq),
        ],
        ...r.providers.map((p) => [
          p.kind,
          fmtInt(p.lease.reqPerSec),
          fmtRatio(p.leaseRatio),
          fmtInt(p.create.reqPerSec),
          fmtRatio(p.createRatio),
          fmtNum(p.create.latencyMs.p50, 0),
          cpu(p.create.serviceCpuUsPerReq),
        ]),
      ],
    ),
    ...r.aims.map((a) => `${a.name} = ${fmtRatio(a.ratio)} (${aimVerdict(a)})`),
    `1-min load average ${fmtNum(r.loadAvg1[0], 2)} -> ${fmtNum(r.loadAvg1[1], 2)}`,
  ];
  for (const w of r.warnings) lines.push(`WARNING: ${w}`);
  return lines.join('\n');
}

await runIfMain(import.meta.url, runKeys, formatKeys);

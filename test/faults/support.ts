/**
 * The fault-injection harness: two real `lethe serve` processes on one fresh
 * PostgreSQL database, each reaching PostgreSQL and MinIO only through Toxiproxy
 * proxies of the suite's Toxiproxy (global-setup.ts), so a test can reset, stall, slow
 * down or cut either dependency while the replicas work.
 *
 *   test process ──HTTP──▶ replica a, replica b ──▶ proxy pg ──▶ PostgreSQL
 *                                                └─▶ proxy s3 ──▶ MinIO
 *
 * The test itself reads and checks PostgreSQL and MinIO directly (never through the
 * proxies), so its own view is not affected by a fault.
 */
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { expect, inject } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { CLI, type RunningService, startService } from '../support/process.js';
import { type TcpProxy, Toxiproxy } from '../../infra/toxiproxy-client.js';
import { requestInit, type CallOptions, tempDir, testEnv } from '../support/vault.js';

/**
 * Short timeouts and backoffs, so faults are detected and recovered from within a test's
 * time. The LETHE_STORE_TIMEOUT_MS / LETHE_ERASURE_RETRY_* / LETHE_ERASURE_STEP_DEADLINE_SECONDS
 * variables belong to the object-store timeout and erasure-retry work; a lethe without
 * them ignores them (loadConfig reads only the variables it knows).
 */
export const FAULT_ENV: Readonly<Record<string, string>> = {
  LETHE_LEASE_TTL_SECONDS: '2',
  LETHE_ERASURE_POLL_MS: '100',
  LETHE_ERASURE_CLAIM_SECONDS: '3',
  LETHE_DB_POOL_SIZE: '4',
  LETHE_STORE_TIMEOUT_MS: '2000',
  LETHE_ERASURE_RETRY_BASE_MS: '100',
  LETHE_ERASURE_RETRY_CAP_MS: '1000',
  LETHE_ERASURE_STEP_DEADLINE_SECONDS: '20',
  LETHE_BACKUP_PROPAGATE_SECONDS: '2',
};

export interface FaultCluster {
  readonly db: TestDatabase;
  readonly pg: TcpProxy;
  readonly s3: TcpProxy;
  readonly a: RunningService;
  readonly b: RunningService;
  readonly replicas: readonly RunningService[];
  readonly env: Record<string, string>;
  /** Every proxy enabled again and every toxic removed (a failed test must not leave a fault behind for the next). */
  heal(): Promise<void>;
  /** Stops both replicas, deletes both proxies, drops the database. Never throws. */
  stop(): Promise<void>;
}

const hostPort = (url: string) => {
  const u = new URL(url);
  return `${u.hostname}:${u.port || (u.protocol === 'postgres:' || u.protocol === 'postgresql:' ? '5432' : '80')}`;
};

export function toxiproxy(): Toxiproxy {
  return new Toxiproxy(inject('toxiproxy').apiUrl);
}

/** Two replicas on a fresh database, reaching PostgreSQL and MinIO through their own proxies. */
export async function startFaultCluster(label: string, extra: Record<string, string> = {}): Promise<FaultCluster> {
  const minio = inject('minio');
  const tp = toxiproxy();
  const db = await createTestDatabase('lethe_fault');
  const started: RunningService[] = [];
  const proxies: TcpProxy[] = [];
  const stop = async () => {
    for (const s of started) await s.stop().catch(() => {});
    for (const p of proxies) await p.delete().catch(() => {});
    await db.drop().catch(() => {});
  };
  try {
    const pg = await tp.create(`${label}_pg`, hostPort(db.url));
    proxies.push(pg);
    const s3 = await tp.create(`${label}_s3`, hostPort(minio.endpoint));
    proxies.push(s3);
    const dbUrl = new URL(db.url);
    dbUrl.hostname = pg.host;
    dbUrl.port = String(pg.port);
    const tag = randomBytes(5).toString('hex');
    const env = testEnv({
      databaseUrl: dbUrl.toString(),
      dataDir: tempDir('lethe-fault-'),
      extra: {
        S3_ENDPOINT: `http://${s3.listen}`,
        S3_ACCESS_KEY: minio.accessKey,
        S3_SECRET_KEY: minio.secretKey,
        S3_BUCKET: `lethe-fault-${tag}`,
        S3_BACKUP_BUCKET: `lethe-fault-bak-${tag}`,
        ...FAULT_ENV,
        ...extra,
      },
    });
    // one after the other: the first applies the migrations
    const a = await startService(process.execPath, [...CLI, 'serve'], env);
    started.push(a);
    const b = await startService(process.execPath, [...CLI, 'serve'], env);
    started.push(b);
    return {
      db,
      pg,
      s3,
      a,
      b,
      replicas: [a, b],
      env,
      async heal() {
        for (const p of proxies) {
          await p.up();
          await p.clear();
        }
      },
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** fetch with the role's token, aborted after `timeoutMs` (a hang is an answer too: AbortError). */
export function call(service: RunningService, method: string, path: string, options: CallOptions & { timeoutMs?: number } = {}): Promise<Response> {
  return fetch(`${service.url}${path}`, { ...requestInit(method, options), signal: AbortSignal.timeout(options.timeoutMs ?? 30_000) });
}

export interface Answer {
  /** HTTP status, or 0 when no answer came (connection refused, or aborted at the bound). */
  readonly status: number;
  readonly code?: string;
  readonly body: unknown;
  readonly ms: number;
  readonly error?: string;
}

/** A call that never throws: the status (0 for none), the problem code, the parsed body and how long it took. */
export async function answer(service: RunningService, method: string, path: string, options: CallOptions & { timeoutMs?: number } = {}): Promise<Answer> {
  const t0 = performance.now();
  try {
    const res = await call(service, method, path, options);
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON
    }
    const code = typeof body === 'object' && body !== null && 'code' in body ? String((body as { code: unknown }).code) : undefined;
    return { status: res.status, ...(code ? { code } : {}), body, ms: performance.now() - t0 };
  } catch (e) {
    return {
      status: 0,
      body: undefined,
      ms: performance.now() - t0,
      error: (e as Error).name === 'TimeoutError' ? 'no answer within the bound' : (e as Error).message,
    };
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Retries `attempt` until it answers `want`, or throws after `timeoutMs` naming the last answer. */
export async function until(what: string, attempt: () => Promise<Answer>, want: (a: Answer) => boolean, timeoutMs: number): Promise<Answer> {
  const deadline = Date.now() + timeoutMs;
  let last: Answer;
  for (;;) {
    last = await attempt();
    if (want(last)) return last;
    if (Date.now() > deadline) throw new Error(`${what}: still ${last.status} ${JSON.stringify(last.body ?? last.error).slice(0, 400)} after ${timeoutMs} ms`);
    await sleep(250);
  }
}

/** Both replicas are still running and answer /healthz; the message carries a dead one's last log lines. */
export async function expectBothAlive(cluster: FaultCluster): Promise<void> {
  for (const [name, s] of [
    ['a', cluster.a],
    ['b', cluster.b],
  ] as const) {
    expect(s.child.exitCode, `replica ${name} exited:\n${s.stderr().slice(-4000)}`).toBeNull();
    expect(s.child.signalCode, `replica ${name} was killed:\n${s.stderr().slice(-4000)}`).toBeNull();
    const h = await answer(s, 'GET', '/healthz', { role: 'none', timeoutMs: 5_000 });
    expect(h.status, `replica ${name} /healthz: ${h.error ?? JSON.stringify(h.body)}\n${s.stderr().slice(-2000)}`).toBe(200);
  }
}

/** Kills (pg_terminate_backend) every backend of the replicas on this database, directly on PostgreSQL; answers how many. */
export async function terminateLetheBackends(databaseName: string): Promise<number> {
  const sql = postgres(inject('pgAdminUrl'), { max: 1, onnotice: () => {}, connect_timeout: 5 });
  try {
    const rows = await sql<{ killed: boolean }[]>`
      select pg_terminate_backend(pid) as killed from pg_stat_activity
      where application_name = 'lethe' and datname = ${databaseName} and pid <> pg_backend_pid()`;
    return rows.filter((r) => r.killed).length;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

export interface ErasureView {
  readonly erasureId: string;
  readonly status: string;
  readonly finishedAt?: string | null;
  readonly steps: Array<{ name: string; status: string; detail?: unknown; startedAt?: string | null; finishedAt?: string | null }>;
}

/** Follows an erasure (through either replica, alternately, tolerating failed reads) until it is neither pending nor running. */
export async function awaitErasureSettled(cluster: FaultCluster, erasureId: string, timeoutMs: number): Promise<ErasureView> {
  const deadline = Date.now() + timeoutMs;
  let last: Answer | undefined;
  for (let i = 0; ; i++) {
    last = await answer(cluster.replicas[i % 2]!, 'GET', `/v1/erasures/${erasureId}`, { role: 'eraser', timeoutMs: 5_000 });
    if (last.status === 200) {
      const view = last.body as ErasureView;
      if (view.status !== 'pending' && view.status !== 'running') return view;
    }
    if (Date.now() > deadline) {
      const view = last.body as ErasureView | undefined;
      throw new Error(
        `erasure ${erasureId} did not settle in ${timeoutMs} ms; last answer ${last.status}: ` +
          JSON.stringify(view?.steps ? { status: view.status, steps: view.steps.map((s) => [s.name, s.status, s.detail]) } : (last.body ?? last.error)).slice(
            0,
            2000,
          ),
      );
    }
    await sleep(200);
  }
}

/** The erasure's transitions as the database holds them (read directly, not through a proxy), one line each: ms since the first, step, status, replica, detail. */
export async function erasureTimeline(cluster: FaultCluster, erasureId: string): Promise<string[]> {
  const sql = postgres(cluster.db.url, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  try {
    const rows = await sql<{ at: Date; from_step: string | null; to_step: string | null; status: string; replica: string; detail: string | null }[]>`
      select at, from_step, to_step, status, replica, detail from erasure_transitions where erasure_id = ${erasureId} order by id`;
    const t0 = rows[0]?.at.getTime() ?? 0;
    return rows.map(
      (r) =>
        `+${r.at.getTime() - t0} ms ${r.from_step ?? '-'} -> ${r.to_step ?? '-'} ${r.status} (${r.replica.slice(0, 12)})${r.detail ? ` ${r.detail.slice(0, 160)}` : ''}`,
    );
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/**
 * Appends through the writer client over a slow network, in one run:
 *
 *   setup     a MinIO server and a Toxiproxy server started here (infra/minio-server.ts,
 *             infra/toxiproxy-server.ts), a fresh lethe_bench_* database, one bucket, two
 *             Toxiproxy proxies: one to PostgreSQL, one to MinIO.
 *   phases    the same workload three times, each with a service of its own started in this
 *             process (startServer) and a LetheWriter of its own:
 *               direct   service → PostgreSQL and MinIO, writer → MinIO, no proxy;
 *               proxied  the service's database and store, and the writer's store, through
 *                        the proxies, no toxic (what the proxy itself costs);
 *               slow     through the proxies with a 5 ms latency toxic on each (downstream:
 *                        every answer of PostgreSQL and MinIO arrives 5 ms late).
 *             Each phase: an unmeasured warm-up appending one entry per subject (leases and
 *             reservations taken), then BENCH_FAULTS_ENTRIES entries (default 2,000; 10,000
 *             with BENCH_FULL=1; 1,000 when quick) of 512 bytes, round-robin over 200 subjects, 256 appends in flight;
 *             segments flushed at 1 MiB or 50 ms, sequence numbers reserved 64 at a time
 *             (the append benchmark's settings).
 *   rounds    BENCH_FAULTS_ROUNDS rounds (default 1; 2 with BENCH_FULL=1), the phases in turn, in
 *             reverse order every other round (so neither warm-up nor drift favours one);
 *             a phase's entries/s is its entries over its seconds summed over the rounds.
 *   ratio     slow entries/s ÷ direct entries/s (and proxied ÷ direct).
 *
 * The writer and the service share this process's event loop, as in the append benchmark.
 */
import { randomBytes } from 'node:crypto';
import { LetheWriter } from '../src/client/index.js';
import { S3ObjectStore } from '../src/client/s3.js';
import { loadConfig } from '../src/config/index.js';
import { startServer, type RunningServer } from '../src/app/serve.js';
import { createLogger } from '../src/observability/logger.js';
import { startToxiproxy, toxiproxyBinary, type ToxiproxyServer } from '../infra/toxiproxy-server.js';
import { type TcpProxy, Toxiproxy } from '../infra/toxiproxy-client.js';
import { byMode, envInt } from './support/mode.js';
import { cleanup, openScratch, randomRootKey, type Scratch } from './support/scratch.js';
import { cpuSeconds, pool, runIfMain } from './support/process.js';
import { fmtInt, fmtNum, fmtRatio, progress, table } from './support/report.js';

export interface FaultsPhase {
  readonly label: string;
  readonly entries: number;
  readonly errors: number;
  readonly seconds: number;
  readonly entriesPerSec: number;
  /** entries/s of each round. */
  readonly rounds: number[];
  readonly latencyMs: { readonly p50: number; readonly p99: number; readonly max: number };
  readonly cpuSeconds: number;
  readonly firstError?: string;
}

export interface FaultsResult {
  readonly rounds: number;
  readonly subjects: number;
  /** per phase and round */
  readonly entries: number;
  readonly entryBytes: number;
  readonly concurrency: number;
  readonly latencyMs: number;
  readonly direct: FaultsPhase;
  readonly proxied: FaultsPhase;
  readonly slow: FaultsPhase;
  /** slow entries/s ÷ direct entries/s. */
  readonly ratio: number;
  /** proxied (no toxic) entries/s ÷ direct entries/s. */
  readonly proxyRatio: number;
  readonly valid: boolean;
}

const ENTRY_BYTES = 512;
const LATENCY_MS = 5;

function randomTexts(count: number): string[] {
  // printable ASCII letters and digits
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ';
  const raw = randomBytes(count * ENTRY_BYTES);
  let s = '';
  for (let i = 0; i < raw.length; i++) s += alphabet[raw[i]! % alphabet.length];
  return Array.from({ length: count }, (_, i) => s.slice(i * ENTRY_BYTES, (i + 1) * ENTRY_BYTES));
}

function quantile(sorted: Float64Array, p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : NaN;
}

const hostPort = (url: string, defaultPort: string) => {
  const u = new URL(url);
  return `${u.hostname}:${u.port || defaultPort}`;
};

export async function runFaults(): Promise<FaultsResult> {
  const subjects = envInt('BENCH_FAULTS_SUBJECTS', 200, 1);
  const entries = envInt('BENCH_FAULTS_ENTRIES', byMode({ quick: 1_000, normal: 2_000, full: 10_000 }), 1);
  const rounds = envInt('BENCH_FAULTS_ROUNDS', byMode({ quick: 1, normal: 1, full: 2 }), 1);
  const concurrency = envInt('BENCH_FAULTS_CONCURRENCY', 256, 1);
  const writerToken = `writer-${randomBytes(18).toString('base64url')}`;
  const bucket = `lethe-bench-faults-${randomBytes(4).toString('hex')}`;
  const subjectNames = Array.from({ length: subjects }, (_, i) => `bench-fault-subject-${i}`);
  const texts = randomTexts(entries);
  const warmTexts = randomTexts(subjects);

  let scratch: Scratch | undefined;
  let toxiproxy: ToxiproxyServer | undefined;
  const proxies: TcpProxy[] = [];
  let server: RunningServer | undefined;
  let writer: LetheWriter | undefined;
  try {
    scratch = await openScratch('faults', { minio: true });
    const { db, dataDir } = scratch;
    const minio = scratch.minio!;
    progress('faults: starting Toxiproxy');
    toxiproxy = await startToxiproxy(toxiproxyBinary());
    const tp = new Toxiproxy(toxiproxy.apiUrl);
    const pgProxy = await tp.create('bench_pg', hostPort(db.url, '5432'));
    proxies.push(pgProxy);
    const s3Proxy = await tp.create('bench_s3', hostPort(minio.endpoint, '80'));
    proxies.push(s3Proxy);
    const proxiedDbUrl = new URL(db.url);
    proxiedDbUrl.hostname = pgProxy.host;
    proxiedDbUrl.port = String(pgProxy.port);
    const rootKey = randomRootKey();

    interface Run {
      readonly seconds: number;
      readonly errors: number;
      readonly latencies: Float64Array;
      readonly cpuSeconds: number;
      readonly firstError?: string;
    }
    const runPhase = async (label: string, databaseUrl: string, s3Endpoint: string): Promise<Run> => {
      progress(`faults: ${label}: service on ${new URL(databaseUrl).host}, store at ${s3Endpoint}`);
      server = await startServer(
        loadConfig({
          DATABASE_URL: databaseUrl,
          LETHE_DATA_DIR: dataDir,
          LETHE_ROOT_KEY: rootKey,
          LETHE_TOKENS: `writer=${writerToken}`,
          PORT: '0',
          HOST: '127.0.0.1',
          LETHE_LOG_LEVEL: 'warn',
          S3_ENDPOINT: s3Endpoint,
          S3_ACCESS_KEY: minio!.accessKey,
          S3_SECRET_KEY: minio!.secretKey,
          S3_BUCKET: bucket,
          S3_BACKUP_BUCKET: `${bucket}-bak`,
        }),
        createLogger('warn', process.stderr),
      );
      const store = new S3ObjectStore({ endpoint: s3Endpoint, accessKey: minio!.accessKey, secretKey: minio!.secretKey, bucket });
      writer = new LetheWriter({
        baseUrl: `http://127.0.0.1:${server.port}`,
        token: writerToken,
        store,
        segmentMaxBytes: 1024 * 1024,
        segmentMaxAgeMs: 50,
        reserveBlock: 64,
      });
      const w = writer;
      let warmErrors = 0;
      await pool(subjects, concurrency, async (i) => {
        await w.append(subjectNames[i]!, { text: warmTexts[i]! }).catch(() => void warmErrors++);
      });
      if (warmErrors > 0) throw new Error(`faults: ${label}: ${warmErrors} warm-up appends failed`);
      progress(`faults: ${label}: ${fmtInt(entries)} appends, ${concurrency} in flight`);
      const latencies = new Float64Array(entries);
      let errors = 0;
      let firstError: string | undefined;
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await pool(entries, concurrency, async (i) => {
        const s = performance.now();
        try {
          await w.append(subjectNames[i % subjects]!, { text: texts[i]! });
        } catch (e) {
          errors++;
          firstError ??= (e as Error).message;
        }
        latencies[i] = performance.now() - s;
      });
      const seconds = (performance.now() - t0) / 1000;
      const cpu = cpuSeconds(cpu0);
      await w.close();
      writer = undefined;
      await server.close();
      server = undefined;
      return { seconds, errors, latencies, cpuSeconds: cpu, ...(firstError ? { firstError } : {}) };
    };

    const phases = [
      { label: 'direct', run: () => runPhase('direct', db!.url, minio!.endpoint) },
      { label: 'proxied, no toxic', run: () => runPhase('proxied, no toxic', proxiedDbUrl.toString(), `http://${s3Proxy.listen}`) },
      {
        label: `proxied, ${LATENCY_MS} ms latency`,
        run: async () => {
          const toxics = [
            await pgProxy.add({ type: 'latency', attributes: { latency: LATENCY_MS } }),
            await s3Proxy.add({ type: 'latency', attributes: { latency: LATENCY_MS } }),
          ];
          try {
            return await runPhase(`proxied, ${LATENCY_MS} ms latency`, proxiedDbUrl.toString(), `http://${s3Proxy.listen}`);
          } finally {
            await pgProxy.remove(toxics[0]!);
            await s3Proxy.remove(toxics[1]!);
          }
        },
      },
    ];
    const runs: Run[][] = phases.map(() => []);
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? [0, 1, 2] : [2, 1, 0];
      for (const i of order) {
        progress(`faults: round ${r + 1} of ${rounds}`);
        runs[i]!.push(await phases[i]!.run());
      }
    }
    const summarise = (label: string, rs: Run[]): FaultsPhase => {
      const all = new Float64Array(rs.reduce((n, x) => n + x.latencies.length, 0));
      let at = 0;
      for (const x of rs) {
        all.set(x.latencies, at);
        at += x.latencies.length;
      }
      const sorted = all.sort();
      const errors = rs.reduce((n, x) => n + x.errors, 0);
      const seconds = rs.reduce((n, x) => n + x.seconds, 0);
      const firstError = rs.find((x) => x.firstError)?.firstError;
      return {
        label,
        entries: entries * rs.length,
        errors,
        seconds,
        entriesPerSec: (entries * rs.length - errors) / seconds,
        rounds: rs.map((x) => (entries - x.errors) / x.seconds),
        latencyMs: { p50: quantile(sorted, 50), p99: quantile(sorted, 99), max: sorted[sorted.length - 1] ?? NaN },
        cpuSeconds: rs.reduce((n, x) => n + x.cpuSeconds, 0),
        ...(firstError ? { firstError } : {}),
      };
    };
    const [direct, proxied, slow] = phases.map((p, i) => summarise(p.label, runs[i]!)) as [FaultsPhase, FaultsPhase, FaultsPhase];
    return {
      rounds,
      subjects,
      entries,
      entryBytes: ENTRY_BYTES,
      concurrency,
      latencyMs: LATENCY_MS,
      direct,
      proxied,
      slow,
      ratio: slow.entriesPerSec / direct.entriesPerSec,
      proxyRatio: proxied.entriesPerSec / direct.entriesPerSec,
      valid: direct.errors + proxied.errors + slow.errors === 0,
    };
  } finally {
    await cleanup('faults', [
      ['writer', async () => writer?.close()],
      ['service', async () => server?.close()],
      ...proxies.map((p): [string, () => Promise<unknown>] => [`proxy ${p.name}`, () => p.delete()]),
      ['Toxiproxy', async () => toxiproxy?.stop()],
    ]);
    await scratch?.cleanup();
  }
}

export function formatFaults(r: FaultsResult): string {
  const row = (p: FaultsPhase) => [
    p.label,
    fmtInt(p.entriesPerSec),
    p.rounds.map((x) => fmtInt(x)).join(', '),
    fmtNum(p.seconds, 2),
    fmtNum(p.latencyMs.p50, 1),
    fmtNum(p.latencyMs.p99, 1),
    fmtNum(p.cpuSeconds, 2),
    fmtInt(p.errors),
  ];
  const lines = [
    `${fmtInt(r.entries)} LetheWriter appends of ${r.entryBytes} B over ${fmtInt(r.subjects)} subjects, ${r.concurrency} in flight, per phase and round; ${r.rounds} rounds`,
    table(['phase', 'entries/s', 'per round', 'seconds', 'p50 ms', 'p99 ms', 'CPU s', 'errors'], [row(r.direct), row(r.proxied), row(r.slow)]),
    `${r.latencyMs} ms latency on the database and the store ÷ direct: ${fmtRatio(r.ratio)}; the proxy alone ÷ direct: ${fmtRatio(r.proxyRatio)}`,
  ];
  for (const p of [r.direct, r.proxied, r.slow]) if (p.firstError) lines.push(`WARNING: ${p.label}: ${p.errors} appends failed, first: ${p.firstError}`);
  return lines.join('\n');
}

await runIfMain(import.meta.url, runFaults, formatFaults);

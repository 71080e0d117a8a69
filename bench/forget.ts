/**
 * Forgetting one memory: what a records-scope erasure (`DELETE /v1/entries/{entryId}`)
 * costs for a subject of BENCH_FORGET_SMALL memories (default 10), of
 * BENCH_FORGET_LARGE (default 10,000; 1,000 when quick) and — with BENCH_FULL=1, or
 * BENCH_FORGET_HUGE set — of BENCH_FORGET_HUGE (100,000), and the ratios. Aim: large ÷
 * small <= 2 — forgetting one memory costs about the same however many the subject
 * has (a forget re-keys the one key shard holding the entry: src/vault/key-shards.ts).
 *
 *   setup   a MinIO server started here (infra/minio-server.ts), a fresh lethe_bench_*
 *           database, the service in this process (startServer on a free port: S3
 *           store and backup bucket on MinIO, erasure worker at its defaults), tokens
 *           of role writer and eraser. The memories are written through the writer
 *           client (LetheWriter: lease, seal under per-record keys, segments of up to
 *           2,000 entries uploaded to MinIO, registered — the service opens and embeds
 *           each one), all at once: SMALL_RUNS + 1 small subjects of SMALL memories
 *           each, and one large subject of LARGE + RUNS memories. Every text is ~180
 *           characters of pseudo-words of its own, so the probe finds nothing of a
 *           forgotten memory in the survivors. Then the bench waits until the
 *           indexing queue is empty (embeddings are computed off the append's path)
 *           and the database idle, as it does before each legacy re-key.
 *   forget  one unmeasured warm-up forget of a small subject (the same code as every
 *           forget: pools, JIT), then BENCH_FORGET_RUNS (default 3; each large one
 *           re-keys ~LARGE memories) large and max(5, RUNS) small forgets,
 *           alternating small / large while both remain: DELETE /v1/entries/{id}
 *           (eraser) → 202 { erasureId }, then GET /v1/erasures/{id} every 20 ms until
 *           its status is completed or incomplete. A small forget takes a fresh
 *           subject of SMALL memories; the large ones take entries spread over the
 *           large subject (LARGE + RUNS … LARGE + 1 memories at their forget). Figures
 *           per forget: wall ms (DELETE sent → the GET that saw it finished), engine ms
 *           (createdAt → finishedAt), every step's startedAt → finishedAt, destroy
 *           alone (the re-key of the subject without the entry, the old key's
 *           destruction durable in the backup ledger), the longest the event loop was
 *           held at a time, and the embedding rows loaded one by one (vectors.load)
 *           during and after it — the replica's own 'embeddings' notifications of the
 *           re-key, when they arrive before the re-key publishes the survivors. Medians;
 *           ratios large ÷ small. Between forgets the bench waits until the database is
 *           idle and no such load is in flight.
 *   parts  where a re-key's time goes, in every forget and legacy re-key: timed
 *           wrappers around the running vault's own methods (instrumentation only,
 *           nothing else changes) — log.rekeyKey (the re-key, whole), and within it
 *           keys.fenceKey + keys.dekFor, vectors.reseal (the survivors' embedding rows
 *           read, opened, re-sealed), keys.replaceKey (the switch transaction) and
 *           inside it the migrate callback (every survivor's log_entries row updated,
 *           embedding rows upserted, notifications), vectors.publish (the in-memory
 *           index). The rest of the re-key — the select of the subject's rows and the
 *           record keys' unwrap + wrap (for legacy frames: the segments read, every
 *           frame opened, sealed under a record key, stored in one new segment) — is
 *           the whole minus those.
 *   legacy  the previous design, where a re-key rewrote every frame: a subject of
 *           SMALL and one of LARGE memories whose frames are sealed under the subject
 *           key itself (sealLegacyFrame, registered without wrappedKey, straight
 *           through vault.log.register, which embeds them as for any writer), each
 *           re-keyed once with log.rekeySubject leaving one entry out: the conversion
 *           reads every segment, opens and re-seals every frame and stores them in a
 *           new segment, and re-seals the embedding rows as a record-key re-key does.
 *           Compared with the re-keys inside the forgets' destroy steps (same
 *           function, same sizes).
 *
 * Everything runs in this one process except MinIO and PostgreSQL.
 */
import { randomBytes } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import type { App } from '../src/app/open.js';
import { startServer, type RunningServer } from '../src/app/serve.js';
import { LetheWriter } from '../src/client/index.js';
import { S3ObjectStore } from '../src/client/s3.js';
import { loadConfig } from '../src/config/index.js';
import { zeroize } from '../src/crypto/index.js';
import type { ErasureView } from '../src/erasure/view.js';
import { newId, newSegmentKey } from '../src/ids.js';
import { sealLegacyFrame } from '../src/log/frame.js';
import type { RekeyResult } from '../src/log/rekey.js';
import { encodeSegment } from '../src/log/segment.js';
import { createLogger } from '../src/observability/logger.js';
import type { Transaction } from '../src/db/client.js';
import { mulberry32 as prng } from '../fixtures/prng.js';
import { quiesce } from './erasure.js';
import { byMode, envInt, QUICK } from './support/mode.js';
import { cleanup, openScratch, randomRootKey, type Scratch } from './support/scratch.js';
import { runIfMain, sleep } from './support/process.js';
import { type Aim, aim, fmtInt, fmtNum, fmtRatio, fmtSeconds, formatAims, median, progress, table } from './support/report.js';

const POLL_MS = 20;
const TARGET = 2;
const SEGMENT_MAX_ENTRIES = 2_000;
const MIN_SMALL_RUNS = 5;

// ------------------------------------------------------------------ result types

/** One re-key (log.rekeyKey), in parts (timed wrappers around the vault's methods). */
export interface RekeyParts {
  /** log.rekeyKey, whole. */
  readonly totalMs: number;
  /** keys.fenceKey + keys.dekFor. */
  readonly fenceAndDekMs: number;
  /** vectors.reseal: the survivors' embedding rows read, opened, re-sealed. */
  readonly resealMs: number;
  /** keys.replaceKey: the switch transaction, migrate included. */
  readonly switchMs: number;
  /** Of it, the migrate callback: survivors' log_entries rows updated, embeddings upserted, notifications. */
  readonly migrateMs: number;
  /** vectors.publish: the survivors' vectors into the in-memory index. */
  readonly publishMs: number;
  /** totalMs − the parts above: the select of the subject's rows and the record keys' unwrap + wrap (legacy frames: converted). */
  readonly restMs: number;
  readonly rewritten: number;
  readonly converted: number;
}

export interface ForgetStep {
  readonly name: string;
  readonly status: string;
  readonly ms: number | null;
}

export interface ForgetSample {
  /** Memories of the subject when the forget was asked for. */
  readonly memories: number;
  readonly erasureId: string;
  readonly status: string;
  /** DELETE sent → the GET that saw the erasure finished. */
  readonly wallMs: number;
  /** The DELETE's answer alone. */
  readonly requestMs: number;
  /** createdAt → finishedAt of the erasure. */
  readonly engineMs: number;
  readonly destroyMs: number | null;
  readonly steps: ForgetStep[];
  /** engineMs − the sum of the steps: claiming, checkpoints, step commits. */
  readonly betweenStepsMs: number;
  /** The re-key the destroy step ran (null if none was seen). */
  readonly rekey: RekeyParts | null;
  /**
   * Embedding rows loaded one by one (vectors.load) during the forget and until the
   * database went idle after it: the replica's own 'embeddings' notifications of the
   * re-key, for records the index did not hold under the new key yet when they arrived.
   */
  readonly reloads: number;
  /** The longest the service's event loop (this process) was held at a time while the forget ran (monitorEventLoopDelay, max). */
  readonly eventLoopMaxMs: number;
  readonly ok: boolean;
}

export interface ForgetCase {
  /** Memories of the subject at the median forget. */
  readonly memories: number;
  readonly samples: ForgetSample[];
  readonly medianWallMs: number;
  readonly medianEngineMs: number;
  readonly medianDestroyMs: number;
  readonly medianRequestMs: number;
  readonly medianBetweenMs: number;
  readonly medianEventLoopMaxMs: number;
  readonly medianReloads: number;
  readonly stepMedians: Array<{ name: string; ms: number }>;
  /** The destroy steps' re-key of median total time, in parts. */
  readonly rekeyMedian: RekeyParts | null;
}

export interface LegacyRekey {
  readonly memories: number;
  /** log.rekeySubject over frames sealed under the subject key: every frame read, opened, re-sealed, stored in a new segment. */
  readonly parts: RekeyParts;
  /** Embedding rows loaded one by one after it (see ForgetSample.reloads). */
  readonly reloads: number;
}

export interface ForgetResult {
  readonly objectStore: string;
  readonly erasurePollMs: number;
  readonly small: ForgetCase;
  readonly large: ForgetCase;
  /** BENCH_FULL=1 or BENCH_FORGET_HUGE: a subject of 100,000 memories, and its ratio to small. */
  readonly huge: ForgetCase | null;
  readonly hugeRatio: number | null;
  readonly warmup: ForgetSample;
  /** large ÷ small, median wall time DELETE → finished. */
  readonly ratio: number;
  readonly engineRatio: number;
  readonly destroyRatio: number;
  readonly target: number;
  /** Forget large ÷ small, aim <= TARGET. */
  readonly aims: Aim[];
  readonly legacy: { readonly small: LegacyRekey; readonly large: LegacyRekey };
  readonly setup: { readonly writeSeconds: number; readonly entries: number; readonly legacySeconds: number };
  readonly valid: boolean;
  readonly warnings: string[];
}

// ------------------------------------------------------------------ helpers

/** ~180 characters of pseudo-words: texts that share no shingles to speak of. */
function texts(n: number, seed: number): string[] {
  const rand = prng(seed);
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const words: string[] = [];
    let len = 0;
    while (len < 180) {
      const k = 3 + Math.floor(rand() * 7);
      let w = '';
      for (let j = 0; j < k; j++) w += letters[Math.floor(rand() * 26)];
      words.push(w);
      len += k + 1;
    }
    out.push(`${words.join(' ')}.`);
  }
  return out;
}

const msBetween = (a?: string, b?: string): number | null => (a && b ? Date.parse(b) - Date.parse(a) : null);

type Method = (...args: unknown[]) => unknown;

/** Replaces `obj[name]` on the instance by a wrapper that reports each call's duration (sync or async). */
function timeMethod(obj: object, name: string, record: (ms: number, result: unknown) => void, mapArgs?: (args: unknown[]) => unknown[]): void {
  const target = obj as Record<string, Method>;
  const original = target[name];
  if (typeof original !== 'function') throw new Error(`no method ${name} to time`);
  const bound = original.bind(obj);
  target[name] = (...args: unknown[]) => {
    const t0 = performance.now();
    const out = bound(...(mapArgs ? mapArgs(args) : args));
    if (out instanceof Promise) {
      return out.then(
        (r) => (record(performance.now() - t0, r), r),
        (e: unknown) => {
          record(performance.now() - t0, undefined);
          throw e;
        },
      );
    }
    record(performance.now() - t0, out);
    return out;
  };
}

/**
 * Times the parts of every re-key the vault runs (log.rekeyKey and what it calls on the
 * vault's key and vector services). Instrumentation only: each wrapper calls the
 * original with the same arguments. Re-keys run one at a time here.
 */
interface Instruments {
  /** The re-keys finished since the last call. */
  take(): RekeyParts[];
  /** vectors.load calls (one embedding row read, opened, indexed) since the last call. */
  takeLoads(): number;
  /** Resolves when no vectors.load is in flight. */
  loadsSettled(): Promise<void>;
}

function instrumentRekeys(app: App): Instruments {
  type Acc = { fenceAndDekMs: number; resealMs: number; switchMs: number; migrateMs: number; publishMs: number };
  let current: Acc | null = null;
  const done: RekeyParts[] = [];
  const add = (k: keyof Acc) => (ms: number) => {
    if (current) current[k] += ms;
  };
  timeMethod(
    app.log,
    'rekeyKey',
    (totalMs, r) => {
      const acc = current!;
      current = null;
      const result = r as RekeyResult | undefined;
      if (!result) return; // refused (a conflict: the step parks and runs it again)
      const known = acc.fenceAndDekMs + acc.resealMs + acc.switchMs + acc.publishMs;
      done.push({ totalMs, ...acc, restMs: totalMs - known, rewritten: result.rewritten, converted: result.converted });
    },
    (args) => {
      current = { fenceAndDekMs: 0, resealMs: 0, switchMs: 0, migrateMs: 0, publishMs: 0 };
      return args;
    },
  );
  // the replica's own 'embeddings' notifications: a record whose vector the index already holds under the key is skipped, any other is loaded one by one
  let loads = 0;
  let inFlight = 0;
  timeMethod(
    app.vectors,
    'load',
    () => inFlight--,
    (args) => {
      loads++;
      inFlight++;
      return args;
    },
  );
  timeMethod(app.keys, 'fenceKey', add('fenceAndDekMs'));
  timeMethod(app.keys, 'dekFor', add('fenceAndDekMs'));
  timeMethod(app.vectors, 'reseal', add('resealMs'));
  timeMethod(app.vectors, 'publish', add('publishMs'));
  timeMethod(app.keys, 'replaceKey', add('switchMs'), (args) => {
    const [oldKeyId, options] = args as [string, { migrate: (tx: Transaction) => Promise<void> }];
    if (!current) return args;
    const migrate = options.migrate;
    return [
      oldKeyId,
      {
        ...options,
        migrate: async (tx: Transaction) => {
          const t0 = performance.now();
          try {
            await migrate(tx);
          } finally {
            add('migrateMs')(performance.now() - t0);
          }
        },
      },
    ];
  });
  return {
    take: () => done.splice(0),
    takeLoads: () => {
      const n = loads;
      loads = 0;
      return n;
    },
    async loadsSettled() {
      for (const deadline = Date.now() + 120_000; inFlight > 0 && Date.now() < deadline; ) await sleep(20);
    },
  };
}

/**
 * Waits until the indexing queue (index_queue: entries registered by a writer whose
 * embeddings are not computed yet) is empty, then until the database is idle: the
 * queue's workers run in this process and call the same methods the re-key's parts are
 * timed on, so a re-key measured while they work would count their time as its own.
 * A database without the queue (an older schema) has nothing to wait for.
 */
async function settled(pg: postgres.Sql): Promise<void> {
  const [t] = await pg<{ q: string | null }[]>`select to_regclass('index_queue')::text as q`;
  if (t?.q) {
    const deadline = Date.now() + 180_000;
    for (;;) {
      const [r] = await pg<{ n: number }[]>`select count(*)::int as n from index_queue`;
      if (!r || r.n === 0) break;
      if (Date.now() > deadline) throw new Error(`the indexing queue still holds ${r.n} entries after 180 s`);
      await sleep(100);
    }
  }
  await quiesce(pg);
}

/** The re-key of median total time (the lower of the middle two for an even count): its parts add up. */
function medianRekey(xs: readonly RekeyParts[]): RekeyParts | null {
  if (xs.length === 0) return null;
  return [...xs].sort((a, b) => a.totalMs - b.totalMs)[Math.floor((xs.length - 1) / 2)]!;
}

/** One forget, timed; then waits until the database is idle and no embedding load is in flight. */
async function forgetOne(base: string, eraser: string, entryId: string, memories: number, rekeys: Instruments, pg: postgres.Sql): Promise<ForgetSample> {
  const auth = { authorization: `Bearer ${eraser}` };
  rekeys.take();
  rekeys.takeLoads();
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const t0 = performance.now();
  const res = await fetch(`${base}/v1/entries/${entryId}`, { method: 'DELETE', headers: auth });
  const requestMs = performance.now() - t0;
  if (res.status !== 202) throw new Error(`DELETE /v1/entries/${entryId} answered ${res.status}: ${await res.text()}`);
  const { erasureId } = (await res.json()) as { erasureId: string };
  let view: ErasureView;
  const deadline = Date.now() + 180_000;
  for (;;) {
    const r = await fetch(`${base}/v1/erasures/${erasureId}`, { headers: auth });
    if (r.status !== 200) throw new Error(`GET /v1/erasures/${erasureId} answered ${r.status}: ${await r.text()}`);
    view = (await r.json()) as ErasureView;
    if (view.status === 'completed' || view.status === 'incomplete' || view.status === 'failed') break;
    if (Date.now() > deadline) throw new Error(`erasure ${erasureId} not finished after 180 s (status ${view.status})`);
    await sleep(POLL_MS);
  }
  const wallMs = performance.now() - t0;
  loop.disable();
  const steps = view.steps.map((s) => ({ name: s.name, status: s.status, ms: msBetween(s.startedAt, s.finishedAt) }));
  const engineMs = msBetween(view.createdAt, view.finishedAt) ?? Number.NaN;
  const seen = rekeys.take();
  await rekeys.loadsSettled();
  await quiesce(pg);
  await rekeys.loadsSettled();
  const reloads = rekeys.takeLoads();
  return {
    memories,
    erasureId,
    status: view.status,
    wallMs,
    requestMs,
    engineMs,
    destroyMs: steps.find((s) => s.name === 'destroy')?.ms ?? null,
    steps,
    betweenStepsMs: engineMs - steps.reduce((a, s) => a + (s.ms ?? 0), 0),
    rekey: seen.at(-1) ?? null,
    reloads,
    eventLoopMaxMs: loop.max / 1e6,
    ok: view.status === 'completed' && seen.length === 1,
  };
}

function forgetCase(samples: ForgetSample[]): ForgetCase {
  const names = [...new Set(samples.flatMap((s) => s.steps.map((x) => x.name)))];
  return {
    memories: median(samples.map((s) => s.memories)),
    samples,
    medianWallMs: median(samples.map((s) => s.wallMs)),
    medianEngineMs: median(samples.map((s) => s.engineMs)),
    medianDestroyMs: median(samples.map((s) => s.destroyMs ?? Number.NaN)),
    medianRequestMs: median(samples.map((s) => s.requestMs)),
    medianBetweenMs: median(samples.map((s) => s.betweenStepsMs)),
    medianEventLoopMaxMs: median(samples.map((s) => s.eventLoopMaxMs)),
    medianReloads: median(samples.map((s) => s.reloads)),
    stepMedians: names.map((name) => ({ name, ms: median(samples.map((s) => s.steps.find((x) => x.name === name)?.ms ?? 0)) })),
    rekeyMedian: medianRekey(samples.flatMap((s) => (s.rekey ? [s.rekey] : []))),
  };
}

/** Entries of `subject` sealed under the subject key itself (frames from before record keys), registered without wrappedKey. */
async function writeLegacy(app: App, subject: string, all: readonly string[]): Promise<string[]> {
  const ids: string[] = [];
  // as before key shards: one key holds the subject (a reservation past its room is granted whole while its count is
  // moved out of the way, then put back so the registration takes the numbers)
  const first = await app.log.reserve(subject, 1, 'bench');
  const room = (base: number) => app.db.db.execute(sql`update subject_keys set base_seq = ${base} where key_id = ${first.keyId}`);
  for (let at = 0; at < all.length; at += SEGMENT_MAX_ENTRIES) {
    const chunk = all.slice(at, at + SEGMENT_MAX_ENTRIES);
    await room(1_000_000_000);
    const { keyId, firstSeq, count } = await app.log.reserve(subject, chunk.length, 'bench');
    await room(1);
    if (count !== chunk.length) throw new Error(`legacy registration: ${count} of ${chunk.length} sequence numbers reserved`);
    const { dek } = await app.keys.dekFor(keyId);
    try {
      const sealed = chunk.map((text, i) => {
        const entryId = newId('entry');
        const seq = firstSeq + i;
        return { entryId, seq, envelope: sealLegacyFrame(dek, { keyId, entryId, seq }, { text, kind: 'memory', metadata: null }) };
      });
      const { bytes, places } = encodeSegment(sealed.map((s) => s.envelope));
      const segment = newSegmentKey();
      await app.objects.put(segment, bytes);
      const results = await app.log.register(
        segment,
        sealed.map((s, i) => ({ entryId: s.entryId, subject, keyId, seq: s.seq, ...places[i]! })),
      );
      const bad = results.filter((r) => r.status !== 'registered');
      if (bad.length > 0) throw new Error(`legacy registration: ${bad.length} entries ${bad[0]!.status}`);
      ids.push(...sealed.map((s) => s.entryId));
    } finally {
      zeroize(dek);
    }
  }
  return ids;
}

// ------------------------------------------------------------------ run

export async function runForget(): Promise<ForgetResult> {
  const SMALL = envInt('BENCH_FORGET_SMALL', 10, 2);
  const LARGE = envInt('BENCH_FORGET_LARGE', byMode({ quick: 1_000, normal: 10_000, full: 10_000 }), SMALL);
  const HUGE = envInt('BENCH_FORGET_HUGE', byMode({ quick: 0, normal: 0, full: 100_000 }), 0);
  // the previous design's re-key rewrites every frame: compared at up to 2,000
  const LEGACY = Math.min(LARGE, envInt('BENCH_FORGET_LEGACY', 2_000, SMALL));
  const RUNS = envInt('BENCH_FORGET_RUNS', QUICK ? 2 : 3, 1);
  const SMALL_RUNS = Math.max(MIN_SMALL_RUNS, RUNS);
  const writerToken = `writer-${randomBytes(18).toString('base64url')}`;
  const eraserToken = `eraser-${randomBytes(18).toString('base64url')}`;
  const bucket = `lethe-bench-${randomBytes(4).toString('hex')}`;
  const warnings: string[] = [];

  let scratch: Scratch | undefined;
  let server: RunningServer | undefined;
  let writer: LetheWriter | undefined;
  let pg: postgres.Sql | undefined;
  try {
    scratch = await openScratch('forget', { minio: true });
    const { db, dataDir } = scratch;
    const minio = scratch.minio!;
    progress(`forget: starting the service in-process on ${db.name}, bucket ${bucket} at ${minio.endpoint}`);
    const config = loadConfig({
      DATABASE_URL: db.url,
      LETHE_DATA_DIR: dataDir,
      LETHE_ROOT_KEY: randomRootKey(),
      LETHE_TOKENS: `writer=${writerToken},eraser=${eraserToken}`,
      PORT: '0',
      HOST: '127.0.0.1',
      LETHE_LOG_LEVEL: 'warn',
      ...scratch.s3,
      S3_BUCKET: bucket,
      S3_BACKUP_BUCKET: `${bucket}-bak`,
      // the shard size to measure (docs/performance.md compares a few)
      ...(process.env.LETHE_KEY_SHARD_ENTRIES ? { LETHE_KEY_SHARD_ENTRIES: process.env.LETHE_KEY_SHARD_ENTRIES } : {}),
    });
    server = await startServer(config, createLogger('warn', process.stderr));
    const app = server.app;
    const rekeys = instrumentRekeys(app);
    pg = postgres(db.url, { max: 1, onnotice: () => {} });
    const base = `http://127.0.0.1:${server.port}`;
    const store = new S3ObjectStore({ endpoint: minio.endpoint, accessKey: minio.accessKey, secretKey: minio.secretKey, bucket });
    writer = new LetheWriter({
      baseUrl: base,
      token: writerToken,
      store,
      segmentMaxEntries: SEGMENT_MAX_ENTRIES,
      segmentMaxBytes: 8 * 1024 * 1024,
      segmentMaxAgeMs: 50,
      reserveBlock: SEGMENT_MAX_ENTRIES,
    });
    const w = writer;

    // ------------------------------------------------------------ write the memories
    const smallSubjects = Array.from({ length: SMALL_RUNS + 1 }, (_, i) => `bench-forget-small-${i}`);
    const largeSubject = 'bench-forget-large';
    const largeCount = LARGE + RUNS;
    const hugeSubject = 'bench-forget-huge';
    const hugeCount = HUGE > 0 ? HUGE + RUNS : 0;
    const entries = smallSubjects.length * SMALL + largeCount + hugeCount;
    const all = texts(entries, 7);
    progress(
      `forget: writing ${fmtInt(entries)} memories through LetheWriter (${smallSubjects.length} subjects x ${SMALL}, 1 x ${fmtInt(largeCount)}; segments of up to ${fmtInt(SEGMENT_MAX_ENTRIES)})`,
    );
    const w0 = performance.now();
    const jobs: Array<{ subject: string; text: string }> = [];
    for (const s of smallSubjects) for (let i = 0; i < SMALL; i++) jobs.push({ subject: s, text: all[jobs.length]! });
    for (let i = 0; i < largeCount; i++) jobs.push({ subject: largeSubject, text: all[jobs.length]! });
    for (let i = 0; i < hugeCount; i++) jobs.push({ subject: hugeSubject, text: all[jobs.length]! });
    const written = await Promise.all(jobs.map((j) => w.append(j.subject, { text: j.text, kind: 'memory' })));
    const ids = new Map<string, string[]>();
    written.forEach((r, i) => {
      ids.set(jobs[i]!.subject, [...(ids.get(jobs[i]!.subject) ?? []), r.entryId]);
    });
    const writeSeconds = (performance.now() - w0) / 1000;
    progress(`forget: written in ${fmtSeconds(writeSeconds)} (${fmtInt(entries / writeSeconds)} entries/s)`);
    await writer.close();
    writer = undefined;
    await settled(pg);

    // ------------------------------------------------------------ forgets, alternating
    const largeIds = ids.get(largeSubject)!;
    // spread over the subject's history
    const largePick = (i: number) => largeIds[Math.floor(((i + 0.5) * largeIds.length) / RUNS)]!;
    const smallPick = (i: number) => ids.get(smallSubjects[i]!)![Math.floor(SMALL / 2)]!;
    const line = (label: string, s: ForgetSample) =>
      `forget: ${label} (${fmtInt(s.memories)} memories) ${s.status} in ${fmtNum(s.wallMs, 0)} ms (engine ${fmtNum(s.engineMs, 0)}); ` +
      s.steps.map((x) => `${x.name} ${x.ms === null ? '-' : fmtNum(x.ms, 0)}`).join(', ') +
      `; event loop held up to ${fmtNum(s.eventLoopMaxMs, 0)} ms; ${fmtInt(s.reloads)} embeddings reloaded one by one` +
      (s.rekey
        ? `; re-key ${fmtNum(s.rekey.totalMs, 0)} (reseal ${fmtNum(s.rekey.resealMs, 0)}, switch ${fmtNum(s.rekey.switchMs, 0)}, rest ${fmtNum(s.rekey.restMs, 0)})`
        : '');
    const warmup = await forgetOne(base, eraserToken, smallPick(0), SMALL, rekeys, pg);
    progress(line('small warm-up', warmup));
    const smallSamples: ForgetSample[] = [];
    const largeSamples: ForgetSample[] = [];
    for (let i = 0; i < SMALL_RUNS; i++) {
      const a = await forgetOne(base, eraserToken, smallPick(i + 1), SMALL, rekeys, pg);
      smallSamples.push(a);
      progress(line(`small run ${i + 1}`, a));
      if (i >= RUNS) continue;
      const b = await forgetOne(base, eraserToken, largePick(i), largeCount - i, rekeys, pg);
      largeSamples.push(b);
      progress(line(`large run ${i + 1}`, b));
    }
    const small = forgetCase(smallSamples);
    const large = forgetCase(largeSamples);
    const hugeSamples: ForgetSample[] = [];
    if (hugeCount > 0) {
      const hugeIds = ids.get(hugeSubject)!;
      for (let i = 0; i < RUNS; i++) {
        const c = await forgetOne(base, eraserToken, hugeIds[Math.floor(((i + 0.5) * hugeIds.length) / RUNS)]!, hugeCount - i, rekeys, pg);
        hugeSamples.push(c);
        progress(line(`huge run ${i + 1}`, c));
      }
    }
    const huge = hugeSamples.length > 0 ? forgetCase(hugeSamples) : null;

    // ------------------------------------------------------------ the previous design: re-keys over legacy frames
    const l0 = performance.now();
    const legacyTexts = texts(SMALL + LEGACY, 11);
    progress(`forget: legacy frames (sealed under the subject key, no record keys): a subject of ${SMALL} and one of ${fmtInt(LEGACY)}`);
    const legacy: LegacyRekey[] = [];
    for (const [n, slice] of [
      [SMALL, legacyTexts.slice(0, SMALL)],
      [LEGACY, legacyTexts.slice(SMALL)],
    ] as const) {
      const subject = `bench-forget-legacy-${n}`;
      const legacyIds = await writeLegacy(app, subject, slice);
      await settled(pg);
      rekeys.take();
      const r = await app.log.rekeySubject(subject, { exclude: [legacyIds[Math.floor(n / 2)]!], actor: 'bench', reason: 'bench: legacy re-key' });
      const parts = rekeys.take().at(-1)!;
      await rekeys.loadsSettled();
      await quiesce(pg);
      const reloads = rekeys.takeLoads();
      if (r.converted !== n - 1) warnings.push(`the legacy re-key of ${fmtInt(n)} converted ${r.converted} frames, not ${n - 1}`);
      legacy.push({ memories: n, parts, reloads });
      progress(
        `forget: re-key of ${fmtInt(n)} legacy frames ${fmtNum(parts.totalMs, 0)} ms (${r.converted} converted; reseal ${fmtNum(parts.resealMs, 0)}, ` +
          `switch ${fmtNum(parts.switchMs, 0)}, rest ${fmtNum(parts.restMs, 0)}); ${fmtInt(reloads)} embeddings reloaded one by one after it`,
      );
      await quiesce(pg);
    }
    const legacySeconds = (performance.now() - l0) / 1000;

    for (const s of [warmup, ...smallSamples, ...largeSamples, ...hugeSamples]) {
      if (!s.ok) warnings.push(`the forget ${s.erasureId} (${fmtInt(s.memories)} memories) ended ${s.status}${s.rekey ? '' : ' (no re-key seen)'}`);
    }
    return {
      objectStore: 'MinIO (S3ObjectStore; a server started by the bench)',
      erasurePollMs: config.erasurePollMs,
      small,
      large,
      huge,
      hugeRatio: huge ? huge.medianWallMs / small.medianWallMs : null,
      warmup,
      ratio: large.medianWallMs / small.medianWallMs,
      engineRatio: large.medianEngineMs / small.medianEngineMs,
      destroyRatio: large.medianDestroyMs / small.medianDestroyMs,
      target: TARGET,
      aims: [
        aim(
          `forget one memory median, subject of ${fmtInt(LARGE)} ÷ ${fmtInt(SMALL)} memories`,
          large.medianWallMs / small.medianWallMs,
          `<= ${TARGET}`,
          large.medianWallMs / small.medianWallMs <= TARGET && warnings.length === 0,
        ),
      ],
      legacy: { small: legacy[0]!, large: legacy[1]! },
      setup: { writeSeconds, entries, legacySeconds },
      valid: warnings.length === 0,
      warnings,
    };
  } finally {
    await cleanup('forget', [
      ['writer', async () => writer?.close()],
      ['pg', async () => pg?.end({ timeout: 5 })],
      ['service', async () => server?.close()],
    ]);
    await scratch?.cleanup();
  }
}

// ------------------------------------------------------------------ report

const pct = (part: number, whole: number) => (whole > 0 ? `${fmtNum((100 * part) / whole, 0)}%` : '');

export function formatForget(r: ForgetResult): string {
  const { small: s, large: l } = r;
  const lines: string[] = [];
  lines.push(
    `Forget one memory: DELETE /v1/entries/{id} → GET /v1/erasures/{id} every ${POLL_MS} ms until finished, a subject of ${fmtInt(s.memories)} vs ~${fmtInt(l.memories)} memories; ` +
      `${s.samples.length} small and ${l.samples.length} large forgets after one small warm-up, alternating; real PostgreSQL, ${r.objectStore}; ` +
      `service in-process, erasure worker poll ${r.erasurePollMs} ms (its default)`,
  );
  lines.push(
    table(
      [
        'memories',
        'forgets (wall ms)',
        'median wall ms',
        'median engine ms',
        'median destroy ms',
        'DELETE answered ms',
        'event loop held (max, median)',
        'embeddings reloaded one by one',
        'status',
      ],
      [s, l, ...(r.huge ? [r.huge] : [])].map((c) => [
        fmtInt(c.memories),
        c.samples.map((x) => fmtNum(x.wallMs, 0)).join(' / '),
        fmtNum(c.medianWallMs, 0),
        fmtNum(c.medianEngineMs, 0),
        fmtNum(c.medianDestroyMs, 0),
        fmtNum(c.medianRequestMs, 1),
        `${fmtNum(c.medianEventLoopMaxMs, 0)} ms`,
        c.samples.map((x) => fmtInt(x.reloads)).join(' / '),
        [...new Set(c.samples.map((x) => x.status))].join(', '),
      ]),
    ),
  );
  lines.push(
    `ratio ${fmtInt(l.memories)} ÷ ${fmtInt(s.memories)} memories: wall ${fmtRatio(r.ratio)}, engine ${fmtRatio(r.engineRatio)}, destroy step ${fmtRatio(r.destroyRatio)}; ` +
      `aim ratio <= ${r.target} (forgetting one memory costs about the same however many the subject has): ${r.ratio <= r.target ? 'met' : 'NOT met'}`,
  );
  if (r.huge && r.hugeRatio !== null)
    lines.push(
      `ratio ${fmtInt(r.huge.memories)} ÷ ${fmtInt(s.memories)} memories: wall ${fmtRatio(r.hugeRatio)} (re-key of ${fmtInt(r.huge.rekeyMedian?.rewritten ?? 0)} survivors)`,
    );
  if (l.rekeyMedian) {
    const p = l.rekeyMedian;
    const top = [...l.stepMedians].sort((a, b) => b.ms - a.ms)[0]!;
    lines.push(
      `at ${fmtInt(l.memories)} memories the ${top.name} step takes ${pct(top.ms, l.medianEngineMs)} of the engine time; its re-key (${fmtNum(p.totalMs, 0)} ms, ${fmtInt(p.rewritten)} survivors, ` +
        `${fmtNum((1000 * p.totalMs) / Math.max(1, p.rewritten), 0)} µs each): embedding rows re-sealed ${pct(p.resealMs, p.totalMs)}, switch transaction ${pct(p.switchMs, p.totalMs)}, ` +
        `rows selected + record keys re-wrapped ${pct(p.restMs, p.totalMs)}, in-memory index ${pct(p.publishMs, p.totalMs)}; the event loop was held up to ${fmtNum(l.medianEventLoopMaxMs, 0)} ms at a time (median)`,
    );
  }
  lines.push('');
  lines.push('Per-step medians (ms; startedAt → finishedAt of each step)');
  const rows = s.stepMedians.map(({ name, ms: a }) => {
    const b = l.stepMedians.find((x) => x.name === name)?.ms ?? 0;
    return [name, fmtNum(a, 0), fmtNum(b, 0), a > 0 ? fmtRatio(b / a) : '', pct(b, l.medianEngineMs)];
  });
  rows.push([
    'between steps (claims, checkpoints, commits)',
    fmtNum(s.medianBetweenMs, 0),
    fmtNum(l.medianBetweenMs, 0),
    s.medianBetweenMs > 0 ? fmtRatio(l.medianBetweenMs / s.medianBetweenMs) : '',
    pct(l.medianBetweenMs, l.medianEngineMs),
  ]);
  lines.push(table(['step', `${fmtInt(s.memories)} ms`, `${fmtInt(l.memories)} ms`, 'ratio', `share of the ${fmtInt(l.memories)} engine time`], rows));

  lines.push('');
  lines.push(
    "Where a re-key goes (timed wrappers around the vault's own methods): the forgets' median re-key (destroy step), and — the previous design, a re-key " +
      'that rewrote every frame — log.rekeySubject of a subject whose frames are sealed under the subject key (converted: read, opened, re-sealed, stored again)',
  );
  const cols = [
    { label: `forget, ${fmtInt(s.memories)}`, p: s.rekeyMedian },
    { label: `forget, ${fmtInt(l.memories)}`, p: l.rekeyMedian },
    { label: `legacy, ${fmtInt(r.legacy.small.memories)}`, p: r.legacy.small.parts },
    { label: `legacy, ${fmtInt(r.legacy.large.memories)}`, p: r.legacy.large.parts },
  ];
  const partRow = (name: string, k: keyof RekeyParts) => [name, ...cols.map((c) => (c.p ? `${fmtNum(c.p[k], 0)} (${pct(c.p[k], c.p.totalMs)})` : '-'))];
  lines.push(
    table(
      ['re-key part (ms, share)', ...cols.map((c) => c.label)],
      [
        partRow('select rows + record keys unwrapped and wrapped (legacy: frames read, opened, re-sealed, stored)', 'restMs'),
        partRow('vectors.reseal: embedding rows read, opened, re-sealed', 'resealMs'),
        partRow('keys.replaceKey: the switch transaction', 'switchMs'),
        partRow('  of it, migrate: rows updated, embeddings upserted, notify', 'migrateMs'),
        partRow('vectors.publish: in-memory index', 'publishMs'),
        partRow('keys.fenceKey + keys.dekFor', 'fenceAndDekMs'),
        ['re-key, whole', ...cols.map((c) => (c.p ? fmtNum(c.p.totalMs, 0) : '-'))],
      ],
    ),
  );
  if (l.rekeyMedian) {
    const lg = r.legacy.large.parts;
    const sm = r.legacy.small.parts;
    lines.push(
      `  legacy re-key ÷ record-key re-key: ${fmtRatio(sm.totalMs / (s.rekeyMedian?.totalMs ?? Number.NaN))} at ${fmtInt(s.memories)}, ${fmtRatio(lg.totalMs / l.rekeyMedian.totalMs)} at ${fmtInt(l.memories)}; ` +
        `${fmtInt(l.memories)} ÷ ${fmtInt(s.memories)}: legacy ${fmtRatio(lg.totalMs / sm.totalMs)}, record keys ${fmtRatio(l.rekeyMedian.totalMs / (s.rekeyMedian?.totalMs ?? Number.NaN))}`,
    );
  }
  lines.push('');
  lines.push(
    `setup: ${fmtInt(r.setup.entries)} memories written through LetheWriter in ${fmtSeconds(r.setup.writeSeconds)}; legacy subjects written and re-keyed in ${fmtSeconds(r.setup.legacySeconds)}; ` +
      `warm-up forget ${fmtNum(r.warmup.wallMs, 0)} ms`,
  );
  lines.push(formatAims(r.aims));
  for (const w of r.warnings) lines.push(`WARNING: ${w}`);
  return lines.join('\n');
}

await runIfMain(import.meta.url, runForget, formatForget);

/**
 * Appends through the writer client against a real MinIO, in one run:
 *
 *   setup     a MinIO server started here (infra/minio-server.ts), a fresh lethe_bench_*
 *             database, the service as a child process (`lethe serve`, as bench/lease.ts
 *             starts it: writer and service do not share one thread; S3 store on a fresh
 *             bucket), an S3ObjectStore on the same bucket for the writer.
 *   1. writer LetheWriter.append of BENCH_APPEND_ENTRIES entries (default 8,000; 2,000
 *             when quick, 50,000 with BENCH_FULL) of 512 bytes of random printable text,
 *             round-robin over 1,000 subjects, 256 appends in flight; segments flushed at
 *             1 MiB or 50 ms, sequence numbers reserved 64 at a time. An unmeasured
 *             warm-up first appends one entry per subject (leases and reservations taken).
 *             Every 160th entry starts with a marker word: from its acknowledgement, its
 *             subject's lexical search (POST /v1/search, mode lexical) runs every 20 ms
 *             until a hit is that entry (2 such searches at most at once).
 *             Meanwhile /metrics is read every 100 ms: `lethe_search_lag_seconds` (age
 *             of the oldest entry not indexed yet) sampled over the phase; then the
 *             time until the indexing queue is empty after the last append (waited for
 *             at most 5 s; 300 s with BENCH_FULL: what is left, and the
 *             indexer's rate alone, are reported), and the per-entry delay
 *             (registration → searchable) from the `lethe_search_index_delay_seconds`
 *             histogram. BENCH_APPEND_INDEXER=false runs the service without its
 *             indexer (LETHE_INDEXER=false): the registration path alone;
 *             BENCH_SEAL_WORKERS=n sets its seal workers (LETHE_SEAL_WORKERS).
 *   2. baseline the same texts, unencrypted, through a plain batcher with the writer's
 *             size/age policy (1 MiB or 50 ms after the first entry; each text with a
 *             4-byte length prefix, as a frame), `store.put` to the same bucket, the
 *             same 256 entries in flight; an entry resolves when its object is stored.
 *             No lease, no sealing, no registration. Same unmeasured warm-up.
 *   3. read   GET /v1/subjects/{subject}/entries for 50 subjects (25 quick, all 1,000
 *             with BENCH_FULL) through the HTTP service (fetch, 16 requests in flight),
 *             every returned text checked against what was appended; unmeasured warm-up
 *             over 10 subjects. The indexer may still be draining its backlog meanwhile.
 *   4. bytes  stored segment bytes (a listing of log/ through the store) minus the
 *             entry text bytes, per frame; next to it the overhead the formats predict:
 *             envelope header + key id + nonce + commitment + tag (src/crypto/envelope.ts
 *             constants), the frame payload's JSON wrapping, the segment's 4-byte length
 *             prefix per frame and its 12-byte header per segment.
 *
 * Aims (docs/performance.md, issues 17 and 35): writer ÷ baseline >= 0.85, and an entry
 * found by its subject's search within 1 s of its acknowledgement (p99) at that rate; the
 * index lag (all-subjects searches, vectors) reported. The CPU seconds of this process (writer)
 * and of the service process are reported per phase; the load average with the figures.
 * Entry text uses printable ASCII without `"` and `\`, so its JSON form is as long as the
 * text. 1 MB = 10^6 bytes. The section takes under a minute by default.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import postgres from 'postgres';
import { LetheWriter } from '../src/client/index.js';
import { S3ObjectStore } from '../src/client/s3.js';
import { COMMITMENT_LENGTH, NONCE_LENGTH, seal, TAG_LENGTH } from '../src/crypto/envelope.js';
import type { StoredObject } from '../src/storage/store.js';
import { startScratchService } from './support/service.js';
import { byMode } from './support/mode.js';
import { cleanup, openScratch, type Scratch } from './support/scratch.js';
import { cpuSeconds, pool, runIfMain } from './support/process.js';
import { type Aim, aim, fmtInt, fmtNum, fmtRatio, formatAims, progress, table } from './support/report.js';

export interface AppendPhase {
  readonly label: string;
  readonly entries: number;
  readonly errors: number;
  readonly seconds: number;
  readonly entriesPerSec: number;
  /** Entry text megabytes (10^6) per second. */
  readonly mbPerSec: number;
  /** Objects stored during the phase, and their mean number of entries. */
  readonly segments: number;
  readonly entriesPerSegment: number;
  readonly meanSegmentBytes: number;
  readonly latencyMs: { readonly p50: number; readonly p99: number; readonly max: number };
  /** user + system CPU of this process (the writer, or the plain batcher) during the phase. */
  readonly cpuSeconds: number;
  /** user + system CPU of the service process during the phase. */
  readonly serviceCpuSeconds: number;
}

/** Search freshness while the writer ran (the service's /metrics, read every 100 ms). */
export interface SearchLag {
  /** `lethe_search_lag_seconds` samples over the writer phase: the age of the oldest entry not yet searchable. */
  readonly samples: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** Entries waiting in the indexing queue at the end of the writer phase, and the seconds until none was left (or the section stopped waiting). */
  readonly queuedAtEnd: number;
  readonly drainSeconds: number;
  /** Entries still queued when the section stopped waiting (0: drained). */
  readonly queuedAfterWait: number;
  /** Entries indexed per second after the last append (the indexer alone, the writer stopped). */
  readonly drainedPerSec: number;
  /** Per entry, registration → searchable (`lethe_search_index_delay_seconds`, the upper bound of the bucket holding the percentile). */
  readonly perEntry: { readonly count: number; readonly p50: number; readonly p99: number };
}

/** Scoped lexical searches for marked entries, from each one's acknowledgement until a search finds it. */
export interface SearchVisibility {
  /** Marked entries searched for (every VISIBLE_EVERY-th appended, while fewer than VISIBLE_CONCURRENCY searches ran). */
  readonly probes: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** Marked entries no search found within VISIBLE_GIVE_UP_MS (counted in p99 at that bound). */
  readonly notFound: number;
  /** Marked entries not searched for: VISIBLE_CONCURRENCY searches were running. */
  readonly skipped: number;
  /** Search requests that failed or answered other than 200. */
  readonly errors: number;
}

export interface AppendReadResult {
  readonly subjects: number;
  readonly concurrency: number;
  readonly requests: number;
  readonly entries: number;
  readonly seconds: number;
  readonly entriesPerSec: number;
  readonly requestsPerSec: number;
  readonly latencyMs: { readonly p50: number; readonly p99: number; readonly max: number };
  readonly errors: number;
  /** Subjects whose returned texts differ from what was appended. */
  readonly mismatches: number;
  /** Distinct segments the service reads from to answer one subject's read (mean). */
  readonly segmentGetsPerRequest: number;
  /** Bytes fetched from the object store (ranged reads of frames) ÷ entry text bytes returned. */
  readonly readAmplification: number;
  readonly cpuSeconds: number;
  readonly serviceCpuSeconds: number;
}

export interface AppendOverhead {
  readonly segments: number;
  readonly frames: number;
  readonly storedBytes: number;
  readonly textBytes: number;
  /** (stored bytes − text bytes) ÷ frames. */
  readonly perFrame: number;
  readonly keyIdLength: number;
  /** Envelope bytes beyond the plaintext: header (magic, version, algorithm, key id length) + key id + nonce + commitment + tag. */
  readonly envelopeFixed: number;
  readonly envelopeParts: { readonly header: number; readonly keyId: number; readonly nonce: number; readonly commitment: number; readonly tag: number };
  /** Frame payload JSON around the text: {"text":"…","kind":null,"metadata":null}. */
  readonly payloadJson: number;
  readonly lengthPrefix: number;
  /** 12-byte segment header ÷ mean frames per segment. */
  readonly segmentHeaderPerFrame: number;
  /** envelopeFixed + payloadJson + lengthPrefix + segmentHeaderPerFrame. */
  readonly predictedPerFrame: number;
}

export interface AppendResult {
  readonly subjects: number;
  readonly entries: number;
  readonly entryBytes: number;
  readonly concurrency: number;
  readonly segmentMaxBytes: number;
  readonly segmentMaxAgeMs: number;
  readonly reserveBlock: number;
  readonly writer: AppendPhase;
  readonly baseline: AppendPhase;
  /** writer entries/s ÷ baseline entries/s. */
  readonly ratio: number;
  readonly target: number;
  readonly lag: SearchLag;
  readonly visibility: SearchVisibility;
  readonly read: AppendReadResult;
  readonly overhead: AppendOverhead;
  /** The aims: appends ÷ plain uploads >= 0.85; scoped search visibility p99 during the writer phase ÷ 1 s < 1. */
  readonly aims: Aim[];
  /** os.loadavg() (1, 5, 15 min) at the start and at the end of the section. */
  readonly loadAverage: { readonly start: number[]; readonly end: number[] };
  readonly valid: boolean;
  readonly warnings: string[];
}

const ENTRY_BYTES = 512;
const SEGMENT_HEADER = 12;
const LENGTH_PREFIX = 4;
/** magic (2) + format version (1) + algorithm id (1) + key id length (1), per the layout in src/crypto/envelope.ts. */
const ENVELOPE_FIXED_HEADER = 5;
// printable ASCII without '"' and '\', which JSON would escape
const CHARSET = Buffer.from(Array.from({ length: 0x7f - 0x20 }, (_, i) => 0x20 + i).filter((c) => c !== 0x22 && c !== 0x5c));

function randomTexts(count: number): string[] {
  const raw = randomBytes(count * ENTRY_BYTES);
  for (let i = 0; i < raw.length; i++) raw[i] = CHARSET[raw[i]! % CHARSET.length]!;
  return Array.from({ length: count }, (_, i) => raw.toString('latin1', i * ENTRY_BYTES, (i + 1) * ENTRY_BYTES));
}

function subjectName(i: number): string {
  return `bench-subject-${String(i).padStart(6, '0')}`;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function latency(samples: Float64Array): { p50: number; p99: number; max: number } {
  const sorted = samples.slice().sort();
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] ?? NaN };
}

async function listAll(store: S3ObjectStore, prefix: string): Promise<StoredObject[]> {
  const out: StoredObject[] = [];
  for await (const o of store.list(prefix)) out.push(o);
  return out;
}

/**
 * The baseline uploader: the writer's batching (flush at maxBytes, or maxAgeMs after the
 * first pending entry; 4-byte length prefix per entry) with none of its crypto or
 * service calls. An entry resolves once its object is stored.
 */
class PlainBatcher {
  #pending: Array<{ bytes: Buffer; resolve: () => void; reject: (e: unknown) => void }> = [];
  #pendingBytes = 0;
  #timer: NodeJS.Timeout | undefined;
  #n = 0;
  segments = 0;
  bytes = 0;

  readonly store: S3ObjectStore;
  readonly prefix: string;
  readonly maxBytes: number;
  readonly maxAgeMs: number;

  constructor(store: S3ObjectStore, prefix: string, maxBytes: number, maxAgeMs: number) {
    this.store = store;
    this.prefix = prefix;
    this.maxBytes = maxBytes;
    this.maxAgeMs = maxAgeMs;
  }

  add(text: string): Promise<void> {
    const bytes = Buffer.from(text, 'utf8');
    return new Promise<void>((resolve, reject) => {
      this.#pending.push({ bytes, resolve, reject });
      this.#pendingBytes += bytes.length + LENGTH_PREFIX;
      if (this.#pendingBytes >= this.maxBytes) this.#flush();
      else this.#timer ??= setTimeout(() => this.#flush(), this.maxAgeMs);
    });
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#pending.length === 0) return;
    const batch = this.#pending;
    this.#pending = [];
    this.#pendingBytes = 0;
    const body = Buffer.allocUnsafe(batch.reduce((n, e) => n + LENGTH_PREFIX + e.bytes.length, 0));
    let at = 0;
    for (const e of batch) {
      body.writeUInt32BE(e.bytes.length, at);
      e.bytes.copy(body, at + LENGTH_PREFIX);
      at += LENGTH_PREFIX + e.bytes.length;
    }
    this.segments++;
    this.bytes += body.length;
    const key = `${this.prefix}/plain_${String(this.#n++).padStart(8, '0')}_${randomBytes(6).toString('hex')}`;
    this.store.put(key, body).then(
      () =>
        batch.forEach((e) => {
          e.resolve();
        }),
      (err: unknown) =>
        batch.forEach((e) => {
          e.reject(err);
        }),
    );
  }
}

interface PhaseRun {
  readonly seconds: number;
  readonly errors: number;
  readonly latencies: Float64Array;
  readonly cpuSeconds: number;
  readonly serviceCpuSeconds: number;
  readonly firstError?: string;
}

/** user + system CPU seconds a process used so far (/proc/<pid>/stat, in USER_HZ ticks of 1/100 s); NaN where there is no /proc. */
function processCpu(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // after "pid (comm) ": state is field 3, utime field 14, stime field 15
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/** Runs fn(0..count-1) with `concurrency` in flight; per-call latency, failures counted, CPU of this process and of the service. */
async function drive(count: number, concurrency: number, servicePid: number | undefined, fn: (i: number) => Promise<void>): Promise<PhaseRun> {
  const latencies = new Float64Array(count);
  let errors = 0;
  let firstError: string | undefined;
  const cpu0 = process.cpuUsage();
  const service0 = processCpu(servicePid);
  const t0 = performance.now();
  await pool(count, concurrency, async (i) => {
    const s = performance.now();
    try {
      await fn(i);
    } catch (e) {
      errors++;
      const cause = (e as { cause?: { message?: string; code?: string; cause?: { code?: string; message?: string } } }).cause;
      firstError ??= `${(e as Error).message}${cause ? ` (${cause.code ?? cause.cause?.code ?? ''} ${cause.message ?? ''} ${cause.cause?.message ?? ''})` : ''}`;
    }
    latencies[i] = performance.now() - s;
  });
  const seconds = (performance.now() - t0) / 1000;
  return {
    seconds,
    errors,
    latencies,
    cpuSeconds: cpuSeconds(cpu0),
    serviceCpuSeconds: processCpu(servicePid) - service0,
    ...(firstError ? { firstError } : {}),
  };
}

function phase(label: string, run: PhaseRun, entries: number, segments: number, segmentBytes: number): AppendPhase {
  const ok = entries - run.errors;
  return {
    label,
    entries,
    errors: run.errors,
    seconds: run.seconds,
    entriesPerSec: ok / run.seconds,
    mbPerSec: (ok * ENTRY_BYTES) / run.seconds / 1e6,
    segments,
    entriesPerSegment: segments > 0 ? ok / segments : 0,
    meanSegmentBytes: segments > 0 ? segmentBytes / segments : 0,
    latencyMs: latency(run.latencies),
    cpuSeconds: run.cpuSeconds,
    serviceCpuSeconds: run.serviceCpuSeconds,
  };
}

/** A gauge's value in a Prometheus text exposition (undefined when absent). */
function gaugeOf(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** A histogram's cumulative buckets (upper bound → count), `+Inf` last. */
function bucketsOf(text: string, name: string): Array<{ le: number; count: number }> {
  const out: Array<{ le: number; count: number }> = [];
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\S+)$`).exec(line);
    if (m) out.push({ le: m[1] === '+Inf' ? Infinity : Number(m[1]), count: Number(m[2]) });
  }
  return out.sort((a, b) => a.le - b.le);
}

/** The upper bound of the bucket holding percentile `p` of the observations between two scrapes. */
function bucketPercentile(before: ReturnType<typeof bucketsOf>, after: ReturnType<typeof bucketsOf>, p: number): { count: number; value: number } {
  const counts = after.map((b) => ({ le: b.le, count: b.count - (before.find((x) => x.le === b.le)?.count ?? 0) }));
  const total = counts.at(-1)?.count ?? 0;
  if (total === 0) return { count: 0, value: NaN };
  const want = Math.ceil((p / 100) * total);
  return { count: total, value: counts.find((b) => b.count >= want)?.le ?? NaN };
}

/** Reads the service's /metrics every `everyMs`: the search lag and the queue, kept while `recording`. */
class MetricsPoller {
  readonly lags: number[] = [];
  recording = false;
  last: { lag: number; queued: number } | undefined;
  errors = 0;
  #stopped = false;
  #loop: Promise<void> | undefined;

  constructor(
    readonly base: string,
    readonly everyMs: number,
  ) {}

  start(): void {
    this.#loop = (async () => {
      while (!this.#stopped) {
        const t0 = performance.now();
        try {
          const text = await (await fetch(`${this.base}/metrics`)).text();
          const lag = gaugeOf(text, 'lethe_search_lag_seconds');
          const queued = gaugeOf(text, 'lethe_search_queue_entries');
          if (lag !== undefined && queued !== undefined) {
            this.last = { lag, queued };
            if (this.recording) this.lags.push(lag);
          }
        } catch {
          this.errors++;
        }
        await new Promise((r) => setTimeout(r, Math.max(0, this.everyMs - (performance.now() - t0))));
      }
    })();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#loop;
  }
}

/** Every VISIBLE_EVERY-th measured entry starts with a marker word its subject's lexical search looks for. */
const VISIBLE_EVERY = 160;
/** Marked entries searched for at once (one acknowledged while that many run is skipped). */
const VISIBLE_CONCURRENCY = 2;
const VISIBLE_POLL_MS = 20;
const VISIBLE_GIVE_UP_MS = 10_000;
const markerOf = (i: number) => `zvis${i.toString(36)}mark`;

/** From an entry's acknowledgement, its subject's lexical search (POST /v1/search) every VISIBLE_POLL_MS until a hit is the entry. */
class VisibilityProber {
  readonly seconds: number[] = [];
  probes = 0;
  notFound = 0;
  skipped = 0;
  errors = 0;
  readonly #running = new Set<Promise<void>>();

  constructor(
    readonly base: string,
    readonly token: string,
  ) {}

  probe(subject: string, entryId: string, marker: string, ackAt: number): void {
    if (this.#running.size >= VISIBLE_CONCURRENCY) {
      this.skipped++;
      return;
    }
    this.probes++;
    const running = (async () => {
      while (performance.now() - ackAt < VISIBLE_GIVE_UP_MS) {
        try {
          const res = await fetch(`${this.base}/v1/search`, {
            method: 'POST',
            headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ query: marker, subject, k: 3, mode: 'lexical' }),
          });
          if (res.status === 200) {
            const body = (await res.json()) as { hits: Array<{ id: string }> };
            if (body.hits.some((h) => h.id === entryId)) {
              this.seconds.push((performance.now() - ackAt) / 1000);
              return;
            }
          } else {
            await res.arrayBuffer();
            this.errors++;
          }
        } catch {
          this.errors++;
        }
        await new Promise((r) => setTimeout(r, VISIBLE_POLL_MS));
      }
      this.notFound++;
    })();
    this.#running.add(running);
    void running.finally(() => this.#running.delete(running));
  }

  async settle(): Promise<SearchVisibility> {
    await Promise.all([...this.#running]);
    const sorted = Float64Array.from([...this.seconds, ...Array.from({ length: this.notFound }, () => VISIBLE_GIVE_UP_MS / 1000)]).sort();
    return {
      probes: this.probes,
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      max: sorted[sorted.length - 1] ?? NaN,
      notFound: this.notFound,
      skipped: this.skipped,
      errors: this.errors,
    };
  }
}

export async function runAppend(): Promise<AppendResult> {
  const subjects = Number(process.env.BENCH_APPEND_SUBJECTS ?? 1000);
  const entries = Number(process.env.BENCH_APPEND_ENTRIES ?? byMode({ quick: 2_000, normal: 8_000, full: 50_000 }));
  // how long the section waits, after the last append, for the indexing queue to empty (what is left is reported)
  const drainWaitMs = byMode({ quick: 5_000, normal: 5_000, full: 300_000 });
  const readSubjects = Math.min(subjects, byMode({ quick: 25, normal: 50, full: subjects }));
  const concurrency = Number(process.env.BENCH_APPEND_CONCURRENCY ?? 256);
  const readConcurrency = 16;
  const segmentMaxBytes = 1024 * 1024;
  const segmentMaxAgeMs = 50;
  const reserveBlock = 64;
  const writerToken = `writer-${randomBytes(18).toString('base64url')}`;
  const bucket = `lethe-bench-${randomBytes(4).toString('hex')}`;
  const warnings: string[] = [];
  const loadStart = loadavg().map((x) => Math.round(x * 100) / 100);
  const indexing = process.env.BENCH_APPEND_INDEXER !== 'false';

  const subjectNames = Array.from({ length: subjects }, (_, i) => subjectName(i));
  const warmTexts = randomTexts(subjects);
  const texts = randomTexts(entries);
  for (let i = 0; i < entries; i += VISIBLE_EVERY) texts[i] = `${markerOf(i)} ${texts[i]!.slice(markerOf(i).length + 1)}`;

  let scratch: Scratch | undefined;
  let writer: LetheWriter | undefined;
  let poller: MetricsPoller | undefined;
  try {
    scratch = await openScratch('append', { minio: true });
    const { db } = scratch;
    const minio = scratch.minio!;
    progress(`append: starting the service (a child process) on ${db.name}, bucket ${bucket} at ${minio.endpoint}`);
    const server = await startScratchService(scratch, {
      LETHE_TOKENS: `writer=${writerToken}`,
      ...scratch.s3,
      S3_BUCKET: bucket,
      S3_BACKUP_BUCKET: `${bucket}-bak`,
      // BENCH_APPEND_INDEXER=false: the service does not index (the registration path alone; the lag is not measured)
      LETHE_INDEXER: indexing ? 'true' : 'false',
      // BENCH_SEAL_WORKERS: the indexer's seal workers (default: the service's own, one fewer than the cores)
      ...(process.env.BENCH_SEAL_WORKERS ? { LETHE_SEAL_WORKERS: process.env.BENCH_SEAL_WORKERS } : {}),
    });
    const servicePid = server.child.pid;
    // the service's warnings and errors (JSON log lines at level >= 40), counted and the first few kept
    const serviceWarnings = new Map<string, number>();
    let partial = '';
    server.child.stderr?.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString('utf8')).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        try {
          const entry = JSON.parse(line) as { level?: number; msg?: string; err?: { message?: string } };
          if ((entry.level ?? 0) >= 40) {
            const what = `${entry.msg ?? '?'}${entry.err?.message ? `: ${entry.err.message}` : ''}`.slice(0, 200);
            serviceWarnings.set(what, (serviceWarnings.get(what) ?? 0) + 1);
          }
        } catch {
          // not a JSON log line
        }
      }
    });
    const base = `http://127.0.0.1:${server.port}`;
    const store = new S3ObjectStore({ endpoint: minio.endpoint, accessKey: minio.accessKey, secretKey: minio.secretKey, bucket });
    writer = new LetheWriter({ baseUrl: base, token: writerToken, store, segmentMaxBytes, segmentMaxAgeMs, reserveBlock });
    const w = writer;
    poller = new MetricsPoller(base, 100);
    poller.start();

    // ------------------------------------------------------------ 1. writer
    progress(`append: writer warm-up, one entry per subject (${subjects})`);
    let keyIdLength = 0;
    const warm = await drive(subjects, concurrency, servicePid, async (i) => {
      // unmeasured: a connection the loaded machine reset is tried again
      for (let attempt = 1; ; attempt++) {
        try {
          const r = await w.append(subjectNames[i]!, { text: warmTexts[i]! });
          keyIdLength = Buffer.byteLength(r.keyId);
          return;
        } catch (e) {
          if (attempt >= 3 || !/unreachable/.test((e as Error).message)) throw e;
        }
      }
    });
    if (warm.errors > 0) {
      const exited = server.child.exitCode !== null || server.child.signalCode !== null;
      throw new Error(
        `writer warm-up: ${warm.errors} appends failed, first: ${warm.firstError}${exited ? `; the service exited:\n${server.stderrTail.join('\n')}` : ''}`,
      );
    }
    const segsBefore = new Set((await listAll(store, 'log/')).map((o) => o.key));
    // the warm-up's entries indexed before the measured phase
    if (indexing) await waitForQueue(poller, byMode({ quick: 10_000, normal: 10_000, full: 60_000 }));

    progress(
      `append: writer, ${fmtInt(entries)} entries x ${ENTRY_BYTES} B, ${concurrency} in flight (service in its own process; search lag read every 100 ms)`,
    );
    const delayBefore = bucketsOf(await (await fetch(`${base}/metrics`)).text(), 'lethe_search_index_delay_seconds');
    poller.recording = true;
    const prober = new VisibilityProber(base, writerToken);
    const writerRun = await drive(entries, concurrency, servicePid, async (i) => {
      const { entryId } = await w.append(subjectNames[i % subjects]!, { text: texts[i]! });
      if (indexing && i % VISIBLE_EVERY === 0) prober.probe(subjectNames[i % subjects]!, entryId, markerOf(i), performance.now());
    });
    poller.recording = false;
    const visibility = await prober.settle();
    const queuedAtEnd = poller.last?.queued ?? NaN;
    const drain0 = performance.now();
    const drained = indexing && (await waitForQueue(poller, drainWaitMs));
    const drainSeconds = (performance.now() - drain0) / 1000;
    const queuedAfterWait = poller.last?.queued ?? NaN;
    // the last batch's delays are observed as it is published, just after its queue rows went: let them land
    let delayAfter = bucketsOf(await (await fetch(`${base}/metrics`)).text(), 'lethe_search_index_delay_seconds');
    for (let i = 0; drained && i < 20; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const again = bucketsOf(await (await fetch(`${base}/metrics`)).text(), 'lethe_search_index_delay_seconds');
      const settled = (again.at(-1)?.count ?? 0) === (delayAfter.at(-1)?.count ?? 0);
      delayAfter = again;
      if (settled) break;
    }
    const logObjects = await listAll(store, 'log/');
    const timedSegments = logObjects.filter((o) => !segsBefore.has(o.key));
    const writerPhase = phase(
      'LetheWriter.append (lease, seal, upload, register)',
      writerRun,
      entries,
      timedSegments.length,
      timedSegments.reduce((n, o) => n + o.size, 0),
    );
    if (writerRun.errors > 0) warnings.push(`writer: ${writerRun.errors} appends failed, first: ${writerRun.firstError}`);
    await w.close();
    writer = undefined;
    const lagSorted = Float64Array.from(poller.lags).sort();
    const perEntry50 = bucketPercentile(delayBefore, delayAfter, 50);
    const perEntry99 = bucketPercentile(delayBefore, delayAfter, 99);
    const lag: SearchLag = {
      samples: lagSorted.length,
      p50: percentile(lagSorted, 50),
      p99: percentile(lagSorted, 99),
      max: lagSorted[lagSorted.length - 1] ?? NaN,
      queuedAtEnd,
      drainSeconds,
      queuedAfterWait,
      drainedPerSec: drained ? queuedAtEnd / drainSeconds : (queuedAtEnd - queuedAfterWait) / drainSeconds,
      perEntry: { count: perEntry99.count, p50: perEntry50.value, p99: perEntry99.value },
    };
    if (lag.samples < 5) warnings.push(`only ${lag.samples} search lag samples during the writer phase`);
    if (indexing && visibility.probes < 10) warnings.push(`only ${visibility.probes} entries searched for during the writer phase`);
    if (visibility.errors > 0) warnings.push(`${visibility.errors} searches for marked entries failed`);
    if (!indexing) warnings.push('BENCH_APPEND_INDEXER=false: the service did not index; the search lag is not a figure');
    else if (!drained) {
      // not a failure of the run: the figures say how far behind the indexer was, and how fast it caught up
      warnings.push(`${fmtInt(queuedAfterWait)} entries still queued ${fmtNum(drainSeconds, 1)} s after the last append (the section waits that long)`);
    } else if (perEntry99.count < entries - writerRun.errors) {
      warnings.push(`the delay histogram counted ${perEntry99.count} entries, ${entries - writerRun.errors} were appended`);
    }

    // ---------------------------------------------------------- 2. baseline
    progress(`append: baseline warm-up (plain put, same batching), ${subjects} entries`);
    const warmBatcher = new PlainBatcher(store, 'bench-plain/warm', segmentMaxBytes, segmentMaxAgeMs);
    const warmPlain = await drive(subjects, concurrency, servicePid, (i) => warmBatcher.add(warmTexts[i]!));
    if (warmPlain.errors > 0) throw new Error(`baseline warm-up: ${warmPlain.errors} puts failed, first: ${warmPlain.firstError}`);
    progress(`append: baseline, ${fmtInt(entries)} entries, ${concurrency} in flight`);
    const batcher = new PlainBatcher(store, 'bench-plain/run', segmentMaxBytes, segmentMaxAgeMs);
    const plainRun = await drive(entries, concurrency, servicePid, (i) => batcher.add(texts[i]!));
    const baselinePhase = phase('plain store.put, same batching (baseline)', plainRun, entries, batcher.segments, batcher.bytes);
    if (plainRun.errors > 0) warnings.push(`baseline: ${plainRun.errors} puts failed, first: ${plainRun.firstError}`);
    await poller.stop();
    poller = undefined;

    // -------------------------------------------------------------- 3. read
    const expected = new Map<string, string[]>();
    for (let i = 0; i < subjects; i++) expected.set(subjectNames[i]!, [warmTexts[i]!]);
    for (let i = 0; i < entries; i++) expected.get(subjectNames[i % subjects]!)!.push(texts[i]!);
    const auth = { authorization: `Bearer ${writerToken}` };
    const readOne = async (subject: string): Promise<{ ok: boolean; entries: number; match: boolean }> => {
      const res = await fetch(`${base}/v1/subjects/${encodeURIComponent(subject)}/entries`, { headers: auth });
      if (res.status !== 200) {
        await res.arrayBuffer();
        return { ok: false, entries: 0, match: false };
      }
      const body = (await res.json()) as { entries: Array<{ text: string }> };
      const got = body.entries.map((e) => e.text).sort();
      const want = [...expected.get(subject)!].sort();
      return { ok: true, entries: got.length, match: got.length === want.length && got.every((t, k) => t === want[k]) };
    };
    const warmReads = Math.min(10, readSubjects);
    progress(`append: read warm-up, ${warmReads} subjects`);
    await pool(warmReads, readConcurrency, async (i) => void (await readOne(subjectNames[subjects - 1 - i]!)));
    progress(`append: GET /v1/subjects/{s}/entries over ${readSubjects} subjects, ${readConcurrency} in flight`);
    let readEntries = 0;
    let readErrors = 0;
    let mismatches = 0;
    const readLat = new Float64Array(readSubjects);
    const readCpu0 = process.cpuUsage();
    const readService0 = processCpu(servicePid);
    const r0 = performance.now();
    await pool(readSubjects, readConcurrency, async (i) => {
      const s = performance.now();
      try {
        const r = await readOne(subjectNames[i]!);
        if (!r.ok) readErrors++;
        else if (!r.match) mismatches++;
        readEntries += r.entries;
      } catch {
        readErrors++;
      }
      readLat[i] = performance.now() - s;
    });
    const readSeconds = (performance.now() - r0) / 1000;
    const readCpu = cpuSeconds(readCpu0);
    const readServiceCpu = processCpu(servicePid) - readService0;
    if (readErrors > 0) warnings.push(`read: ${readErrors} requests failed`);
    if (mismatches > 0) warnings.push(`read: ${mismatches} subjects returned texts that differ from what was appended`);

    // ------------------------------------------------------------- 4. bytes
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    let frames: number;
    let indexedSegments: number;
    let embedded: number;
    let fetchedBytes = 0;
    let subjectSegmentPairs = 0;
    try {
      const [row] = await sql<{ frames: number; segments: number; embedded: number }[]>`
        select count(*)::int as frames, count(distinct segment)::int as segments,
               (select count(*)::int from embeddings) as embedded from log_entries`;
      frames = row?.frames ?? 0;
      indexedSegments = row?.segments ?? 0;
      embedded = row?.embedded ?? 0;
      // what one read of a subject fetches: a ranged GET of each of its frames
      // (length prefix + frame), one per frame, from the segments holding them
      const pairs = await sql<{ segment: string; n: number; bytes: number }[]>`
        select segment, count(distinct subject_hash)::int as n, sum(frame_length + 4)::int as bytes
          from log_entries group by segment`;
      for (const p of pairs) {
        subjectSegmentPairs += p.n;
        fetchedBytes += p.bytes;
      }
    } finally {
      await sql.end({ timeout: 5 });
    }
    const storedBytes = logObjects.reduce((n, o) => n + o.size, 0);
    const expectedFrames = subjects + entries - writerRun.errors;
    if (frames !== expectedFrames) warnings.push(`log_entries holds ${frames} frames, expected ${expectedFrames}`);
    if (indexing && queuedAfterWait === 0 && embedded !== frames)
      warnings.push(`${embedded} embeddings for ${frames} entries: not every entry became searchable`);
    if (indexedSegments !== logObjects.length) warnings.push(`${logObjects.length} objects under log/, ${indexedSegments} segments indexed`);
    const textBytes = frames * ENTRY_BYTES;
    const parts = { header: ENVELOPE_FIXED_HEADER, keyId: keyIdLength, nonce: NONCE_LENGTH, commitment: COMMITMENT_LENGTH, tag: TAG_LENGTH };
    const envelopeFixed = parts.header + parts.keyId + parts.nonce + parts.commitment + parts.tag;
    // cross-check the constants against a real envelope of an empty payload
    const empty = seal({ key: new Uint8Array(32), keyId: 'k'.repeat(keyIdLength), plaintext: new Uint8Array(0), associatedData: new Uint8Array(0) });
    if (empty.length !== envelopeFixed) warnings.push(`envelope of an empty payload is ${empty.length} B, the constants say ${envelopeFixed} B`);
    const payloadJson = JSON.stringify({ text: '', kind: null, metadata: null }).length;
    const segmentHeaderPerFrame = (SEGMENT_HEADER * logObjects.length) / frames;

    for (const [what, n] of [...serviceWarnings].slice(0, 5)) warnings.push(`the service logged ${n} time(s): ${what}`);
    const ratio = writerPhase.entriesPerSec / baselinePhase.entriesPerSec;
    const target = 0.85;
    const aims = [
      aim('appends through the writer ÷ plain uploads of the same bytes', ratio, `>= ${target}`, ratio >= target),
      aim(
        "an entry found by its subject's lexical search, p99 from its acknowledgement during the writer phase ÷ 1 s",
        visibility.p99,
        '< 1',
        visibility.p99 < 1,
      ),
    ];
    return {
      subjects,
      entries,
      entryBytes: ENTRY_BYTES,
      concurrency,
      segmentMaxBytes,
      segmentMaxAgeMs,
      reserveBlock,
      writer: writerPhase,
      baseline: baselinePhase,
      ratio,
      target,
      lag,
      visibility,
      read: {
        subjects: readSubjects,
        concurrency: readConcurrency,
        requests: readSubjects,
        entries: readEntries,
        seconds: readSeconds,
        entriesPerSec: readEntries / readSeconds,
        requestsPerSec: readSubjects / readSeconds,
        latencyMs: latency(readLat),
        errors: readErrors,
        mismatches,
        segmentGetsPerRequest: subjectSegmentPairs / subjects,
        readAmplification: fetchedBytes / textBytes,
        cpuSeconds: readCpu,
        serviceCpuSeconds: readServiceCpu,
      },
      overhead: {
        segments: logObjects.length,
        frames,
        storedBytes,
        textBytes,
        perFrame: (storedBytes - textBytes) / frames,
        keyIdLength,
        envelopeFixed,
        envelopeParts: parts,
        payloadJson,
        lengthPrefix: LENGTH_PREFIX,
        segmentHeaderPerFrame,
        predictedPerFrame: envelopeFixed + payloadJson + LENGTH_PREFIX + segmentHeaderPerFrame,
      },
      aims,
      loadAverage: { start: loadStart, end: loadavg().map((x) => Math.round(x * 100) / 100) },
      valid: warnings.length === 0,
      warnings,
    };
  } finally {
    await cleanup('append', [
      ['metrics poller', async () => poller?.stop()],
      ['writer', async () => writer?.close()],
    ]);
    await scratch?.cleanup();
  }
}

/** Waits until the poller sees the indexing queue empty (at most `timeoutMs`); whether it did. */
async function waitForQueue(poller: MetricsPoller, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  // a fresh sample first: the last one may predate the appends just made
  const seen = poller.last;
  while (performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    if (poller.last !== seen && poller.last?.queued === 0) return true;
  }
  return false;
}

export function formatAppend(r: AppendResult): string {
  const row = (p: AppendPhase) => [
    p.label,
    fmtInt(p.entriesPerSec),
    fmtNum(p.mbPerSec, 2),
    fmtNum(p.seconds, 2),
    fmtInt(p.segments),
    fmtNum(p.entriesPerSegment, 1),
    fmtInt(p.meanSegmentBytes / 1024),
    fmtNum(p.latencyMs.p50, 0),
    fmtNum(p.latencyMs.p99, 0),
    fmtNum(p.cpuSeconds, 1),
    fmtNum(p.serviceCpuSeconds, 1),
    fmtInt(p.errors),
  ];
  const rd = r.read;
  const o = r.overhead;
  const e = o.envelopeParts;
  const l = r.lag;
  const v = r.visibility;
  const lines = [
    `Appends through LetheWriter vs plain store.put with the same batching (baseline); real MinIO, service in a child process; ` +
      `${fmtInt(r.entries)} entries x ${r.entryBytes} B round-robin over ${fmtInt(r.subjects)} subjects, ${r.concurrency} in flight, ` +
      `segments at ${r.segmentMaxBytes / 2 ** 20} MiB or ${r.segmentMaxAgeMs} ms, reserve ${r.reserveBlock}; load average ${r.loadAverage.start.join(' ')} at the start, ${r.loadAverage.end.join(' ')} at the end`,
    table(
      [
        'path',
        'entries/s',
        'MB/s text',
        'seconds',
        'objects',
        'entries/object',
        'KiB/object',
        'p50 ms',
        'p99 ms',
        'CPU s (this process)',
        'CPU s (service)',
        'errors',
      ],
      [row(r.writer), row(r.baseline)],
    ),
    `writer / baseline = ${fmtRatio(r.ratio)} (aim >= ${r.target}: ${r.ratio >= r.target ? 'met' : 'NOT met'})`,
    `an entry found by its subject's lexical search (scoped searches rank queued entries too), from its acknowledgement: ${fmtInt(v.probes)} entries searched for during the writer phase ` +
      `(${fmtInt(v.skipped)} skipped while ${VISIBLE_CONCURRENCY} searches ran), p50 ${fmtNum(v.p50 * 1000, 0)} ms, p99 ${fmtNum(v.p99 * 1000, 0)} ms, max ${fmtNum(v.max * 1000, 0)} ms, ` +
      `${fmtInt(v.notFound)} not found within ${VISIBLE_GIVE_UP_MS / 1000} s (aim p99 < 1 s: ${v.p99 < 1 ? 'met' : 'NOT met'})`,
    `index lag during the writer phase — all-subjects searches and the vectors of the index (lethe_search_lag_seconds, ${fmtInt(l.samples)} samples), reported: p50 ${fmtNum(l.p50, 2)} s, p99 ${fmtNum(l.p99, 2)} s, max ${fmtNum(l.max, 2)} s; ` +
      `${fmtInt(l.queuedAtEnd)} entries queued at the last append, ` +
      (l.queuedAfterWait === 0
        ? `the queue empty ${fmtNum(l.drainSeconds, 1)} s later`
        : `${fmtInt(l.queuedAfterWait)} still queued ${fmtNum(l.drainSeconds, 1)} s later`) +
      ` (the indexer alone: ${fmtInt(l.drainedPerSec)} entries/s); ` +
      `per entry (registration → searchable, histogram bucket bounds, ${fmtInt(l.perEntry.count)} entries): p50 <= ${fmtNum(l.perEntry.p50, 2)} s, p99 <= ${fmtNum(l.perEntry.p99, 2)} s`,
    formatAims(r.aims),
    '',
    `Reads: GET /v1/subjects/{s}/entries, ${fmtInt(rd.subjects)} subjects, ${rd.concurrency} in flight`,
    table(
      ['figure', 'value'],
      [
        ['entries/s read', fmtInt(rd.entriesPerSec)],
        ['requests/s', fmtNum(rd.requestsPerSec, 1)],
        ['entries returned', fmtInt(rd.entries)],
        ['latency p50 / p99 / max ms', `${fmtNum(rd.latencyMs.p50, 0)} / ${fmtNum(rd.latencyMs.p99, 0)} / ${fmtNum(rd.latencyMs.max, 0)}`],
        ['segments read from per request (ranged GETs)', fmtNum(rd.segmentGetsPerRequest, 1)],
        ['bytes fetched / text bytes returned', fmtRatio(rd.readAmplification)],
        ['CPU s (client / service)', `${fmtNum(rd.cpuSeconds, 1)} / ${fmtNum(rd.serviceCpuSeconds, 1)}`],
        ['failed requests / mismatched subjects', `${fmtInt(rd.errors)} / ${fmtInt(rd.mismatches)}`],
      ],
    ),
    '',
    `Bytes per frame: ${fmtInt(o.storedBytes)} B stored under log/ in ${fmtInt(o.segments)} segments for ${fmtInt(o.frames)} frames of ${r.entryBytes} B text`,
    table(
      ['per frame', 'bytes'],
      [
        ['measured: (stored − text) ÷ frames', fmtNum(o.perFrame, 1)],
        [`envelope fixed: header ${e.header} + key id ${e.keyId} + nonce ${e.nonce} + commitment ${e.commitment} + tag ${e.tag}`, fmtInt(o.envelopeFixed)],
        ['payload JSON around the text ({"text":…,"kind":null,"metadata":null})', fmtInt(o.payloadJson)],
        ['segment length prefix', fmtInt(o.lengthPrefix)],
        ['segment header (12 B) ÷ frames per segment', fmtNum(o.segmentHeaderPerFrame, 2)],
        ['predicted total', fmtNum(o.predictedPerFrame, 1)],
      ],
    ),
  ];
  for (const w of r.warnings) lines.push(`WARNING: ${w}`);
  return lines.join('\n');
}

await runIfMain(import.meta.url, runAppend, formatAppend);

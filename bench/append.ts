/**
 * Appends through the writer client against a real MinIO, in one run:
 *
 *   setup     a MinIO server started here (infra/minio-server.ts), a fresh lethe_bench_*
 *             database, the service in this process (startServer, S3 store on a fresh
 *             bucket), an S3ObjectStore on the same bucket for the writer.
 *   1. writer LetheWriter.append of BENCH_APPEND_ENTRIES entries (default 50,000; 2,000
 *             when quick) of 512 bytes of random printable text, round-robin over 1,000
 *             subjects, 256 appends in flight; segments flushed at 1 MiB or 50 ms,
 *             sequence numbers reserved 64 at a time. An unmeasured warm-up first
 *             appends one entry per subject (leases and reservations taken).
 *   2. baseline the same texts, unencrypted, through a plain batcher with the writer's
 *             size/age policy (1 MiB or 50 ms after the first entry; each text with a
 *             4-byte length prefix, as a frame), `store.put` to the same bucket, the
 *             same 256 entries in flight; an entry resolves when its object is stored.
 *             No lease, no sealing, no registration. Same unmeasured warm-up.
 *   3. read   GET /v1/subjects/{subject}/entries for every subject through the HTTP
 *             service (fetch, 16 requests in flight), every returned text checked
 *             against what was appended; unmeasured warm-up over 100 subjects.
 *   4. bytes  stored segment bytes (a listing of log/ through the store) minus the
 *             entry text bytes, per frame; next to it the overhead the formats predict:
 *             envelope header + key id + nonce + commitment + tag (src/crypto/envelope.ts
 *             constants), the frame payload's JSON wrapping, the segment's 4-byte length
 *             prefix per frame and its 12-byte header per segment.
 *
 * Everything runs in this one process except MinIO and PostgreSQL: the writer and the
 * service share one event loop (the CPU seconds of each phase are reported).
 * Entry text uses printable ASCII without `"` and `\`, so its JSON form is as long
 * as the text. 1 MB = 10^6 bytes.
 */
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { LetheWriter } from '../src/client/index.js';
import { S3ObjectStore } from '../src/client/s3.js';
import { loadConfig } from '../src/config/index.js';
import { COMMITMENT_LENGTH, NONCE_LENGTH, seal, TAG_LENGTH } from '../src/crypto/envelope.js';
import { startServer, type RunningServer } from '../src/app/serve.js';
import { createLogger } from '../src/observability/logger.js';
import type { StoredObject } from '../src/storage/store.js';
import { minioBinary, type MinioServer, startMinio } from '../infra/minio-server.js';
import {
  cleanup,
  cpuSeconds,
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
  runIfMain,
  table,
} from './lib.js';

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
  /** user + system CPU of this process (writer and service together) during the phase. */
  readonly cpuSeconds: number;
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
  readonly read: AppendReadResult;
  readonly overhead: AppendOverhead;
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

/** Runs fn(0..count-1) with at most `limit` in flight, in index order. */
async function pool(count: number, limit: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, count) }, async () => {
      while (next < count) await fn(next++);
    }),
  );
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
      () => batch.forEach((e) => e.resolve()),
      (err: unknown) => batch.forEach((e) => e.reject(err)),
    );
  }
}

interface PhaseRun {
  readonly seconds: number;
  readonly errors: number;
  readonly latencies: Float64Array;
  readonly cpuSeconds: number;
  readonly firstError?: string;
}

/** Runs fn(0..count-1) with `concurrency` in flight; per-call latency, failures counted, CPU of this process. */
async function drive(count: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<PhaseRun> {
  const latencies = new Float64Array(count);
  let errors = 0;
  let firstError: string | undefined;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await pool(count, concurrency, async (i) => {
    const s = performance.now();
    try {
      await fn(i);
    } catch (e) {
      errors++;
      firstError ??= (e as Error).message;
    }
    latencies[i] = performance.now() - s;
  });
  const seconds = (performance.now() - t0) / 1000;
  return { seconds, errors, latencies, cpuSeconds: cpuSeconds(cpu0), ...(firstError ? { firstError } : {}) };
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
  };
}

export async function runAppend(): Promise<AppendResult> {
  const subjects = Number(process.env.BENCH_APPEND_SUBJECTS ?? 1000);
  const entries = Number(process.env.BENCH_APPEND_ENTRIES ?? (QUICK ? 2_000 : 50_000));
  const concurrency = Number(process.env.BENCH_APPEND_CONCURRENCY ?? 256);
  const readConcurrency = 16;
  const segmentMaxBytes = 1024 * 1024;
  const segmentMaxAgeMs = 50;
  const reserveBlock = 64;
  const writerToken = `writer-${randomBytes(18).toString('base64url')}`;
  const bucket = `lethe-bench-${randomBytes(4).toString('hex')}`;
  const warnings: string[] = [];

  const subjectNames = Array.from({ length: subjects }, (_, i) => subjectName(i));
  const warmTexts = randomTexts(subjects);
  const texts = randomTexts(entries);

  let minio: MinioServer | undefined;
  let db: { name: string; url: string } | undefined;
  let dataDir: string | undefined;
  let server: RunningServer | undefined;
  let writer: LetheWriter | undefined;
  try {
    progress('append: starting MinIO');
    minio = await startMinio(minioBinary());
    db = await createScratchDatabase('append');
    dataDir = await makeTempDir('append');
    progress(`append: starting the service in-process on ${db.name}, bucket ${bucket} at ${minio.endpoint}`);
    server = await startServer(
      loadConfig({
        DATABASE_URL: db.url,
        LETHE_DATA_DIR: dataDir,
        LETHE_ROOT_KEY: randomRootKey(),
        LETHE_TOKENS: `writer=${writerToken}`,
        PORT: '0',
        HOST: '127.0.0.1',
        LETHE_LOG_LEVEL: 'warn',
        S3_ENDPOINT: minio.endpoint,
        S3_ACCESS_KEY: minio.accessKey,
        S3_SECRET_KEY: minio.secretKey,
        S3_BUCKET: bucket,
        S3_BACKUP_BUCKET: `${bucket}-bak`,
      }),
      // stdout carries the tables
      createLogger('warn', process.stderr),
    );
    const base = `http://127.0.0.1:${server.port}`;
    const store = new S3ObjectStore({ endpoint: minio.endpoint, accessKey: minio.accessKey, secretKey: minio.secretKey, bucket });
    writer = new LetheWriter({ baseUrl: base, token: writerToken, store, segmentMaxBytes, segmentMaxAgeMs, reserveBlock });
    const w = writer;

    // ------------------------------------------------------------ 1. writer
    progress(`append: writer warm-up, one entry per subject (${subjects})`);
    let keyIdLength = 0;
    const warm = await drive(subjects, concurrency, async (i) => {
      const r = await w.append(subjectNames[i]!, { text: warmTexts[i]! });
      keyIdLength = Buffer.byteLength(r.keyId);
    });
    if (warm.errors > 0) throw new Error(`writer warm-up: ${warm.errors} appends failed, first: ${warm.firstError}`);
    const segsBefore = new Set((await listAll(store, 'log/')).map((o) => o.key));

    progress(`append: writer, ${fmtInt(entries)} entries x ${ENTRY_BYTES} B, ${concurrency} in flight`);
    const writerRun = await drive(entries, concurrency, async (i) => {
      await w.append(subjectNames[i % subjects]!, { text: texts[i]! });
    });
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

    // ---------------------------------------------------------- 2. baseline
    progress(`append: baseline warm-up (plain put, same batching), ${subjects} entries`);
    const warmBatcher = new PlainBatcher(store, 'bench-plain/warm', segmentMaxBytes, segmentMaxAgeMs);
    const warmPlain = await drive(subjects, concurrency, (i) => warmBatcher.add(warmTexts[i]!));
    if (warmPlain.errors > 0) throw new Error(`baseline warm-up: ${warmPlain.errors} puts failed, first: ${warmPlain.firstError}`);
    progress(`append: baseline, ${fmtInt(entries)} entries, ${concurrency} in flight`);
    const batcher = new PlainBatcher(store, 'bench-plain/run', segmentMaxBytes, segmentMaxAgeMs);
    const plainRun = await drive(entries, concurrency, (i) => batcher.add(texts[i]!));
    const baselinePhase = phase('plain store.put, same batching (baseline)', plainRun, entries, batcher.segments, batcher.bytes);
    if (plainRun.errors > 0) warnings.push(`baseline: ${plainRun.errors} puts failed, first: ${plainRun.firstError}`);

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
    const warmReads = Math.min(100, subjects);
    progress(`append: read warm-up, ${warmReads} subjects`);
    await pool(warmReads, readConcurrency, async (i) => void (await readOne(subjectNames[i]!)));
    progress(`append: GET /v1/subjects/{s}/entries over ${subjects} subjects, ${readConcurrency} in flight`);
    let readEntries = 0;
    let readErrors = 0;
    let mismatches = 0;
    const readLat = new Float64Array(subjects);
    const readCpu0 = process.cpuUsage();
    const r0 = performance.now();
    await pool(subjects, readConcurrency, async (i) => {
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
    if (readErrors > 0) warnings.push(`read: ${readErrors} requests failed`);
    if (mismatches > 0) warnings.push(`read: ${mismatches} subjects returned texts that differ from what was appended`);

    // ------------------------------------------------------------- 4. bytes
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    let frames: number;
    let indexedSegments: number;
    let fetchedBytes = 0;
    let subjectSegmentPairs = 0;
    try {
      const [row] = await sql<{ frames: number; segments: number }[]>`
        select count(*)::int as frames, count(distinct segment)::int as segments from log_entries`;
      frames = row?.frames ?? 0;
      indexedSegments = row?.segments ?? 0;
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
    if (indexedSegments !== logObjects.length) warnings.push(`${logObjects.length} objects under log/, ${indexedSegments} segments indexed`);
    const textBytes = frames * ENTRY_BYTES;
    const parts = { header: ENVELOPE_FIXED_HEADER, keyId: keyIdLength, nonce: NONCE_LENGTH, commitment: COMMITMENT_LENGTH, tag: TAG_LENGTH };
    const envelopeFixed = parts.header + parts.keyId + parts.nonce + parts.commitment + parts.tag;
    // cross-check the constants against a real envelope of an empty payload
    const empty = seal({ key: new Uint8Array(32), keyId: 'k'.repeat(keyIdLength), plaintext: new Uint8Array(0), associatedData: new Uint8Array(0) });
    if (empty.length !== envelopeFixed) warnings.push(`envelope of an empty payload is ${empty.length} B, the constants say ${envelopeFixed} B`);
    const payloadJson = JSON.stringify({ text: '', kind: null, metadata: null }).length;
    const segmentHeaderPerFrame = (SEGMENT_HEADER * logObjects.length) / frames;

    const ratio = writerPhase.entriesPerSec / baselinePhase.entriesPerSec;
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
      target: 0.8,
      read: {
        subjects,
        concurrency: readConcurrency,
        requests: subjects,
        entries: readEntries,
        seconds: readSeconds,
        entriesPerSec: readEntries / readSeconds,
        requestsPerSec: subjects / readSeconds,
        latencyMs: latency(readLat),
        errors: readErrors,
        mismatches,
        segmentGetsPerRequest: subjectSegmentPairs / subjects,
        readAmplification: fetchedBytes / textBytes,
        cpuSeconds: readCpu,
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
      valid: warnings.length === 0,
      warnings,
    };
  } finally {
    await cleanup('append', [
      ['writer', async () => writer?.close()],
      ['service', async () => server?.close()],
      ['database', async () => db && dropScratchDatabase(db.name)],
      ['MinIO', async () => minio?.stop()],
      ['data dir', async () => dataDir && removeDir(dataDir)],
    ]);
  }
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
    fmtInt(p.errors),
  ];
  const rd = r.read;
  const o = r.overhead;
  const e = o.envelopeParts;
  const lines = [
    `Appends through LetheWriter vs plain store.put with the same batching (baseline); real MinIO, service in-process; ` +
      `${fmtInt(r.entries)} entries x ${r.entryBytes} B round-robin over ${fmtInt(r.subjects)} subjects, ${r.concurrency} in flight, ` +
      `segments at ${r.segmentMaxBytes / 2 ** 20} MiB or ${r.segmentMaxAgeMs} ms, reserve ${r.reserveBlock}`,
    table(
      ['path', 'entries/s', 'MB/s text', 'seconds', 'objects', 'entries/object', 'KiB/object', 'p50 ms', 'p99 ms', 'CPU s', 'errors'],
      [row(r.writer), row(r.baseline)],
    ),
    `writer / baseline = ${fmtRatio(r.ratio)} (target >= ${r.target}: ${r.ratio >= r.target ? 'met' : 'NOT met'})`,
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
        ['CPU s (service + client)', fmtNum(rd.cpuSeconds, 1)],
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

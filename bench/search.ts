/**
 * Search: the in-memory vector index — an HNSW graph (usearch, over the vectors' signs) whose
 * candidates are ranked by their exact scores — at store scale: how fast it answers,
 * how often it finds the exact ten nearest (recall@10 against brute force over the same
 * vectors), what it costs in memory, what a key's destruction costs it, and how fast it
 * is rebuilt from the sealed embeddings at start-up (worker threads opening the rows).
 * The default embedder throughout: HashingEmbedder, 512 dimensions. Needs
 * `node --expose-gc` (run.ts passes it).
 *
 *   1. corpus   N memory-like notes (BENCH_SEARCH_VECTORS: default 100,000; 1,000,000 with
 *               BENCH_FULL=1; 20,000 when quick) from a seeded generator: the templates of
 *               `sentences` (who did what, where, and a follow-up) with two named people
 *               drawn (Zipf, s = 1) from 30,000 generated names, ~200 characters each;
 *               embedded by the HashingEmbedder and kept as the index will hold them (int8
 *               and one scale per vector: the sealed form).
 *   2. build    in a process of its own (bench/search-index.ts: the corpus handed over in a
 *               file, so the process holds little else), VectorIndex.upsertMany in batches
 *               of 1,000 (the graph's insertions on GRAPH_THREADS threads); ids 'entry_' +
 *               22 characters and one key id per 20 records, made inside the measurement
 *               (the index holds them). Steps 3 and 4 run there too. Figures:
 *               vectors/s, and memory per vector, after forced garbage collections before
 *               and after the build: the JS side (heapUsed + arrayBuffers delta: the int8
 *               vectors, ids, maps, key filing) plus the native side (usearch allocates
 *               outside the JS heap: RSS delta − heapTotal delta − arrayBuffers delta). On
 *               this machine the native delta reads below what usearch must hold (the
 *               allocator hands it memory the process freed before), so the figure takes
 *               the larger of it and usearch's floor — the sign code (2 bits a dimension,
 *               in 8-byte words), the key and the bottom layer's 2·M links — and reports
 *               both.
 *   3. query    BENCH_SEARCH_QUERIES (default 200; 60 when quick) queries after 5 unmeasured:
 *               half a stored vector moved a little (40 of its 512 dimensions nudged by up to
 *               ±0.1, renormalised), half a new note through the HashingEmbedder, each timed
 *               as index.search(q, 10) and then against the baseline, a brute-force pass
 *               over all N int8 vectors with the index's own exact score. recall@10 = the
 *               hits at or above the brute force's tenth score (ties count), ÷ 10.
 *   4. delete   removeKey for 1% of the keys (about 1% of the vectors), timed, then the
 *               scrub of their graph slots (their native copies overwritten), timed; then
 *               each of 100 removed vectors as a query (none may come back) and 100 new
 *               notes' recall@10 against brute force over what is left.
 *   5. embed    the embedder and the sealed form on 1,000 `sentences`: embedOne,
 *               sealEmbedding + openEmbedding, and node:crypto AES-256-GCM of the same bytes
 *               (baseline), 3 interleaved rounds.
 *   6. rebuild  a fresh lethe_bench_* database, the vault opened on it (no listener): 100
 *               subjects get one entry each through vault.log.append, and the rest of R
 *               sealed embeddings (BENCH_SEARCH_REBUILD: default 10,000; 2,000 when quick;
 *               50,000 with BENCH_FULL=1) are embedded from notes, sealed under the
 *               subjects' keys and inserted. Then in interleaved rounds
 *               (BENCH_SEARCH_REBUILD_RUNS, default 1; 3 with BENCH_FULL=1): vault.vectors.rebuild()
 *               as it runs at start-up (worker threads: one per core) and with { workers: 0 }
 *               (the rows opened on the calling thread), each followed by the wait for its
 *               graph (built in the background once the rebuild has swapped the index in),
 *               and a plain select of the rows. Then opening in steady state: 5,120 sealed
 *               rows in batches of 256, on this (warm) thread and on one warm worker per
 *               core, and the workers' start and warm-up on their own (under tsx each
 *               worker compiles its modules first; the rebuild opens rows on its own thread
 *               until they are warm, so at 10,000 rows they take few). Figures: vectors/s
 *               of each; workers ÷ one thread; the graph's seconds after the rebuild; and
 *               the projections to a million vectors: searchable = the one-thread
 *               rebuild's seconds per vector at R with its opening replaced by the warm
 *               workers'; graph built = that plus step 2's graph seconds per vector at N.
 *
 * Aims (issue 17, at 1M vectors: run with BENCH_FULL=1): search p50 ≤ 10 ms, recall@10
 * ≥ 0.95, memory ≤ 1.2 KB (1,200 B) per vector, rebuild ≤ 30 s per million vectors.
 * Steps 2-4 run in a child process (bench/search-index.ts), the rest in this one;
 * PostgreSQL is on the same machine.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { closeSync, openSync, readSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sql as dsql } from 'drizzle-orm';
import { encodeContext } from '../src/crypto/index.js';
import { queryRows } from '../src/db/client.js';
import { HashingEmbedder } from '../src/vectors/embedder.js';
import { BuiltInEmbedder } from '../src/vectors/builtin-embedder.js';
import { type EmbeddingPlace, openEmbedding, quantise, type SealedEmbedding, sealEmbedding, storedForm, upsertEmbeddings } from '../src/vectors/embeddings.js';
import { DEFAULT_CONNECTIVITY, GRAPH_THREADS } from '../src/vectors/hnsw.js';
import { BatchBuilder } from '../src/vectors/open-batch.js';
import { type Opener, openers } from '../src/vectors/open-pool.js';
import { DEFAULT_CANDIDATES, VectorIndex } from '../src/vectors/vector-index.js';
import { newId } from '../src/ids.js';
import { mulberry32 as prng, seededId } from '../fixtures/prng.js';
import { BENCH_DIR, byMode, envInt, QUICK } from './support/mode.js';
import { type ScratchVault, scratchVault } from './support/scratch.js';
import { gcNow, runChild, sleep, runIfMain } from './support/process.js';
import {
  type Aim,
  aim,
  aimVerdict,
  fmtInt,
  fmtNum,
  formatAims,
  fmtRatio,
  fmtSeconds,
  type LatencyStats,
  median,
  progress,
  stats,
  table,
} from './support/report.js';

// ------------------------------------------------------------------ result types

export interface MemoryFigures {
  readonly rssDelta: number;
  readonly heapUsedDelta: number;
  readonly heapTotalDelta: number;
  readonly arrayBuffersDelta: number;
  /** rssDelta − (heapTotalDelta − heapUsedDelta): the index's memory, native and JS, as the RSS reads it. */
  readonly deltaBytes: number;
  /** jsBytesPerVector + nativeBytesPerVector: the figure the aim is measured on. */
  readonly bytesPerVector: number;
  /** heapUsedDelta + arrayBuffersDelta, per vector: the JS side (int8 vectors, ids, maps, key filing). */
  readonly jsBytesPerVector: number;
  /** usearch's graph and its sign codes: the measured figure, or the floor when the RSS reads below it. */
  readonly nativeBytesPerVector: number;
  /** rssDelta − heapTotalDelta − arrayBuffersDelta, per vector (the allocator reusing memory freed before the build makes it read low). */
  readonly measuredNativeBytesPerVector: number;
  /** usearch's least per vector: the sign code, the key, the bottom layer's 2·M links. */
  readonly nativeFloorBytesPerVector: number;
  readonly gibPerMillion: number;
  /** The same over the second half of the build alone (halfway to the end): what each further vector costs. */
  readonly secondHalf: { readonly vectors: number; readonly bytesPerVector: number; readonly jsBytesPerVector: number } | null;
}

export interface Recall {
  readonly queries: number;
  readonly recall: number;
}

/** The store as the index holds it: int8 vectors and their scales. */
export interface Corpus {
  readonly n: number;
  readonly d: number;
  readonly q: Int8Array;
  readonly scales: Float32Array;
  readonly meanNonZero: number;
  readonly seconds: number;
}

export interface IndexRun {
  readonly vectors: number;
  readonly keys: number;
  readonly dimensions: number;
  readonly meanNonZero: number;
  readonly corpusSeconds: number;
  readonly buildSeconds: number;
  readonly buildPerSec: number;
  /** Seconds the build took to reach `at` vectors (the rebuild's size), for the projection. */
  readonly buildUpTo: { readonly at: number; readonly seconds: number };
  readonly memory: MemoryFigures;
  readonly queries: { readonly perturbed: number; readonly texts: number };
  readonly index: LatencyStats;
  readonly bruteForce: LatencyStats;
  /** index median ÷ brute-force median. */
  readonly ratio: number;
  readonly recall: { readonly all: Recall; readonly perturbed: Recall; readonly texts: Recall };
  readonly deletion: {
    readonly keys: number;
    readonly vectors: number;
    readonly seconds: number;
    readonly microsPerVector: number;
    readonly scrubSeconds: number;
    readonly scrubMicrosPerVector: number;
    /** Removed records any search answered afterwards (must be 0). */
    readonly returned: number;
    readonly recallAfter: Recall;
  };
}

export interface Rate {
  readonly ops: number;
  readonly seconds: number;
  readonly perSec: number;
}

export interface EmbedRun {
  readonly texts: number;
  readonly meanChars: number;
  readonly meanNonZero: number;
  readonly rounds: number;
  readonly embed: Rate;
  /** The built-in embedder (word vectors beside the hashed features), the one lethe serves with. */
  readonly builtInEmbed: Rate;
  readonly builtInModel: string;
  readonly sealOpen: Rate;
  /** AES-256-GCM encrypt + decrypt of the 2,048 float32 bytes: the baseline. */
  readonly aesGcm: Rate;
  /** AES-256-GCM of 517 bytes: the quantised plaintext's size (reference). */
  readonly aesGcmQuantisedSize: Rate;
  readonly quantisedPlaintextBytes: number;
  readonly embedRatio: number;
  readonly sealOpenRatio: number;
  readonly sealedBytes: number;
  readonly roundTripsOk: boolean;
}

export interface Timing {
  readonly medianSeconds: number;
  readonly minSeconds: number;
  readonly maxSeconds: number;
  readonly perSec: number;
}

export interface RebuildRun {
  readonly records: number;
  readonly subjects: number;
  readonly setupSeconds: number;
  readonly runs: number;
  readonly workers: number;
  readonly parallel: Timing;
  readonly single: Timing;
  readonly select: Timing;
  /** Seconds from starting the workers to all of them warm (under tsx each worker compiles its modules first). */
  readonly workerStartSeconds: number;
  /** Steady state, rows opened per second: on this (warm) thread, and on the warm workers. */
  readonly opening: { readonly rows: number; readonly local: number; readonly workers: number };
  /** Seconds from the rebuild's end (searchable) to its graph built in the background (median, after the parallel rebuilds). */
  readonly graphAfter: Timing;
  /** parallel vectors/s ÷ single-thread vectors/s. */
  readonly ratio: number;
  readonly loadedEveryRun: boolean;
  /** Seconds per million vectors until searchable: the parallel rebuild's seconds per vector at R, less the workers' start. */
  readonly projectedSecondsPerMillion: number;
  /** Seconds per million vectors until the graph is built too: the above, plus the graph's build seconds per vector at N (step 2). */
  readonly projectedGraphSecondsPerMillion: number;
  readonly projectedAt: number;
}

export interface SearchResult {
  readonly dimensions: number;
  readonly model: string;
  readonly graph: { readonly threads: number; readonly candidates: number; readonly cores: number };
  readonly index: IndexRun;
  readonly embedding: EmbedRun;
  readonly rebuild: RebuildRun;
  readonly loadAvg: readonly number[];
  readonly aims: Aim[];
  readonly valid: boolean;
  readonly warnings: string[];
}

// ------------------------------------------------------------------ helpers

/** Fills `out` (zeroed) with a unit vector of ~`nonZero` random non-zero dimensions. */
export function randomSparseUnit(out: Float32Array, nonZero: number, rand: () => number): void {
  const d = out.length;
  for (let j = 0; j < nonZero; j++) out[(rand() * d) | 0]! += (rand() < 0.5 ? -1 : 1) * (0.4 + rand() * 1.6);
  let norm = 0;
  for (let i = 0; i < d; i++) norm += out[i]! * out[i]!;
  norm = Math.sqrt(norm);
  for (let i = 0; i < d; i++) out[i]! /= norm;
}

// ------------------------------------------------------------------ texts

const SUBJECTS = [
  'The patient',
  'My sister',
  'The customer',
  'Our landlord',
  'The new manager',
  'A neighbour',
  'The accountant',
  'His doctor',
  'The school nurse',
  'Her lawyer',
  'The delivery driver',
  'My grandfather',
  'The support agent',
  'Their daughter',
  'The insurance adjuster',
  'Our team lead',
];
const VERBS = [
  'reported',
  'mentioned',
  'complained about',
  'asked about',
  'confirmed',
  'cancelled',
  'rescheduled',
  'described',
  'disputed',
  'requested',
  'forgot about',
  'paid for',
  'worried about',
  'signed up for',
  'moved away from',
  'recovered from',
  'applied for',
  'returned',
];
const OBJECTS = [
  'mild headaches after the new medication',
  'the overdue invoice from last spring',
  'a broken dishwasher in the rented flat',
  'the annual blood test results',
  'a refund for the damaged parcel',
  'the mortgage application',
  'persistent back pain while running',
  'the car insurance renewal',
  'a visa appointment in Lisbon',
  'the allergy to penicillin',
  'the gym membership contract',
  'a leaking roof above the kitchen',
  'the tax return for the previous year',
  'a sleeping problem since the surgery',
  'the missing passport',
  'a school trip to the mountains',
  'the blood pressure readings',
  'a late salary payment',
];
const PLACES = [
  'in March',
  'on Tuesday morning',
  'before the holidays',
  'during the video call',
  'at the clinic in Porto',
  'over the phone',
  'last weekend',
  'while travelling to Berlin',
  'at the branch office',
  'after the school meeting',
  'in the waiting room',
  'by email yesterday',
];
const FOLLOWUPS = [
  'and asked whether the dosage could be reduced',
  'but nobody has answered the letter yet',
  'so the follow-up appointment was moved to next week',
  'and wants a written confirmation before Friday',
  'although the earlier report said otherwise',
  'and the family is considering a second opinion',
  'because the previous agreement had expired',
  'and expects the matter to be settled within a month',
  'so the deposit will probably be withheld',
  'and promised to bring the missing documents',
  'which explains the delay in the payment',
  'and is now looking for a cheaper alternative',
];

/** ~200-character English sentences, deterministic. */
export function sentences(n: number, seed: number): string[] {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]) => xs[(rand() * xs.length) | 0]!;
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    let s = `${pick(SUBJECTS)} ${pick(VERBS)} ${pick(OBJECTS)} ${pick(PLACES)}, ${pick(FOLLOWUPS)}`;
    while (s.length < 190) s += `; ${pick(SUBJECTS).toLowerCase()} ${pick(VERBS)} ${pick(OBJECTS)} ${pick(PLACES)}`;
    if (s.length > 210) s = s.slice(0, s.lastIndexOf(' ', 205));
    out.push(`${s}.`);
  }
  return out;
}

/** Pronounceable generated names (the same list for every seed: queries and the store share them). */
const NAMES: readonly string[] = (() => {
  const rand = prng(0x1e7e);
  const syllables = [
    'ka',
    'lo',
    'mi',
    'ne',
    'ru',
    'ta',
    'vo',
    'shi',
    'pe',
    'da',
    'gri',
    'bel',
    'mon',
    'tor',
    'san',
    'vek',
    'lu',
    'fa',
    'zo',
    'ar',
    'en',
    'is',
    'ol',
    'um',
  ];
  const out = new Set<string>();
  while (out.size < 30_000) {
    let w = '';
    for (let j = 2 + ((rand() * 3) | 0); j > 0; j--) w += syllables[(rand() * syllables.length) | 0];
    out.add(w[0]!.toUpperCase() + w.slice(1));
  }
  return [...out];
})();

/** A Zipf(s) sampler over ranks 0..n-1. */
function zipf(n: number, s: number, rand: () => number): () => number {
  const cdf = new Float64Array(n);
  let total = 0;
  for (let i = 0; i < n; i++) cdf[i] = total += 1 / (i + 1) ** s;
  for (let i = 0; i < n; i++) cdf[i]! /= total;
  return () => {
    const u = rand();
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

/**
 * ~200-character memory-like notes, deterministic: `sentences`' templates with two
 * named people (Zipf over NAMES), so notes cluster by what they say and stay apart by
 * whom they name.
 */
export function memoryNotes(n: number, seed: number): string[] {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]) => xs[(rand() * xs.length) | 0]!;
  const name = zipf(NAMES.length, 1, rand);
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    let s = `${pick(SUBJECTS)} ${pick(VERBS)} ${pick(OBJECTS)} ${pick(PLACES)} with ${NAMES[name()]} and ${NAMES[name()]}, ${pick(FOLLOWUPS)}`;
    if (s.length < 180) s += `; ${NAMES[name()]} ${pick(VERBS)} ${pick(OBJECTS)}`;
    if (s.length > 220) s = s.slice(0, s.lastIndexOf(' ', 215));
    out.push(`${s}.`);
  }
  return out;
}

// ------------------------------------------------------------------ 1-4. corpus, build, queries, deletion

const DIMENSIONS = 512;
const RECORDS_PER_KEY = 20;
const BUILD_BATCH = 1_000;
const QUERY_WARMUPS = 5;
/** Rows of the steady-state opening measurement (step 6). */
const OPEN_ROWS = 5_120;
const K = 10;
/** Scores the bench recomputes may differ from the index's in the last bits of the scale. */
const TIE = 1e-6;

function makeCorpus(embedder: HashingEmbedder, n: number): Corpus {
  const d = embedder.dimensions;
  progress(`search: embedding ${fmtInt(n)} notes (${d} dimensions)`);
  const t0 = performance.now();
  const q = new Int8Array(n * d);
  const scales = new Float32Array(n);
  let nnz = 0;
  const CHUNK = 10_000;
  for (let i = 0; i < n; i += CHUNK) {
    const texts = memoryNotes(Math.min(CHUNK, n - i), 1_000 + i);
    for (let j = 0; j < texts.length; j++) {
      const v = storedForm(embedder.embedOne(texts[j]!));
      const s = quantise(v);
      q.set(s.q, (i + j) * d);
      scales[i + j] = s.scale;
      if (i + j < 1000) for (let x = 0; x < d; x++) if (v[x] !== 0) nnz++;
    }
  }
  return { n, d, q, scales, meanNonZero: nnz / Math.min(n, 1000), seconds: (performance.now() - t0) / 1000 };
}

/** Garbage collected, and the array buffers it freed given back (V8 frees them concurrently, after the collection). */
async function settled(): Promise<void> {
  gcNow();
  await sleep(300);
  gcNow();
  await sleep(300);
}

/** Vector `i` of the corpus as the index reads it back, into `out`. */
function vectorAt(c: Corpus, i: number, out: Float32Array): Float32Array {
  const s = c.scales[i]!;
  for (let x = 0; x < c.d; x++) out[x] = c.q[i * c.d + x]! * s;
  return out;
}

/** Brute force: the `k` best exact scores over the corpus (those `alive`), best first. */
function bruteTop(c: Corpus, query: Float32Array, k: number, alive?: Uint8Array): number[] {
  const dims: number[] = [];
  const values: number[] = [];
  for (let x = 0; x < query.length; x++) {
    if (query[x] !== 0) {
      dims.push(x);
      values.push(query[x]!);
    }
  }
  const m = dims.length;
  const top: number[] = [];
  for (let i = 0; i < c.n; i++) {
    if (alive && !alive[i]) continue;
    const base = i * c.d;
    let dot = 0;
    for (let j = 0; j < m; j++) dot += c.q[base + dims[j]!]! * values[j]!;
    dot *= c.scales[i]!;
    if (top.length === k && dot <= top[k - 1]!) continue;
    let at = top.length;
    while (at > 0 && top[at - 1]! < dot) at--;
    top.splice(at, 0, dot);
    if (top.length > k) top.pop();
  }
  return top;
}

/** Hits at or above the brute force's k-th score (ties count), ÷ k. */
function recallOf(hits: ReadonlyArray<{ score: number }>, truth: readonly number[]): number {
  const kth = truth.at(-1);
  if (kth === undefined) return 1;
  const floor = kth - TIE * Math.max(1, Math.abs(kth));
  return Math.min(truth.length, hits.filter((h) => h.score >= floor).length) / truth.length;
}

function unit(v: Float32Array): Float32Array {
  let norm = 0;
  for (const x of v) norm += x * x;
  norm = Math.sqrt(norm);
  if (norm > 0) for (let i = 0; i < v.length; i++) v[i]! /= norm;
  return v;
}

/** A stored vector moved a little: 40 dimensions nudged by up to ±0.1, renormalised. */
function perturbed(c: Corpus, i: number, rand: () => number): Float32Array {
  const v = vectorAt(c, i, new Float32Array(c.d));
  for (let t = 0; t < 40; t++) v[(rand() * c.d) | 0]! += (rand() - 0.5) * 0.2;
  return unit(v);
}

/**
 * Steps 1-4, the corpus made here and the rest in a process of its own
 * (bench/search-index.ts): its RSS before the build holds nothing but the corpus, so
 * the build's RSS delta is the index's (here, the corpus's garbage would leave freed
 * memory in the allocator for the index to reuse, and the delta would read low).
 */
async function measureIndex(embedder: HashingEmbedder, n: number, nQueries: number, rebuildAt: number): Promise<IndexRun> {
  const c = makeCorpus(embedder, n);
  progress(`search: ${fmtInt(n)} notes embedded in ${fmtSeconds(c.seconds)} (~${fmtNum(c.meanNonZero, 0)} non-zero dimensions each)`);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'lethe-bench-corpus-'));
  try {
    const file = path.join(dir, 'corpus.bin');
    await writeFile(
      file,
      Buffer.concat([Buffer.from(c.q.buffer, c.q.byteOffset, c.q.byteLength), Buffer.from(c.scales.buffer, c.scales.byteOffset, c.scales.byteLength)]),
    );
    const run = await runChild<IndexRun>(path.join(BENCH_DIR, 'search-index.ts'), {
      nodeArgs: ['--expose-gc'],
      env: { SEARCH_CORPUS: file, SEARCH_N: String(n), SEARCH_D: String(c.d), SEARCH_QUERIES: String(nQueries), SEARCH_REBUILD_AT: String(rebuildAt) },
    });
    return { ...run, meanNonZero: c.meanNonZero, corpusSeconds: c.seconds };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Reads the corpus bench/search.ts wrote (int8 vectors, then float32 scales) straight
 * into the arrays that keep it: no buffer of it becomes garbage (V8 frees array
 * buffers concurrently, after a collection: one freed during the build would make its
 * RSS delta read low).
 */
export function readCorpus(file: string, n: number, d: number): Corpus {
  const q = new Int8Array(n * d);
  const scales = new Float32Array(n);
  const fd = openSync(file, 'r');
  try {
    const read = (into: Uint8Array, at: number) => {
      for (let done = 0; done < into.length; ) {
        const got = readSync(fd, into, done, into.length - done, at + done);
        if (got === 0) throw new Error('the corpus file is short');
        done += got;
      }
    };
    read(new Uint8Array(q.buffer), 0);
    read(new Uint8Array(scales.buffer), n * d);
  } finally {
    closeSync(fd);
  }
  return { n, d, q, scales, meanNonZero: 0, seconds: 0 };
}

/** Steps 2-4 on a corpus (bench/search-index.ts runs them in a process of its own). */
export async function indexRun(embedder: HashingEmbedder, c: Corpus, nQueries: number, rebuildAt: number): Promise<IndexRun> {
  const n = c.n;
  const d = c.d;
  const nKeys = Math.ceil(n / RECORDS_PER_KEY);
  // allocated before the measurement: what the bench keeps, not what the index holds
  const ids: string[] = new Array<string>(n);
  const keyIds: string[] = new Array<string>(nKeys);
  const scratch = new Float32Array(BUILD_BATCH * d);
  const rand = prng(4242);
  // the addon loaded before the measurement (its code is not the index's memory)
  new VectorIndex(d).clear();

  await settled();
  const m0 = process.memoryUsage();
  const t0 = performance.now();
  for (let k = 0; k < nKeys; k++) keyIds[k] = seededId('key_', rand);
  let index: VectorIndex | undefined = new VectorIndex(d);
  let buildUpTo: { at: number; seconds: number } | undefined;
  // memory also halfway (the figure is the slope between there and the end: what each further vector costs)
  let half: { at: number; m: NodeJS.MemoryUsage } | undefined;
  let paused = 0;
  for (let i = 0; i < n; i += BUILD_BATCH) {
    const batch = [];
    for (let j = i; j < Math.min(n, i + BUILD_BATCH); j++) {
      ids[j] = seededId('entry_', rand);
      batch.push({ id: ids[j]!, type: 'entry' as const, keyId: keyIds[j % nKeys]!, vector: vectorAt(c, j, scratch.subarray((j - i) * d, (j - i + 1) * d)) });
    }
    index.upsertMany(batch);
    const done = Math.min(n, i + BUILD_BATCH);
    if (!buildUpTo && done >= rebuildAt) buildUpTo = { at: done, seconds: (performance.now() - t0) / 1000 };
    if ((done / BUILD_BATCH) % Math.max(1, Math.round(n / BUILD_BATCH / 10)) === 0)
      progress(`search: graph ${fmtInt(done)} / ${fmtInt(n)} (${fmtSeconds((performance.now() - t0) / 1000)})`);
    if (!half && done >= n / 2 && done < n) {
      const p0 = performance.now();
      await settled();
      half = { at: done, m: process.memoryUsage() };
      paused += performance.now() - p0;
    }
  }
  const buildSeconds = (performance.now() - t0 - paused) / 1000;
  await settled();
  const m1 = process.memoryUsage();
  if (index.size !== n) throw new Error(`the index holds ${index.size} vectors, expected ${n}`);
  const rssDelta = m1.rss - m0.rss;
  const heapUsedDelta = m1.heapUsed - m0.heapUsed;
  const heapTotalDelta = m1.heapTotal - m0.heapTotal;
  const arrayBuffersDelta = m1.arrayBuffers - m0.arrayBuffers;
  const deltaBytes = rssDelta - (heapTotalDelta - heapUsedDelta);
  const slope = (from: NodeJS.MemoryUsage, vectors: number) => ({
    bytes: (m1.rss - from.rss - (m1.heapTotal - from.heapTotal - (m1.heapUsed - from.heapUsed))) / vectors,
    js: (m1.heapUsed - from.heapUsed + m1.arrayBuffers - from.arrayBuffers) / vectors,
  });
  const second = half ? slope(half.m, n - half.at) : undefined;
  const jsBytesPerVector = (heapUsedDelta + arrayBuffersDelta) / n;
  const measuredNative = (rssDelta - heapTotalDelta - arrayBuffersDelta) / n;
  // what usearch cannot hold a vector in less than: its sign code (2·d bits in 8-byte words), its key and its bottom layer's links (2·M slots of 4 B)
  const nativeFloor = Math.ceil((2 * d) / 64) * 8 + 8 + 2 * DEFAULT_CONNECTIVITY * 4;
  const nativeBytesPerVector = Math.max(measuredNative, nativeFloor);
  const memory: MemoryFigures = {
    rssDelta,
    heapUsedDelta,
    heapTotalDelta,
    arrayBuffersDelta,
    deltaBytes,
    bytesPerVector: jsBytesPerVector + nativeBytesPerVector,
    jsBytesPerVector,
    nativeBytesPerVector,
    measuredNativeBytesPerVector: measuredNative,
    nativeFloorBytesPerVector: nativeFloor,
    gibPerMillion: ((jsBytesPerVector + nativeBytesPerVector) * 1e6) / 2 ** 30,
    secondHalf: second ? { vectors: n - half!.at, bytesPerVector: second.bytes, jsBytesPerVector: second.js } : null,
  };
  progress(
    `search: graph of ${fmtInt(n)} built in ${fmtSeconds(buildSeconds)} (${fmtNum(n / buildSeconds, 0)} vectors/s); ` +
      `${fmtNum(memory.bytesPerVector, 0)} B/vector (JS ${fmtNum(memory.jsBytesPerVector, 0)}, native ${fmtNum(memory.nativeBytesPerVector, 0)})`,
  );

  // queries: half stored vectors moved a little, half new notes
  const qrand = prng(777);
  const total = QUERY_WARMUPS + nQueries;
  const texts = memoryNotes(Math.ceil(total / 2) + 100, 99_000_000);
  const queries: Array<{ kind: 'perturbed' | 'text'; v: Float32Array }> = [];
  for (let r = 0; r < total; r++) {
    if (r % 2 === 0) queries.push({ kind: 'perturbed', v: perturbed(c, (qrand() * n) | 0, qrand) });
    else queries.push({ kind: 'text', v: embedder.embedOne(texts[r >> 1]!) });
  }
  progress(`search: ${QUERY_WARMUPS} + ${nQueries} queries, each against a brute-force pass over ${fmtInt(n)} vectors`);
  const indexMs: number[] = [];
  const bruteMs: number[] = [];
  const found = { perturbed: [0, 0], text: [0, 0] };
  for (let r = 0; r < total; r++) {
    const { kind, v } = queries[r]!;
    const a0 = performance.now();
    const hits = index.search(v, K);
    const a1 = performance.now();
    const truth = bruteTop(c, v, K);
    const a2 = performance.now();
    if (r < QUERY_WARMUPS) continue;
    indexMs.push(a1 - a0);
    bruteMs.push(a2 - a1);
    found[kind][0]! += recallOf(hits, truth);
    found[kind][1]!++;
  }
  const indexStats = stats(indexMs, QUERY_WARMUPS);
  const bruteStats = stats(bruteMs, QUERY_WARMUPS);
  const recall = (f: number[]): Recall => ({ queries: f[1]!, recall: f[0]! / Math.max(1, f[1]!) });
  const all = recall([found.perturbed[0]! + found.text[0]!, found.perturbed[1]! + found.text[1]!]);
  progress(`search: p50 ${fmtNum(indexStats.medianMs, 2)} ms (brute force ${fmtNum(bruteStats.medianMs, 1)} ms); recall@10 ${fmtNum(all.recall, 3)}`);

  // deletion: 1% of the keys
  const alive = new Uint8Array(n).fill(1);
  const removedIds = new Set<string>();
  const removedAt: number[] = [];
  const doomed: string[] = [];
  for (let k = 0; k < nKeys; k += 100) doomed.push(keyIds[k]!);
  for (let i = 0; i < n; i++) {
    if ((i % nKeys) % 100 === 0) {
      alive[i] = 0;
      removedIds.add(ids[i]!);
      removedAt.push(i);
    }
  }
  const d0 = performance.now();
  let removed = 0;
  for (const key of doomed) removed += index.removeKey(key);
  const d1 = performance.now();
  const left = index.scrub();
  const d2 = performance.now();
  if (removed !== removedIds.size || left !== 0) throw new Error(`removed ${removed} of ${removedIds.size} vectors; ${left} left unscrubbed`);
  let returned = 0;
  for (let s = 0; s < Math.min(100, removedAt.length); s++) {
    const own = vectorAt(c, removedAt[Math.floor((s * removedAt.length) / Math.min(100, removedAt.length))]!, new Float32Array(d));
    returned += index.search(own, K).filter((h) => removedIds.has(h.id)).length;
  }
  const after = [0, 0];
  const afterTexts = memoryNotes(100, 98_000_000);
  for (const t of afterTexts) {
    const v = embedder.embedOne(t);
    after[0]! += recallOf(index.search(v, K), bruteTop(c, v, K, alive));
    after[1]!++;
  }
  index.clear();
  index = undefined;
  return {
    vectors: n,
    keys: nKeys,
    dimensions: d,
    meanNonZero: c.meanNonZero,
    corpusSeconds: c.seconds,
    buildSeconds,
    buildPerSec: n / buildSeconds,
    buildUpTo: buildUpTo ?? { at: n, seconds: buildSeconds },
    memory,
    queries: { perturbed: found.perturbed[1]!, texts: found.text[1]! },
    index: indexStats,
    bruteForce: bruteStats,
    ratio: indexStats.medianMs / bruteStats.medianMs,
    recall: { all, perturbed: recall(found.perturbed), texts: recall(found.text) },
    deletion: {
      keys: doomed.length,
      vectors: removed,
      seconds: (d1 - d0) / 1000,
      microsPerVector: ((d1 - d0) * 1000) / removed,
      scrubSeconds: (d2 - d1) / 1000,
      scrubMicrosPerVector: ((d2 - d1) * 1000) / removed,
      returned,
      recallAfter: recall(after),
    },
  };
}

// ------------------------------------------------------------------ 5. embedding and sealing

function measureEmbedding(embedder: HashingEmbedder, texts: string[], budgetSeconds: number): EmbedRun {
  const rand = prng(7);
  const key = randomBytes(32);
  const places: EmbeddingPlace[] = texts.map(() => ({ recordId: seededId('entry_', rand), keyId: seededId('key_', rand), model: embedder.model }));
  const vectors = texts.map((t) => embedder.embedOne(t));
  const plains = vectors.map((v) => Buffer.from(v.buffer, v.byteOffset, v.byteLength));
  const quantisedPlaintextBytes = 5 + DIMENSIONS;
  const smallPlains = vectors.map((v) => Buffer.from(v.buffer, v.byteOffset, quantisedPlaintextBytes));
  const expected = vectors.map((v) => storedForm(v));
  const aads = places.map((p) => Buffer.from(encodeContext('embedding', { recordId: p.recordId, keyId: p.keyId, model: p.model })));
  let meanNonZero = 0;
  for (const v of vectors) for (let i = 0; i < v.length; i++) if (v[i] !== 0) meanNonZero++;
  meanNonZero /= vectors.length;

  let sink = 0;
  let roundTripsOk = true;
  let sealedBytes = 0;
  const embedRound = () => {
    for (const t of texts) sink += embedder.embedOne(t).length;
  };
  const builtIn = new BuiltInEmbedder(DIMENSIONS);
  const builtInRound = () => {
    for (const t of texts) sink += builtIn.embedOne(t).length;
  };
  const sealRound = () => {
    for (let i = 0; i < vectors.length; i++) {
      const sealed = sealEmbedding(key, places[i]!, vectors[i]!);
      sealedBytes = sealed.length;
      const back = openEmbedding(key, places[i]!, sealed, DIMENSIONS);
      const want = expected[i]!;
      // spot checks (a full compare would be timed too)
      if (back.length !== DIMENSIONS || back[0] !== want[0] || back[257] !== want[257] || back[511] !== want[511]) roundTripsOk = false;
    }
  };
  const aesRound = (inputs: Buffer[]) => () => {
    for (let i = 0; i < inputs.length; i++) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(aads[i]!);
      const ct = cipher.update(inputs[i]!);
      cipher.final();
      const tag = cipher.getAuthTag();
      const decipher = createDecipheriv('aes-256-gcm', key, iv);
      decipher.setAAD(aads[i]!);
      decipher.setAuthTag(tag);
      const pt = decipher.update(ct);
      decipher.final();
      if (pt.length !== inputs[i]!.length) roundTripsOk = false;
    }
  };
  const impls: Array<[string, () => void]> = [
    ['embed', embedRound],
    ['builtInEmbed', builtInRound],
    ['sealOpen', sealRound],
    ['aesGcm', aesRound(plains)],
    ['aesGcmSmall', aesRound(smallPlains)],
  ];
  // warm-up: one round each
  for (const [, f] of impls) f();
  const seconds: Record<string, number> = { embed: 0, builtInEmbed: 0, sealOpen: 0, aesGcm: 0, aesGcmSmall: 0 };
  let rounds = 0;
  const t0 = performance.now();
  while (rounds < 3 || (performance.now() - t0) / 1000 < budgetSeconds) {
    for (const [name, f] of impls) {
      const s = performance.now();
      f();
      seconds[name]! += (performance.now() - s) / 1000;
    }
    rounds++;
  }
  if (sink === 0) throw new Error('no vectors');
  const ops = rounds * texts.length;
  const rate = (name: string): Rate => ({ ops, seconds: seconds[name]!, perSec: ops / seconds[name]! });
  const embed = rate('embed');
  const builtInEmbed = rate('builtInEmbed');
  const sealOpen = rate('sealOpen');
  const aesGcm = rate('aesGcm');
  const aesGcmQuantisedSize = rate('aesGcmSmall');
  progress(
    `search: embedOne ${fmtNum(embed.perSec, 0)} texts/s, seal+open ${fmtNum(sealOpen.perSec, 0)}/s, AES-256-GCM ${fmtNum(aesGcm.perSec, 0)}/s (${rounds} rounds)`,
  );
  return {
    texts: texts.length,
    meanChars: texts.reduce((a, t) => a + t.length, 0) / texts.length,
    meanNonZero,
    rounds,
    embed,
    sealOpen,
    aesGcm,
    aesGcmQuantisedSize,
    quantisedPlaintextBytes,
    embedRatio: embed.perSec / aesGcm.perSec,
    builtInEmbed,
    builtInModel: builtIn.model,
    sealOpenRatio: sealOpen.perSec / aesGcm.perSec,
    sealedBytes,
    roundTripsOk,
  };
}

// ------------------------------------------------------------------ 6. rebuild

function timing(seconds: number[], records: number): Timing {
  const m = median(seconds);
  return { medianSeconds: m, minSeconds: Math.min(...seconds), maxSeconds: Math.max(...seconds), perSec: records / m };
}

/**
 * Opening sealed rows in steady state: OPEN_ROWS rows (one key, a ~200-character
 * note's vector and shingle set each) in batches of 256, all sent at once, on this
 * (warm) thread and on `workers` warm workers; also how long the workers take to start
 * and warm up (under tsx each first compiles its modules).
 */
async function measureOpening(vault: ScratchVault['vault'], workers: number): Promise<{ local: number; pooled: number; startSeconds: number; rows: number }> {
  const key = randomBytes(32);
  const notes = memoryNotes(OPEN_ROWS, 5);
  const embedder = vault.vectors.embedder;
  const sealed = await vault.vectors.seal(
    notes.map((text, i) => ({ recordId: `entry_open${String(i).padStart(17, '0')}`, recordType: 'entry' as const, text })),
    'key_open',
    key,
  );
  const rows = sealed.map((e) => ({ record_id: e.recordId, record_type: e.recordType, key_id: e.keyId, model: e.model, sealed: e.sealed }));
  const rate = async (open: Opener) => {
    const t0 = performance.now();
    const out = [];
    for (let i = 0; i < rows.length; i += 256) {
      const b = new BatchBuilder(embedder);
      for (const r of rows.slice(i, i + 256)) b.add(r, key);
      out.push(open.open(b.take().request));
    }
    for (const o of await Promise.all(out)) {
      o.q.fill(0);
      o.scales.fill(0);
    }
    return rows.length / ((performance.now() - t0) / 1000);
  };
  try {
    const local = openers(0);
    await rate(local);
    // the best of five on this thread: the opening taken out of the one-thread rebuild is then at its largest, the projection at its most cautious
    let localRate = 0;
    for (let round = 0; round < 5; round++) localRate = Math.max(localRate, await rate(local));
    if (workers === 0) return { local: localRate, pooled: localRate, startSeconds: 0, rows: rows.length };
    const s0 = performance.now();
    const pool = openers(workers);
    try {
      await pool.ready;
      const startSeconds = (performance.now() - s0) / 1000;
      await rate(pool);
      // the median of three warm rounds, not the best: the workers' opening is what the projection adds
      const pooled = median([await rate(pool), await rate(pool), await rate(pool)]);
      return { local: localRate, pooled, startSeconds, rows: rows.length };
    } finally {
      await pool.close();
    }
  } finally {
    key.fill(0);
  }
}

async function measureRebuild(
  records: number,
  runs: number,
): Promise<Omit<RebuildRun, 'projectedSecondsPerMillion' | 'projectedGraphSecondsPerMillion' | 'projectedAt'>> {
  const subjects = 100;
  if (records < subjects) throw new Error(`BENCH_SEARCH_REBUILD must be >= ${subjects}`);
  const { vault, cleanup } = await scratchVault('search');
  try {
    progress(`search: ${subjects} subjects, one entry each through vault.log.append, then ${fmtInt(records - subjects)} sealed embeddings inserted`);
    const s0 = performance.now();
    const texts = memoryNotes(records, 11);
    const keyOf: string[] = [];
    for (let s = 0; s < subjects; s++) keyOf.push((await vault.log.append(`bench-subject-${s}`, { text: texts[s]! }, 'bench')).keyId);
    // the rest: embedded and sealed under the subject's key, as the log does, inserted in batches
    let batch: SealedEmbedding[] = [];
    for (let s = 0; s < subjects; s++) {
      const mine: number[] = [];
      for (let i = subjects + s; i < records; i += subjects) mine.push(i);
      const { dek } = await vault.keys.dekFor(keyOf[s]!);
      try {
        const sealed = await vault.vectors.seal(
          mine.map((i) => ({ recordId: newId('entry'), recordType: 'entry' as const, text: texts[i]! })),
          keyOf[s]!,
          dek,
        );
        for (const e of sealed) {
          batch.push({ recordId: e.recordId, recordType: e.recordType, keyId: e.keyId, model: e.model, sealed: e.sealed, foldVersion: e.foldVersion });
          if (batch.length === 500) {
            await upsertEmbeddings(vault.db.db, batch);
            batch = [];
          }
        }
      } finally {
        dek.fill(0);
      }
    }
    if (batch.length > 0) await upsertEmbeddings(vault.db.db, batch);
    await vault.db.db.execute(dsql`analyze embeddings`);
    const setupSeconds = (performance.now() - s0) / 1000;
    progress(`search: ${fmtInt(records)} sealed embeddings stored in ${fmtSeconds(setupSeconds)}`);

    // interleaved: workers (as at start-up), this thread, a plain select
    const parallel: number[] = [];
    const single: number[] = [];
    const select: number[] = [];
    const graphs: number[] = [];
    let workers = 0;
    // the graph is built after a rebuild, in the background: wait for it (the next run starts on a quiet process)
    const graphBuilt = async () => {
      const g0 = performance.now();
      while (vault.vectors.index.graphPending > 0) await new Promise((resolve) => setImmediate(resolve));
      return (performance.now() - g0) / 1000;
    };
    let loadedEveryRun = true;
    for (let r = 0; r < runs; r++) {
      const a0 = performance.now();
      const p = await vault.vectors.rebuild();
      const a1 = performance.now();
      workers = p.workers;
      if (p.loaded !== records || vault.vectors.index.size !== records) loadedEveryRun = false;
      graphs.push(await graphBuilt());
      const b0 = performance.now();
      const s = await vault.vectors.rebuild(2000, { workers: 0 });
      const a2 = performance.now();
      if (s.loaded !== records || vault.vectors.index.size !== records) loadedEveryRun = false;
      await graphBuilt();
      const b1 = performance.now();
      const rows = await queryRows<{ record_id: string; sealed: Uint8Array }>(vault.db.db, dsql`select record_id, sealed from embeddings`);
      const a3 = performance.now();
      if (rows.length !== records) throw new Error('the baseline select returned the wrong rows');
      parallel.push((a1 - a0) / 1000);
      single.push((a2 - b0) / 1000);
      select.push((a3 - b1) / 1000);
      progress(
        `search: rebuild ${fmtNum(records / parallel.at(-1)!, 0)} vectors/s with ${workers} workers, ${fmtNum(records / single.at(-1)!, 0)} on one thread`,
      );
    }
    const p = timing(parallel, records);
    const s = timing(single, records);
    progress(`search: opening sealed rows in steady state, this thread and ${os.availableParallelism()} workers`);
    const opening = await measureOpening(vault, os.availableParallelism());
    return {
      records,
      subjects,
      setupSeconds,
      runs,
      workers,
      parallel: p,
      single: s,
      select: timing(select, records),
      workerStartSeconds: opening.startSeconds,
      opening: { rows: opening.rows, local: opening.local, workers: opening.pooled },
      graphAfter: timing(graphs, records),
      ratio: p.perSec / s.perSec,
      loadedEveryRun,
    };
  } finally {
    await cleanup();
  }
}

// ------------------------------------------------------------------ orchestration

export async function runSearch(): Promise<SearchResult> {
  const n = envInt('BENCH_SEARCH_VECTORS', byMode({ quick: 20_000, normal: 100_000, full: 1_000_000 }), 2_000);
  const nQueries = envInt('BENCH_SEARCH_QUERIES', QUICK ? 60 : 200, 10);
  const rebuildRecords = envInt('BENCH_SEARCH_REBUILD', byMode({ quick: 2_000, normal: 10_000, full: 50_000 }), 100);
  const rebuildRuns = envInt('BENCH_SEARCH_REBUILD_RUNS', byMode({ quick: 1, normal: 1, full: 3 }), 1);
  const warnings: string[] = [];
  const loadAvg = [os.loadavg()[0]!];
  const embedder = new HashingEmbedder();
  if (embedder.dimensions !== DIMENSIONS) throw new Error(`the default embedder has ${embedder.dimensions} dimensions, expected ${DIMENSIONS}`);

  const index = await measureIndex(embedder, n, nQueries, Math.min(rebuildRecords, n));
  loadAvg.push(os.loadavg()[0]!);
  gcNow();
  if (index.deletion.returned > 0) warnings.push(`${index.deletion.returned} removed records came back in searches after their key's removal`);

  const embedding = measureEmbedding(embedder, sentences(1_000, 3), 0);
  if (!embedding.roundTripsOk) warnings.push('a seal/open or AES-GCM round trip came back wrong');

  const measured = await measureRebuild(rebuildRecords, rebuildRuns);
  loadAvg.push(os.loadavg()[0]!);
  if (!measured.loadedEveryRun) warnings.push(`a rebuild did not load exactly ${fmtInt(measured.records)} vectors`);
  // searchable: the single-thread rebuild's seconds per vector at R (it opens and files; the graph comes after), its opening
  // replaced by the warm workers'; the graph: step 2's cost per vector at N on top
  const o = measured.opening;
  // what the one-thread rebuild spends a row besides opening it (reading, filing); below zero the two measurements disagree
  const filing = measured.single.medianSeconds / measured.records - 1 / o.local;
  if (filing < 0) {
    warnings.push(
      `the one-thread rebuild (${fmtNum((measured.single.medianSeconds / measured.records) * 1e6, 0)} µs a row) measured faster than opening alone ` +
        `(${fmtNum(1e6 / o.local, 0)} µs): the rebuild projection is not comparable`,
    );
  }
  const projectedSecondsPerMillion = 1e6 * (Math.max(0, filing) + 1 / o.workers);
  const projectedGraphSecondsPerMillion = projectedSecondsPerMillion + (1e6 * index.buildSeconds) / index.vectors;
  const rebuild: RebuildRun = { ...measured, projectedSecondsPerMillion, projectedGraphSecondsPerMillion, projectedAt: index.vectors };

  const at = `${fmtInt(index.vectors)} vectors`;
  const aims = [
    aim(`search(q, 10) p50 at ${at} ÷ 10 ms`, index.index.medianMs / 10, '<= 1', index.index.medianMs <= 10),
    aim(`recall@10 against brute force at ${at}`, index.recall.all.recall, '>= 0.95', index.recall.all.recall >= 0.95),
    aim(`index memory per vector at ${at} ÷ 1,200 B`, index.memory.bytesPerVector / 1200, '<= 1', index.memory.bytesPerVector <= 1200),
    aim(
      `rebuild until searchable, seconds per million (projected from ${fmtInt(rebuild.records)} rows) ÷ 30 s`,
      projectedSecondsPerMillion / 30,
      '<= 1',
      filing >= 0 && projectedSecondsPerMillion <= 30,
    ),
  ];
  return {
    dimensions: DIMENSIONS,
    model: embedder.model,
    graph: { threads: GRAPH_THREADS, candidates: DEFAULT_CANDIDATES, cores: os.availableParallelism() },
    index,
    embedding,
    rebuild,
    loadAvg,
    aims,
    valid: warnings.length === 0,
    warnings,
  };
}

/** The search section's rows of run.ts's summary table. */
export function searchSummary(r: SearchResult): string[][] {
  const x = r.index;
  const b = r.rebuild;
  const e = r.embedding;
  return [
    [
      `search(q, 10) median ms at ${fmtInt(x.vectors)} vectors ÷ brute force`,
      `${fmtNum(x.index.medianMs, 2)} / ${fmtNum(x.bruteForce.medianMs, 1)}`,
      fmtRatio(x.ratio),
      `p95 ${fmtNum(x.index.p95Ms, 2)} ms; recall@10 ${fmtNum(x.recall.all.recall, 3)} (${x.recall.all.queries} queries)`,
    ],
    [
      `index memory per vector at ${fmtInt(x.vectors)} ÷ 1,200 B`,
      `${fmtNum(x.memory.bytesPerVector, 0)} / 1,200 B`,
      fmtRatio(x.memory.bytesPerVector / 1200),
      `JS ${fmtNum(x.memory.jsBytesPerVector, 0)} B + native ${fmtNum(x.memory.nativeBytesPerVector, 0)} B; ${fmtNum(x.memory.gibPerMillion, 2)} GiB per million`,
    ],
    [
      `rebuild vectors/s, ${b.workers} workers ÷ one thread (${fmtInt(b.records)} rows)`,
      `${fmtNum(b.parallel.perSec, 0)} / ${fmtNum(b.single.perSec, 0)}`,
      fmtRatio(b.ratio),
      `projected per million: searchable ${fmtNum(b.projectedSecondsPerMillion, 0)} s, graph built ${fmtNum(b.projectedGraphSecondsPerMillion, 0)} s (at ${fmtInt(b.projectedAt)}'s rate); all loaded: ${b.loadedEveryRun ? 'yes' : 'NO'}`,
    ],
    [
      'sealEmbedding+openEmbedding /s ÷ AES-256-GCM round trips/s',
      `${fmtNum(e.sealOpen.perSec, 0)} / ${fmtNum(e.aesGcm.perSec, 0)}`,
      fmtRatio(e.sealOpenRatio),
      `embedOne ${fmtNum(e.embed.perSec, 0)} texts/s${e.roundTripsOk ? '' : '; ROUND TRIP FAILED'}`,
    ],
  ];
}

export function formatSearch(r: SearchResult): string {
  const x = r.index;
  const m = x.memory;
  const del = x.deletion;
  const e = r.embedding;
  const b = r.rebuild;
  const mib = (bytes: number) => `${fmtNum(bytes / 2 ** 20, 1)} MiB`;
  const lines = [
    `VectorIndex(${r.dimensions}): HNSW graph (usearch, sign codes, Hamming; ${r.graph.threads} insertion threads on ${r.graph.cores} cores), ${r.graph.candidates} candidates ranked exactly per search; ` +
      `${fmtInt(x.vectors)} notes of ~${fmtNum(x.meanNonZero, 0)} non-zero dimensions (${r.model}), embedded in ${fmtSeconds(x.corpusSeconds)}; load average ${r.loadAvg.map((l) => fmtNum(l, 2)).join(' / ')}`,
    table(
      [
        'vectors',
        'keys',
        'build',
        'vectors/s',
        'B/vector',
        'JS B/vector',
        'native B/vector',
        'GiB per 10^6',
        'RSS delta',
        'heapTotal / heapUsed / arrayBuffers delta',
      ],
      [
        [
          fmtInt(x.vectors),
          fmtInt(x.keys),
          fmtSeconds(x.buildSeconds),
          fmtNum(x.buildPerSec, 0),
          fmtNum(m.bytesPerVector, 0),
          fmtNum(m.jsBytesPerVector, 0),
          fmtNum(m.nativeBytesPerVector, 0),
          fmtNum(m.gibPerMillion, 2),
          mib(m.rssDelta),
          `${mib(m.heapTotalDelta)} / ${mib(m.heapUsedDelta)} / ${mib(m.arrayBuffersDelta)}`,
        ],
      ],
    ),
    `memory = JS (heapUsed + arrayBuffers delta: the int8 vectors, ids, maps and key filing) + native (usearch's graph and sign codes: RSS delta − heapTotal delta − arrayBuffers delta, ` +
      `${fmtNum(m.measuredNativeBytesPerVector, 0)} B/vector, or its floor of ${fmtNum(m.nativeFloorBytesPerVector, 0)} B — sign code, key, 2·M links — when the delta reads below it), after forced GCs` +
      (m.secondHalf
        ? `; over the build's second half alone (${fmtInt(m.secondHalf.vectors)} vectors): ${fmtNum(m.secondHalf.bytesPerVector, 0)} B/vector (JS ${fmtNum(m.secondHalf.jsBytesPerVector, 0)}, native ${fmtNum(m.secondHalf.bytesPerVector - m.secondHalf.jsBytesPerVector, 0)})`
        : ''),
    '',
    `index.search(q, 10) vs a brute-force pass over the ${fmtInt(x.vectors)} int8 vectors (same exact score); ${x.index.runs} queries after ${x.index.warmups} warm-up ` +
      `(${x.queries.perturbed} stored vectors moved a little, ${x.queries.texts} new notes), one at a time`,
    table(
      ['search', 'median ms', 'p95 ms', 'max ms', 'recall@10'],
      [
        [
          'index.search (graph, exact re-rank)',
          fmtNum(x.index.medianMs, 3),
          fmtNum(x.index.p95Ms, 3),
          fmtNum(x.index.maxMs, 3),
          `${fmtNum(x.recall.all.recall, 3)} (moved ${fmtNum(x.recall.perturbed.recall, 3)}, new notes ${fmtNum(x.recall.texts.recall, 3)})`,
        ],
        ['brute force (baseline)', fmtNum(x.bruteForce.medianMs, 2), fmtNum(x.bruteForce.p95Ms, 2), fmtNum(x.bruteForce.maxMs, 2), '1'],
      ],
    ),
    `index ÷ brute force (median): ${fmtRatio(x.ratio)}; ${fmtNum(1000 / x.index.medianMs, 0)} queries/s on one thread`,
    `deletion: removeKey of ${fmtInt(del.keys)} keys (${fmtInt(del.vectors)} vectors) ${fmtNum(del.seconds * 1000, 1)} ms (${fmtNum(del.microsPerVector, 1)} µs a vector), ` +
      `then their graph slots scrubbed ${fmtNum(del.scrubSeconds * 1000, 0)} ms (${fmtNum(del.scrubMicrosPerVector, 0)} µs a vector); removed records answered afterwards: ${del.returned}; ` +
      `recall@10 after: ${fmtNum(del.recallAfter.recall, 3)} (${del.recallAfter.queries} new notes)`,
    '',
    `Embedding ${fmtInt(e.texts)} sentences of ~${fmtNum(e.meanChars, 0)} characters; ${e.rounds} interleaved rounds each`,
    table(
      ['operation', 'texts/s', 'ratio to AES-256-GCM'],
      [
        [`HashingEmbedder.embedOne (${r.model})`, fmtNum(e.embed.perSec, 0), fmtRatio(e.embedRatio)],
        [
          `BuiltInEmbedder.embedOne (${e.builtInModel}; the served default)`,
          fmtNum(e.builtInEmbed.perSec, 0),
          fmtRatio(e.builtInEmbed.perSec / e.aesGcm.perSec),
        ],
        [
          `sealEmbedding + openEmbedding (int8, ${e.quantisedPlaintextBytes} B plaintext, ${e.sealedBytes} B sealed)`,
          fmtNum(e.sealOpen.perSec, 0),
          fmtRatio(e.sealOpenRatio),
        ],
        ['node:crypto AES-256-GCM encrypt + decrypt, 2,048 B (baseline)', fmtNum(e.aesGcm.perSec, 0), '1.00x'],
        [
          `node:crypto AES-256-GCM encrypt + decrypt, ${e.quantisedPlaintextBytes} B (reference)`,
          fmtNum(e.aesGcmQuantisedSize.perSec, 0),
          fmtRatio(e.aesGcmQuantisedSize.perSec / e.aesGcm.perSec),
        ],
      ],
    ),
    '',
    `Rebuild at start-up: ${fmtInt(b.records)} sealed embeddings over ${b.subjects} subjects (setup ${fmtSeconds(b.setupSeconds)}); medians of ${b.runs} interleaved runs`,
    table(
      ['operation', 'median s', 'min / max s', 'per second'],
      [
        [
          `vault.vectors.rebuild() (${b.workers} worker threads open the rows)`,
          fmtNum(b.parallel.medianSeconds, 2),
          `${fmtNum(b.parallel.minSeconds, 2)} / ${fmtNum(b.parallel.maxSeconds, 2)}`,
          `${fmtNum(b.parallel.perSec, 0)} vectors/s`,
        ],
        [
          'vault.vectors.rebuild(2000, { workers: 0 }) (this thread)',
          fmtNum(b.single.medianSeconds, 2),
          `${fmtNum(b.single.minSeconds, 2)} / ${fmtNum(b.single.maxSeconds, 2)}`,
          `${fmtNum(b.single.perSec, 0)} vectors/s`,
        ],
        [
          'the graph, built after the parallel rebuild (in the background)',
          fmtNum(b.graphAfter.medianSeconds, 2),
          `${fmtNum(b.graphAfter.minSeconds, 2)} / ${fmtNum(b.graphAfter.maxSeconds, 2)}`,
          `${fmtNum(b.graphAfter.perSec, 0)} vectors/s`,
        ],
        [
          'select record_id, sealed from embeddings (reference)',
          fmtNum(b.select.medianSeconds, 2),
          `${fmtNum(b.select.minSeconds, 2)} / ${fmtNum(b.select.maxSeconds, 2)}`,
          `${fmtNum(b.select.perSec, 0)} rows/s`,
        ],
      ],
    ),
    `workers ÷ one thread: ${fmtRatio(b.ratio)} (the workers take rows once warm: their start and warm-up, under tsx, ${fmtSeconds(b.workerStartSeconds)}); all loaded every run: ${b.loadedEveryRun ? 'yes' : 'NO'}`,
    `opening ${fmtInt(b.opening.rows)} sealed rows in steady state: ${fmtNum(b.opening.local, 0)} rows/s on this thread, ${fmtNum(b.opening.workers, 0)} on ${b.workers || r.graph.cores} warm workers (${fmtRatio(b.opening.workers / b.opening.local)})`,
    `projected per million vectors: searchable after ${fmtNum(b.projectedSecondsPerMillion, 0)} s (the one-thread rebuild's ${fmtNum((b.single.medianSeconds / b.records) * 1e6, 0)} µs a vector at ${fmtInt(b.records)}, ` +
      `its opening at ${fmtNum(1e6 / b.opening.local, 0)} µs replaced by the workers' ${fmtNum(1e6 / b.opening.workers, 0)} µs), the graph built after ${fmtNum(b.projectedGraphSecondsPerMillion, 0)} s ` +
      `(plus the graph's ${fmtNum((x.buildSeconds / x.vectors) * 1e6, 0)} µs a vector up to ${fmtInt(b.projectedAt)}, step 2)`,
    '',
    ...r.aims.map((a) => `${a.name}: ${fmtRatio(a.ratio)} — ${aimVerdict(a)}`),
    formatAims(r.aims),
  ];
  for (const w of r.warnings) lines.push(`WARNING: ${w}`);
  return lines.join('\n');
}

await runIfMain(import.meta.url, runSearch, formatSearch);

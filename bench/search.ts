/**
 * Search: what the in-memory vector index costs in memory and per query, how fast the
 * built-in embedder and the sealing of embeddings run, and how fast the index is
 * rebuilt from the sealed embeddings at start-up. The default embedder throughout:
 * HashingEmbedder, 512 dimensions. Needs `node --expose-gc` (run.ts passes it).
 *
 *   1. memory   VectorIndex(512) filled with N random sparse unit vectors (as many random
 *               draws of a dimension as the embedder gives a 200-character sentence
 *               non-zero dimensions, on average; collisions leave fewer), at two sizes: BENCH_SEARCH_SMALL (default 100,000; 20,000 when
 *               quick) and BENCH_SEARCH_LARGE (default 500,000; 50,000 when quick), one
 *               after the other in this process. Ids look like lethe's ('entry_' + 22
 *               base64url characters, flat strings as the database driver hands them to a
 *               rebuild); key ids 'key_' + 22 characters, one key per ~20 records, each key
 *               id string shared by its records (as in a rebuild, which files a page's rows
 *               under one key id string). Figure: heapUsed + arrayBuffers after the build
 *               minus before it, both after forced garbage collections, per vector; and
 *               GiB per million vectors extrapolated from it. The index's Float32Array
 *               grows by doubling from 1,024 slots, so part of each figure is unused
 *               capacity; the report splits the delta into the vector array (capacity x
 *               2,048 B) and everything else (ids, maps, key sets), and gives the peak
 *               arrayBuffers while the array was being doubled (old and new both alive).
 *   2. query    index.search(q, 10) for BENCH_SEARCH_RUNS (default 40; 15 when quick)
 *               random unit queries after 3 unmeasured ones, each followed by the baseline:
 *               a bare dot-product loop over one Float32Array holding the same N x 512
 *               values (the source the index was filled from), keeping only the maximum.
 *               Both accumulate in the same order, so the baseline's maximum must equal the
 *               index's top score exactly, else the benchmark fails. Figures: median and
 *               p95 ms of each, index ÷ baseline, and queries/s (1,000 ÷ median ms; one
 *               query at a time on one core).
 *   3. embed    2,000 generated English sentences of ~200 characters. Timed in interleaved
 *               rounds (one pass over the 2,000 texts each): HashingEmbedder.embedOne;
 *               sealEmbedding + openEmbedding of its vector under a random 32-byte key with
 *               a per-text record id and key id (int8-quantised, 5 + 512 bytes, in lethe's
 *               envelope, pure-JS XChaCha20-Poly1305; every opened vector must equal
 *               storedForm of the original); and the baseline, node:crypto AES-256-GCM
 *               encrypt + decrypt of the vector's 2,048 float32 bytes with the same
 *               associated data. Also, for reference, AES-256-GCM of 517 bytes (the size of
 *               the quantised plaintext lethe seals). Figures: texts/s of each and its
 *               ratio to the baseline.
 *   4. rebuild  a fresh lethe_bench_* database, the vault opened on it with openApp
 *               (migrations run; local filesystem object store; no listener, so no rebuild
 *               at open). 100 subjects each get one entry through vault.log.append (which
 *               creates the subject's key and stores the entry's sealed embedding); the
 *               other M - 100 embeddings (M = BENCH_SEARCH_REBUILD, default 5,000; 1,000
 *               when quick) are embedded from generated sentences and sealed with
 *               vault.vectors.seal under the subject's DEK (vault.keys.dekFor) and inserted
 *               with upsertEmbeddings, 500 rows a statement (no log_entries rows: the
 *               rebuild reads only embeddings). Then VACUUM ANALYZE, and in interleaved
 *               rounds (one unmeasured of each first, then BENCH_SEARCH_REBUILD_RUNS,
 *               default 5; 3 when quick): vault.vectors.rebuild() (vectors/s; it must load
 *               exactly M) and the baseline, a plain `select record_id, sealed from
 *               embeddings` through the vault's database handle (rows/s). Figure: median
 *               rebuild vectors/s ÷ median select rows/s. Also EXPLAIN (ANALYZE, BUFFERS)
 *               of one of the rebuild's keyset pages, from the middle of the key range.
 *
 * All phases run in this one process; PostgreSQL is on the same machine.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { and, asc, eq, gt, or } from 'drizzle-orm';
import { sql as dsql } from 'drizzle-orm';
import postgres from 'postgres';
import { encodeContext } from '../src/crypto/index.js';
import { queryRows } from '../src/db/client.js';
import { embeddings } from '../src/db/schema.js';
import { HashingEmbedder } from '../src/vectors/embedder.js';
import { type EmbeddingPlace, openEmbedding, type SealedEmbedding, sealEmbedding, storedForm, upsertEmbeddings } from '../src/vectors/embeddings.js';
import { VectorIndex } from '../src/vectors/vector-index.js';
import { newId } from '../src/ids.js';
import { mulberry32 as prng, seededId } from '../test/support/prng.js';
import {
  cpuSeconds,
  envInt,
  fmtInt,
  fmtNum,
  gcNow,
  memNow,
  fmtRatio,
  fmtSeconds,
  type LatencyStats,
  median,
  progress,
  QUICK,
  runIfMain,
  scratchVault,
  stats,
  table,
} from './lib.js';

// ------------------------------------------------------------------ result types

export interface IndexRun {
  readonly vectors: number;
  readonly keys: number;
  readonly dimensions: number;
  /** Mean non-zero dimensions of the random vectors. */
  readonly nonZero: number;
  readonly buildSeconds: number;
  readonly memory: {
    /** heapUsed + arrayBuffers after the build minus before it (after gc both times). */
    readonly deltaBytes: number;
    readonly heapUsedDelta: number;
    readonly arrayBuffersDelta: number;
    readonly bytesPerVector: number;
    /** bytesPerVector x 10^6 / 2^30. */
    readonly gibPerMillion: number;
    /** Slots of the index's Float32Array (doubling from 1,024). */
    readonly capacity: number;
    /** capacity x dimensions x 4. */
    readonly vectorArrayBytes: number;
    /** (delta - vectorArrayBytes) / vectors: ids, maps, key sets, arrays. */
    readonly bookkeepingPerVector: number;
    /** 4 x dimensions + bookkeepingPerVector: per vector with no unused capacity. */
    readonly tightBytesPerVector: number;
    /** Peak arrayBuffers above the starting point, sampled right after each doubling. */
    readonly peakArrayBuffersDelta: number;
  };
  readonly index: LatencyStats;
  readonly baseline: LatencyStats;
  /** median index ÷ median baseline. */
  readonly ratio: number;
  readonly p95Ratio: number;
  readonly queriesPerSec: number;
  readonly baselineQueriesPerSec: number;
  /** Every baseline maximum equalled the index's top score. */
  readonly topScoresAgree: boolean;
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
  readonly sealOpen: Rate;
  /** AES-256-GCM encrypt + decrypt of the 2,048 float32 bytes: the baseline. */
  readonly aesGcm: Rate;
  /** AES-256-GCM of 517 bytes: the quantised plaintext's size (reference). */
  readonly aesGcmQuantisedSize: Rate;
  /** The plaintext lethe seals per vector (format byte + float32 scale + int8 per dimension). */
  readonly quantisedPlaintextBytes: number;
  /** embed/s ÷ AES-GCM/s. */
  readonly embedRatio: number;
  /** seal+open/s ÷ AES-GCM/s. */
  readonly sealOpenRatio: number;
  readonly sealedBytes: number;
  readonly roundTripsOk: boolean;
}

export interface PageScan {
  readonly node: string;
  readonly relation: string | null;
  readonly index: string | null;
  readonly rows: number;
}

export interface RebuildRun {
  readonly records: number;
  readonly subjects: number;
  readonly keys: number;
  readonly setupSeconds: number;
  readonly embeddingsBytes: number;
  readonly runs: number;
  readonly rebuild: { readonly medianSeconds: number; readonly minSeconds: number; readonly maxSeconds: number; readonly perSec: number; readonly cpuSeconds: number };
  readonly select: { readonly medianSeconds: number; readonly minSeconds: number; readonly maxSeconds: number; readonly perSec: number };
  /** rebuild vectors/s ÷ select rows/s (medians). */
  readonly ratio: number;
  readonly loadedEveryRun: boolean;
  readonly page: {
    readonly afterKeyId: string;
    readonly executionMs: number;
    readonly rows: number;
    readonly sharedHit: number;
    readonly sharedRead: number;
    readonly sort: string | null;
    readonly scans: PageScan[];
    readonly outline: string[];
  };
}

export interface SearchResult {
  readonly dimensions: number;
  readonly model: string;
  readonly small: IndexRun;
  readonly large: IndexRun;
  readonly embedding: EmbedRun;
  readonly rebuild: RebuildRun;
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
  'The patient', 'My sister', 'The customer', 'Our landlord', 'The new manager', 'A neighbour', 'The accountant', 'His doctor', 'The school nurse',
  'Her lawyer', 'The delivery driver', 'My grandfather', 'The support agent', 'Their daughter', 'The insurance adjuster', 'Our team lead',
];
const VERBS = [
  'reported', 'mentioned', 'complained about', 'asked about', 'confirmed', 'cancelled', 'rescheduled', 'described', 'disputed', 'requested',
  'forgot about', 'paid for', 'worried about', 'signed up for', 'moved away from', 'recovered from', 'applied for', 'returned',
];
const OBJECTS = [
  'mild headaches after the new medication', 'the overdue invoice from last spring', 'a broken dishwasher in the rented flat', 'the annual blood test results',
  'a refund for the damaged parcel', 'the mortgage application', 'persistent back pain while running', 'the car insurance renewal', 'a visa appointment in Lisbon',
  'the allergy to penicillin', 'the gym membership contract', 'a leaking roof above the kitchen', 'the tax return for the previous year',
  'a sleeping problem since the surgery', 'the missing passport', 'a school trip to the mountains', 'the blood pressure readings', 'a late salary payment',
];
const PLACES = [
  'in March', 'on Tuesday morning', 'before the holidays', 'during the video call', 'at the clinic in Porto', 'over the phone', 'last weekend',
  'while travelling to Berlin', 'at the branch office', 'after the school meeting', 'in the waiting room', 'by email yesterday',
];
const FOLLOWUPS = [
  'and asked whether the dosage could be reduced', 'but nobody has answered the letter yet', 'so the follow-up appointment was moved to next week',
  'and wants a written confirmation before Friday', 'although the earlier report said otherwise', 'and the family is considering a second opinion',
  'because the previous agreement had expired', 'and expects the matter to be settled within a month', 'so the deposit will probably be withheld',
  'and promised to bring the missing documents', 'which explains the delay in the payment', 'and is now looking for a cheaper alternative',
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

// ------------------------------------------------------------------ 1 + 2. memory and queries

const DIMENSIONS = 512;
const RECORDS_PER_KEY = 20;
const QUERY_WARMUPS = 3;

function bareMax(v: Float32Array, q: Float32Array, n: number, d: number): number {
  let best = -Infinity;
  for (let slot = 0; slot < n; slot++) {
    let dot = 0;
    const base = slot * d;
    for (let i = 0; i < d; i++) dot += v[base + i]! * q[i]!;
    if (dot > best) best = dot;
  }
  return best;
}

function measureIndex(n: number, nonZero: number, runs: number, seed: number): IndexRun {
  const d = DIMENSIONS;
  progress(`search: generating ${fmtInt(n)} random unit vectors (~${nonZero} non-zero of ${d})`);
  const rand = prng(seed);
  // the source array is also the baseline's: allocated and filled before the measurement starts
  const source = new Float32Array(n * d);
  for (let i = 0; i < n; i++) randomSparseUnit(source.subarray(i * d, (i + 1) * d), nonZero, rand);
  let nnz = 0;
  for (let i = 0; i < Math.min(n, 1000) * d; i++) if (source[i] !== 0) nnz++;
  const meanNonZero = nnz / Math.min(n, 1000);

  gcNow();
  const before = memNow();
  const t0 = performance.now();
  const nKeys = Math.ceil(n / RECORDS_PER_KEY);
  let keyIds: string[] | null = Array.from({ length: nKeys }, () => seededId('key_', rand));
  const index = new VectorIndex(d);
  let peakArrayBuffers = 0;
  let capacity = 1024;
  for (let i = 0; i < n; i++) {
    index.upsert(seededId('entry_', rand), 'entry', keyIds[(rand() * nKeys) | 0]!, source.subarray(i * d, (i + 1) * d));
    if (i + 1 > capacity) {
      // this upsert doubled the array: the old one is garbage but not yet collected
      capacity *= 2;
      peakArrayBuffers = Math.max(peakArrayBuffers, process.memoryUsage().arrayBuffers - before.arrayBuffers);
    }
  }
  const buildSeconds = (performance.now() - t0) / 1000;
  keyIds = null;
  gcNow();
  const after = memNow();
  if (index.size !== n) throw new Error(`index holds ${index.size} vectors, expected ${n}`);
  const heapUsedDelta = after.heapUsed - before.heapUsed;
  const arrayBuffersDelta = after.arrayBuffers - before.arrayBuffers;
  const deltaBytes = heapUsedDelta + arrayBuffersDelta;
  const vectorArrayBytes = capacity * d * 4;
  const bookkeepingPerVector = (deltaBytes - vectorArrayBytes) / n;
  const bytesPerVector = deltaBytes / n;
  progress(
    `search: ${fmtInt(n)} vectors: +${fmtNum(deltaBytes / 2 ** 20, 1)} MiB (${fmtNum(bytesPerVector, 0)} B/vector; ` +
      `array ${fmtInt(capacity)} slots, ${fmtNum(bookkeepingPerVector, 0)} B/vector of bookkeeping); built in ${fmtSeconds(buildSeconds)}`,
  );

  // queries: random unit vectors from another stream
  const qrand = prng(seed ^ 0x5bd1e995);
  const queries = Array.from({ length: QUERY_WARMUPS + runs }, () => {
    const q = new Float32Array(d);
    randomSparseUnit(q, nonZero, qrand);
    return q;
  });
  const idx: number[] = [];
  const base: number[] = [];
  let agree = true;
  progress(`search: ${QUERY_WARMUPS} + ${runs} queries at ${fmtInt(n)} vectors, each against the bare loop`);
  for (let r = 0; r < queries.length; r++) {
    const q = queries[r]!;
    const a0 = performance.now();
    const hits = index.search(q, 10);
    const a1 = performance.now();
    const best = bareMax(source, q, n, d);
    const a2 = performance.now();
    if (hits.length !== 10 || hits[0]!.score !== best) agree = false;
    if (r >= QUERY_WARMUPS) {
      idx.push(a1 - a0);
      base.push(a2 - a1);
    }
  }
  const indexStats = stats(idx, QUERY_WARMUPS);
  const baseStats = stats(base, QUERY_WARMUPS);
  index.clear();
  return {
    vectors: n,
    keys: nKeys,
    dimensions: d,
    nonZero: meanNonZero,
    buildSeconds,
    memory: {
      deltaBytes,
      heapUsedDelta,
      arrayBuffersDelta,
      bytesPerVector,
      gibPerMillion: (bytesPerVector * 1e6) / 2 ** 30,
      capacity,
      vectorArrayBytes,
      bookkeepingPerVector,
      tightBytesPerVector: 4 * d + bookkeepingPerVector,
      peakArrayBuffersDelta: peakArrayBuffers,
    },
    index: indexStats,
    baseline: baseStats,
    ratio: indexStats.medianMs / baseStats.medianMs,
    p95Ratio: indexStats.p95Ms / baseStats.p95Ms,
    queriesPerSec: 1000 / indexStats.medianMs,
    baselineQueriesPerSec: 1000 / baseStats.medianMs,
    topScoresAgree: agree,
  };
}

// ------------------------------------------------------------------ 3. embedding and sealing

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
    ['sealOpen', sealRound],
    ['aesGcm', aesRound(plains)],
    ['aesGcmSmall', aesRound(smallPlains)],
  ];
  // warm-up: one round each
  for (const [, f] of impls) f();
  const seconds: Record<string, number> = { embed: 0, sealOpen: 0, aesGcm: 0, aesGcmSmall: 0 };
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
    sealOpenRatio: sealOpen.perSec / aesGcm.perSec,
    sealedBytes,
    roundTripsOk,
  };
}

// ------------------------------------------------------------------ 4. rebuild

interface RawPlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Sort Method'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: RawPlanNode[];
}

async function measureRebuild(records: number, runs: number): Promise<RebuildRun> {
  const subjects = 100;
  if (records < subjects) throw new Error(`BENCH_SEARCH_REBUILD must be >= ${subjects}`);
  const { vault, db, cleanup } = await scratchVault('search');
  const pg = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    progress(`search: ${subjects} subjects, one entry each through vault.log.append, then ${fmtInt(records - subjects)} sealed embeddings inserted`);
    const s0 = performance.now();
    const texts = sentences(records, 11);
    const keyOf: string[] = [];
    for (let s = 0; s < subjects; s++) {
      const r = await vault.log.append(`bench-subject-${s}`, { text: texts[s]! }, 'bench');
      keyOf.push(r.keyId);
    }
    // the rest: embedded and sealed under the subject's DEK, as the log does, inserted in batches
    const perSubject: number[][] = Array.from({ length: subjects }, () => []);
    for (let i = subjects; i < records; i++) perSubject[i % subjects]!.push(i);
    let batch: SealedEmbedding[] = [];
    for (let s = 0; s < subjects; s++) {
      const { dek } = await vault.keys.dekFor(keyOf[s]!);
      try {
        const sealed = await vault.vectors.seal(
          perSubject[s]!.map((i) => ({ recordId: newId('entry'), recordType: 'entry' as const, text: texts[i]! })),
          keyOf[s]!,
          dek,
        );
        for (const e of sealed) {
          batch.push({ recordId: e.recordId, recordType: e.recordType, keyId: e.keyId, model: e.model, sealed: e.sealed });
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
    await pg.unsafe('vacuum analyze embeddings');
    const setupSeconds = (performance.now() - s0) / 1000;
    const [{ n, bytes }] = (await pg.unsafe(`select count(*)::int as n, pg_total_relation_size('embeddings')::bigint as bytes from embeddings`)) as unknown as [
      { n: number; bytes: string },
    ];
    if (n !== records) throw new Error(`embeddings holds ${n} rows, expected ${records}`);
    progress(`search: ${fmtInt(n)} sealed embeddings stored (${fmtNum(Number(bytes) / 2 ** 20, 1)} MiB with indexes) in ${fmtSeconds(setupSeconds)}`);

    // interleaved: rebuild, select, rebuild, select, ... (first pair unmeasured)
    const rebuildSeconds: number[] = [];
    const selectSeconds: number[] = [];
    let rebuildCpu = 0;
    let loadedEveryRun = true;
    for (let r = 0; r <= runs; r++) {
      const cpu0 = process.cpuUsage();
      const a0 = performance.now();
      const result = await vault.vectors.rebuild();
      const a1 = performance.now();
      const cpu = cpuSeconds(cpu0);
      if (result.loaded !== records || vault.vectors.index.size !== records) loadedEveryRun = false;
      const b0 = performance.now();
      const rows = await queryRows<{ record_id: string; sealed: Uint8Array }>(vault.db.db, dsql`select record_id, sealed from embeddings`);
      const b1 = performance.now();
      if (rows.length !== records || !(rows[0]!.sealed instanceof Uint8Array)) throw new Error('baseline select returned the wrong rows');
      if (r > 0) {
        rebuildSeconds.push((a1 - a0) / 1000);
        selectSeconds.push((b1 - b0) / 1000);
        rebuildCpu += cpu;
      }
    }
    const rebuildMedian = median(rebuildSeconds);
    const selectMedian = median(selectSeconds);
    progress(`search: rebuild ${fmtNum(records / rebuildMedian, 0)} vectors/s, select ${fmtNum(records / selectMedian, 0)} rows/s (medians of ${runs})`);

    // one keyset page of the rebuild, from the middle of the key range (the same drizzle expression)
    const keys = [...new Set(keyOf)].sort();
    const afterKeyId = keys[Math.floor(keys.length / 2)]!;
    const after = { keyId: afterKeyId, recordId: '' };
    const model = vault.vectors.embedder.model;
    const page = vault.db.db
      .select()
      .from(embeddings)
      .where(and(eq(embeddings.model, model), or(gt(embeddings.keyId, after.keyId), and(eq(embeddings.keyId, after.keyId), gt(embeddings.recordId, after.recordId)))))
      .orderBy(asc(embeddings.keyId), asc(embeddings.recordId))
      .limit(2000)
      .toSQL();
    const [explained] = (await pg.unsafe(`explain (analyze, buffers, format json) ${page.sql}`, page.params as never[])) as unknown as Array<{
      'QUERY PLAN': Array<{ Plan: RawPlanNode; 'Execution Time': number }>;
    }>;
    const doc = explained!['QUERY PLAN'][0]!;
    const scans: PageScan[] = [];
    const outline: string[] = [];
    let sort: string | null = null;
    const walk = (node: RawPlanNode, depth: number) => {
      const rows = (node['Actual Rows'] ?? 0) * (node['Actual Loops'] ?? 1);
      outline.push(
        `${'  '.repeat(depth)}${node['Node Type']}${node['Index Name'] ? ` using ${node['Index Name']}` : ''}${node['Relation Name'] ? ` on ${node['Relation Name']}` : ''}` +
          `${node['Sort Method'] ? ` (${node['Sort Method']})` : ''} (rows ${fmtInt(rows)})`,
      );
      if (node['Sort Method']) sort = node['Sort Method'];
      if (/Scan/.test(node['Node Type'])) scans.push({ node: node['Node Type'], relation: node['Relation Name'] ?? null, index: node['Index Name'] ?? null, rows });
      for (const c of node.Plans ?? []) walk(c, depth + 1);
    };
    walk(doc.Plan, 0);

    return {
      records,
      subjects,
      keys: keys.length,
      setupSeconds,
      embeddingsBytes: Number(bytes),
      runs,
      rebuild: {
        medianSeconds: rebuildMedian,
        minSeconds: Math.min(...rebuildSeconds),
        maxSeconds: Math.max(...rebuildSeconds),
        perSec: records / rebuildMedian,
        cpuSeconds: rebuildCpu / runs,
      },
      select: { medianSeconds: selectMedian, minSeconds: Math.min(...selectSeconds), maxSeconds: Math.max(...selectSeconds), perSec: records / selectMedian },
      ratio: records / rebuildMedian / (records / selectMedian),
      loadedEveryRun,
      page: {
        afterKeyId,
        executionMs: doc['Execution Time'],
        rows: doc.Plan['Actual Rows'] ?? 0,
        sharedHit: doc.Plan['Shared Hit Blocks'] ?? 0,
        sharedRead: doc.Plan['Shared Read Blocks'] ?? 0,
        sort,
        scans,
        outline,
      },
    };
  } finally {
    await pg.end({ timeout: 5 });
    await cleanup();
  }
}

// ------------------------------------------------------------------ orchestration

export async function runSearch(): Promise<SearchResult> {
  const smallN = envInt('BENCH_SEARCH_SMALL', QUICK ? 20_000 : 100_000, 1_000);
  const largeN = envInt('BENCH_SEARCH_LARGE', QUICK ? 50_000 : 500_000, 1_000);
  const runs = envInt('BENCH_SEARCH_RUNS', QUICK ? 15 : 40, 5);
  const rebuildRecords = envInt('BENCH_SEARCH_REBUILD', QUICK ? 1_000 : 5_000, 100);
  const rebuildRuns = envInt('BENCH_SEARCH_REBUILD_RUNS', QUICK ? 3 : 5, 1);
  const warnings: string[] = [];
  const embedder = new HashingEmbedder();
  if (embedder.dimensions !== DIMENSIONS) throw new Error(`the default embedder has ${embedder.dimensions} dimensions, expected ${DIMENSIONS}`);

  // the vectors get as many non-zero dimensions as the embedder gives these sentences
  const texts = sentences(2_000, 3);
  let nnz = 0;
  for (const t of texts.slice(0, 500)) for (const x of embedder.embedOne(t)) if (x !== 0) nnz++;
  const nonZero = Math.round(nnz / 500);

  const small = measureIndex(smallN, nonZero, runs, 101);
  gcNow();
  const large = measureIndex(largeN, nonZero, runs, 202);
  gcNow();
  for (const x of [small, large]) if (!x.topScoresAgree) warnings.push(`at ${fmtInt(x.vectors)} vectors the bare loop's maximum differed from the index's top score`);

  const embedding = measureEmbedding(embedder, texts, QUICK ? 1.5 : 12);
  if (!embedding.roundTripsOk) warnings.push('a seal/open or AES-GCM round trip came back wrong');

  const rebuild = await measureRebuild(rebuildRecords, rebuildRuns);
  if (!rebuild.loadedEveryRun) warnings.push(`a rebuild did not load exactly ${fmtInt(rebuild.records)} vectors`);

  return {
    dimensions: DIMENSIONS,
    model: embedder.model,
    small,
    large,
    embedding,
    rebuild,
    valid: warnings.length === 0,
    warnings,
  };
}

export function formatSearch(r: SearchResult): string {
  const x = [r.small, r.large];
  const e = r.embedding;
  const b = r.rebuild;
  const lines = [
    `VectorIndex(${r.dimensions}) of random sparse unit vectors (~${fmtNum(r.small.nonZero, 0)} non-zero dimensions: as many random draws as the ${fmtNum(r.embedding.meanNonZero, 0)} ${r.model} gives a 200-character sentence, less collisions); ` +
      `memory = heapUsed + arrayBuffers after the build minus before (after gc)`,
    table(
      ['vectors', 'keys', 'build', 'memory delta', 'B/vector', 'GiB per 10^6', 'array slots', 'bookkeeping B/vector', 'B/vector w/o spare slots', 'peak while doubling'],
      x.map((m) => [
        fmtInt(m.vectors),
        fmtInt(m.keys),
        fmtSeconds(m.buildSeconds),
        `${fmtNum(m.memory.deltaBytes / 2 ** 20, 1)} MiB`,
        fmtNum(m.memory.bytesPerVector, 0),
        fmtNum(m.memory.gibPerMillion, 2),
        fmtInt(m.memory.capacity),
        fmtNum(m.memory.bookkeepingPerVector, 0),
        fmtNum(m.memory.tightBytesPerVector, 0),
        `${fmtNum(m.memory.peakArrayBuffersDelta / 2 ** 20, 0)} MiB`,
      ]),
    ),
    `at exactly 10^6 vectors the array would have ${fmtInt(2 ** Math.ceil(Math.log2(1e6 / 1024)) * 1024)} slots: ` +
      `${fmtNum((2 ** Math.ceil(Math.log2(1e6 / 1024)) * 1024 * r.dimensions * 4 + 1e6 * r.large.memory.bookkeepingPerVector) / 2 ** 30, 2)} GiB ` +
      `(bookkeeping as measured at ${fmtInt(r.large.vectors)}), and ${fmtNum((2 ** Math.ceil(Math.log2(1e6 / 1024)) * 1024 * r.dimensions * 4 * 1.5) / 2 ** 30, 1)} GiB of arrays while the last doubling copies`,
    '',
    `index.search(q, 10) vs a bare dot-product loop over one Float32Array of the same values keeping the maximum; ${r.small.index.runs} queries after ${r.small.index.warmups} warm-up, one at a time`,
    table(
      ['vectors', 'index median ms', 'index p95 ms', 'bare median ms', 'bare p95 ms', 'ratio (median)', 'ratio (p95)', 'queries/s', 'top score = bare max'],
      x.map((m) => [
        fmtInt(m.vectors),
        fmtNum(m.index.medianMs, 2),
        fmtNum(m.index.p95Ms, 2),
        fmtNum(m.baseline.medianMs, 2),
        fmtNum(m.baseline.p95Ms, 2),
        fmtRatio(m.ratio),
        fmtRatio(m.p95Ratio),
        fmtNum(m.queriesPerSec, 1),
        m.topScoresAgree ? 'yes' : 'NO',
      ]),
    ),
    `median ms per million vectors: ${x.map((m) => `${fmtNum((m.index.medianMs * 1e6) / m.vectors, 0)} at ${fmtInt(m.vectors)}`).join(', ')}`,
    '',
    `Embedding ${fmtInt(e.texts)} sentences of ~${fmtNum(e.meanChars, 0)} characters (~${fmtNum(e.meanNonZero, 0)} non-zero dimensions); ${e.rounds} interleaved rounds each`,
    table(
      ['operation', 'texts', 'seconds', 'texts/s', 'ratio to AES-256-GCM'],
      [
        [`HashingEmbedder.embedOne (${r.model})`, fmtInt(e.embed.ops), fmtNum(e.embed.seconds, 2), fmtNum(e.embed.perSec, 0), fmtRatio(e.embedRatio)],
        [
          `sealEmbedding + openEmbedding (int8, ${e.quantisedPlaintextBytes} B plaintext, ${e.sealedBytes} B sealed)`,
          fmtInt(e.sealOpen.ops),
          fmtNum(e.sealOpen.seconds, 2),
          fmtNum(e.sealOpen.perSec, 0),
          fmtRatio(e.sealOpenRatio),
        ],
        ['node:crypto AES-256-GCM encrypt + decrypt, 2,048 B (baseline)', fmtInt(e.aesGcm.ops), fmtNum(e.aesGcm.seconds, 2), fmtNum(e.aesGcm.perSec, 0), '1.00x'],
        [
          `node:crypto AES-256-GCM encrypt + decrypt, ${e.quantisedPlaintextBytes} B (reference)`,
          fmtInt(e.aesGcmQuantisedSize.ops),
          fmtNum(e.aesGcmQuantisedSize.seconds, 2),
          fmtNum(e.aesGcmQuantisedSize.perSec, 0),
          fmtRatio(e.aesGcmQuantisedSize.perSec / e.aesGcm.perSec),
        ],
      ],
    ),
    '',
    `Rebuild at start-up: ${fmtInt(b.records)} sealed embeddings over ${b.subjects} subjects (${b.keys} keys; ${fmtNum(b.embeddingsBytes / 2 ** 20, 1)} MiB with indexes); ` +
      `medians of ${b.runs} interleaved runs after one unmeasured`,
    table(
      ['operation', 'median s', 'min / max s', 'per second', 'note'],
      [
        [
          'vault.vectors.rebuild()',
          fmtNum(b.rebuild.medianSeconds, 3),
          `${fmtNum(b.rebuild.minSeconds, 3)} / ${fmtNum(b.rebuild.maxSeconds, 3)}`,
          `${fmtNum(b.rebuild.perSec, 0)} vectors/s`,
          `${fmtNum(b.rebuild.cpuSeconds, 2)} CPU s per rebuild; loaded ${fmtInt(b.records)} every run: ${b.loadedEveryRun ? 'yes' : 'NO'}`,
        ],
        [
          'select record_id, sealed from embeddings (baseline)',
          fmtNum(b.select.medianSeconds, 3),
          `${fmtNum(b.select.minSeconds, 3)} / ${fmtNum(b.select.maxSeconds, 3)}`,
          `${fmtNum(b.select.perSec, 0)} rows/s`,
          'same handle',
        ],
      ],
    ),
    `rebuild vectors/s ÷ select rows/s = ${fmtRatio(b.ratio)}; ~${fmtSeconds(1e6 / b.rebuild.perSec)} per million vectors at this rate`,
    `one keyset page of the rebuild (after key ${b.page.afterKeyId}, the middle of ${b.keys}; limit 2,000): EXPLAIN execution ${fmtNum(b.page.executionMs, 2)} ms, ${fmtInt(b.page.rows)} rows, ` +
      `shared buffers hit ${fmtInt(b.page.sharedHit)} read ${fmtInt(b.page.sharedRead)}${b.page.sort ? `; sort: ${b.page.sort}` : ''}`,
    ...b.page.outline.map((l) => `    ${l}`),
  ];
  for (const w of r.warnings) lines.push(`WARNING: ${w}`);
  return lines.join('\n');
}

await runIfMain(import.meta.url, runSearch, formatSearch);

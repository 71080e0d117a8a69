/**
 * `npm run bench`: the benchmarks in sequence, each in its own Node process, then one
 * summary, an "Aims" table (every section's `aims`: ratio, aim, met or not) and the wall
 * time per section against the default run's target of 10 minutes on the 2-core
 * development machine (child processes' start-up included). Prints human tables on stdout
 * (progress on stderr) and writes bench/results.json (a full run) or
 * bench/results-<names>.json (a BENCH_ONLY subset, e.g. bench/results-append.json), so a
 * partial run never overwrites the full figures.
 *
 * Sizes below: default run [BENCH_FULL=1 in brackets]. The default keeps every ratio's
 * two sides in the same run at the same size, at the largest size that fits the 10 minutes.
 *
 *   1. lease    POST .../key/lease req/s vs GET /healthz req/s at 16 [and 64] connections (service as a
 *               child process; 4 s phases [10 s])
 *   2. envelope lethe seal+open MB/s vs node:crypto AES-256-GCM, 64 B .. 1 MiB (1 s per case [1.5 s])
 *   3. rewrap   KEK rotation keys/s vs crypto-only unwrap+wrap; peak live heap, BENCH_KEYS vs BENCH_KEYS/10
 *               (20,000 vs 2,000 keys [1,000,000 vs 100,000])
 *   4. append   LetheWriter appends/s vs plain store.put with the same batching (real MinIO);
 *               entries/s read back through GET .../entries; stored bytes of overhead per frame
 *   5. provenance touchingSubject (one subject feeding 100 artifacts) median/p95 in graphs of 10,000 and
 *               250,000 [1,000,000] provenance edges (ratio; EXPLAIN ANALYZE buffers); artifacts regenerated/s
 *               by the built-in regenerator vs vault.artifacts.write/s (100 [300] summaries + 10 [30] digests)
 *   6. search     the HNSW vector index at 100,000 [1,000,000] vectors of 512 dimensions: index.search(q, 10)
 *               p50/p95 vs brute force, recall@10 against it, memory per vector (RSS delta after gc; node
 *               --expose-gc), removeKey and scrub cost; embedOne and sealEmbedding+openEmbedding vs AES-256-GCM;
 *               vault.vectors.rebuild() vectors/s on worker threads vs one thread, projected per million
 *   7. backup   vault.backups.run() objects/s and MB/s vs a plain copy of the same objects with the minio
 *               client (real MinIO; 840 [5,100] objects); a second, incremental run; propagation ms of a
 *               destroyed key held by 1 backup and by 1,000 backups (the propagate call destroyKey's
 *               hook starts)
 *               and bytes (object versions) each such destruction writes to the backup bucket, at 1 and 1,000
 *   8. erasure  one subject's erasure (30 entries, 3 summaries + 1 digest), request → settled over HTTP
 *               against `lethe serve`, median of 3 subjects in stores of 1,000, 20,000 and 100,000
 *               [10,000, 200,000, 1,000,000] entries, on PostgreSQL and on PGlite (ratios to the base store);
 *               per-step times; the probe's vector search timed at each store size
 *   9. probe    the reconstruction probe's recall per category and precision on the labelled evaluation
 *               set (fixtures/probe-eval); its lexical part (scoreProbe over the shingle index) for one subject
 *               of 1,000 records in stores of 10,000 and 100,000 [1,000,000] records (ratio), and the shingle index's
 *               memory per record (heapUsed + arrayBuffers after gc; node --expose-gc)
 *  10. faults   LetheWriter appends/s with the database and the store behind Toxiproxy with 5 ms latency
 *               vs direct (and vs the proxy without a toxic), same run: 2,000 appends a phase, one round
 *               [10,000, two rounds in alternating order]
 *  11. streams  lease p50 / p99 with 400 erasure events streams open (40 erasures held open) vs none,
 *               same run; the watchers' database reads and the database's commits/s in each phase
 *               (250 subjects, 4 s phases [1,000 subjects, 10 s])
 *  12. scoped   vault.search.search scoped to one subject (100 entries) vs allSubjects, p50 / p95, over an
 *               index of 20,000 [100,000] entry vectors (and shingle sets) of 200 [1,000] subjects (most seeded directly into
 *               the index); 20 [40] queries
 *  13. forget   forget one memory (DELETE /v1/entries/{id} → erasure finished) for a subject of 10 vs
 *               10,000 [and 100,000] memories (real MinIO, writer client), median wall / destroy-step times and
 *               the ratio; the re-key's parts; vs a re-key of 2,000 legacy frames (the previous design)
 *  12b. retrieval recall@5/@10 and MRR of the default (hybrid) search, vector and lexical alone, and a plain
 *               BM25 over the same turns, on lethe's labelled conversations (test/search/retrieval; ~3,300 turns
 *               appended through the service); search p50 per mode
 *  13b. supersede one subject under 4 steady appenders: appends alone, then one client updating
 *               memories (POST …/supersede), then 4 clients forgetting (one every 250 ms each; their erasures
 *               awaited at most 20 s after); supersede ÷ append median and append p99 while forgets run ÷ alone (8 s phases)
 *  14. providers the local keyring vs PKCS#11 (SoftHSM2) vs AWS KMS (local-kms), same run: wraps/s and
 *               unwraps/s at concurrency 1 and 16 through the KeyProvider the vault opens; a KEK rotation
 *               of 5,000 keys (500 through AWS KMS, its time for 5,000 computed) [100,000 through each]
 *               through a vault on PostgreSQL, keys/s and seconds; ratios to the local keyring
 *  15. keys     PUT .../key (a new subject each) at 1, 16 and 64 connections vs the bare PostgreSQL one-row
 *               insert-and-commit at the same client count; POST /v1/keys/batch of 10,000 subjects keys/s;
 *               warm lease and key creation at 16 through PKCS#11 (SoftHSM2) and AWS KMS (local-kms) vs the
 *               local keyring (2 s phases [8 s])
 *  16. units    (not in the default run: BENCH_ONLY=units, or BENCH_FULL=1; bench/scale.ts reads
 *               bench/results-units.json) per-unit storage and CPU for the scale plan (bench/scale.ts, docs/scale.md): PostgreSQL bytes per
 *               subject key, log entry, artifact and provenance edge, object-store bytes per entry and artifact
 *               (real MinIO), in-process CPU per append; one store grown from 1,500 to 4,000 [10,000 to 50,000]
 *               entries, the slope between the two sizes; database commits per erasure (3 erasures in-process)
 *  17. bulk     POST /v1/erasures/batch of 100 [1,000] class-A subjects (3 entries each, indexed first) → all
 *               settled, one `lethe serve` vs two on the same database and store (fresh each): subjects/s and the
 *               ratio, erasures per replica, ledger chain records per erasure
 *  18. store    LetheStore (lethe serve) vs LangGraph's PostgresStore on the same PostgreSQL: put and get
 *               calls/s and p50/p99 at 1, 16 and 64 clients, search with a filter at 16 (1.5 s phases [6 s])
 *  19. shards   indexes sharded by subject hash (LETHE_INDEX_SHARDS=6) over 1, 2 and 3 `lethe serve` replicas
 *               on one PostgreSQL and a store of 2,000 [10,000] subjects × 4 [5] entries: vectors and RSS per
 *               replica; scoped search p50 / p95 round robin over 3 sharded replicas vs 1 unsharded (300 [1,000]
 *               queries); a replica SIGKILLed: its shards owned again (the 10 s lease), ready, searched whole
 *
 * Every figure is a ratio against a baseline measured in the same run, next to the
 * absolute numbers and its section's 1-min load average. Each section waits up to 20 s for
 * the load to fall to 1.5 per CPU (3 on two), and one that starts above it all the same is
 * marked not comparable. Nothing here asserts on timings.
 *
 * Environment: BENCH_KEYS (default 20,000; 1,000,000 with BENCH_FULL=1) keys for the re-wrap benchmark;
 * BENCH_QUICK=1 for a smoke run (small counts, short durations); BENCH_FULL=1 for the million-scale
 * and long sizes in brackets above (about 40 minutes by the sections' last full-size runs on the 2-core
 * machine, 2,318 s summed); BENCH_ONLY=lease,envelope
 * to run a subset; BENCH_PG_ADMIN_URL (default postgres://postgres@127.0.0.1:5432/postgres)
 * for the server that holds the scratch lethe_bench_* databases.
 */
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type AppendResult, formatAppend } from './append.js';
import { type BackupResult, formatBackup } from './backup.js';
import { type BulkResult, formatBulk } from './bulk.js';
import { type EnvelopeResult, formatEnvelope } from './envelope.js';
import { type ErasureResult, formatErasure } from './erasure.js';
import { type FaultsResult, formatFaults } from './faults.js';
import { type ForgetResult, formatForget } from './forget.js';
import { formatSupersede, type SupersedeResult } from './supersede.js';
import { formatRetrieval, type RetrievalResult } from './retrieval.js';
import { formatLease, type LeaseResult } from './lease.js';
import { BENCH_DIR, benchKeys, COMPARABLE_LOAD, DEFAULT_RUN_TARGET_SECONDS, FULL, QUICK } from './support/mode.js';
import { runChild } from './support/process.js';
import { type Aim, fmtBytes, fmtInt, fmtNum, fmtRatio, fmtSeconds, progress, table } from './support/report.js';
import { formatProbe, type ProbeResult } from './probe.js';
import { formatProvenance, type ProvenanceResult } from './provenance.js';
import { formatKeys, type KeysResult } from './keys.js';
import { formatProviders, localRun, type ProvidersResult, rotationSecondsFor } from './providers.js';
import { formatRewrap, type RewrapResult } from './rewrap.js';
import { formatScoped, type ScopedResult } from './scoped.js';
import { formatShards, type ShardsResult } from './shards.js';
import { formatSearch, type SearchResult, searchSummary } from './search.js';
import { formatStore, type StoreResult } from './store.js';
import { formatStreams, type StreamsResult } from './streams.js';
import { formatUnits, type UnitsResult } from './units.js';

type Name =
  | 'lease'
  | 'envelope'
  | 'rewrap'
  | 'append'
  | 'provenance'
  | 'search'
  | 'backup'
  | 'erasure'
  | 'probe'
  | 'faults'
  | 'streams'
  | 'scoped'
  | 'retrieval'
  | 'forget'
  | 'supersede'
  | 'providers'
  | 'keys'
  | 'units'
  | 'bulk'
  | 'store'
  | 'shards';

interface Section<T> {
  readonly ok: boolean;
  readonly seconds: number;
  readonly loadAvg1: [number, number];
  readonly result?: T;
  readonly error?: string;
}

const ALL: Name[] = [
  'lease',
  'envelope',
  'rewrap',
  'append',
  'provenance',
  'search',
  'backup',
  'erasure',
  'probe',
  'faults',
  'streams',
  'scoped',
  'retrieval',
  'forget',
  'supersede',
  'providers',
  'keys',
  'units',
  'bulk',
  'store',
  'shards',
];
/** Sections a default run leaves out to fit its 10 minutes: their figures are sizes in bytes, not same-run ratios (BENCH_ONLY or BENCH_FULL runs them). */
const NOT_DEFAULT: ReadonlySet<Name> = new Set<Name>(['units']);
const only = process.env.BENCH_ONLY?.split(',')
  .map((s) => s.trim())
  .filter(Boolean) as Name[] | undefined;
const selected = ALL.filter((n) => (only ? only.includes(n) : FULL || !NOT_DEFAULT.has(n)));

const started = new Date();
const t0 = performance.now();
const keys = benchKeys();
progress(
  `lethe benchmarks${QUICK ? ' (BENCH_QUICK)' : FULL ? ' (BENCH_FULL: million-scale sizes)' : ''}: ${selected.join(', ')}; BENCH_KEYS=${keys}; ` +
    `${os.cpus().length} CPUs; load ${os.loadavg()[0]!.toFixed(2)}`,
);

/** How long a section waits for the 1-min load to fall to COMPARABLE_LOAD: the previous section's own load decays in it, other work does not. */
const SETTLE_MS = 20_000;

async function settle(): Promise<void> {
  const deadline = performance.now() + SETTLE_MS;
  while (os.loadavg()[0]! > COMPARABLE_LOAD && performance.now() < deadline) await new Promise((r) => setTimeout(r, 1000));
}

/** A section that started above COMPARABLE_LOAD all the same: other work shared the machine (its figures are not comparable). */
const startedBusy = (s: Section<unknown> | undefined): boolean => (s?.loadAvg1[0] ?? 0) > COMPARABLE_LOAD;

async function section<T>(name: Name): Promise<Section<T>> {
  await settle();
  const load0 = os.loadavg()[0]!;
  const s0 = performance.now();
  try {
    // search and probe measure memory after forced garbage collections; probe's million-record shingle index needs a larger heap
    const nodeArgs = name === 'search' ? ['--expose-gc'] : name === 'probe' ? ['--expose-gc', '--max-old-space-size=8192'] : undefined;
    const result = await runChild<T>(path.join(BENCH_DIR, `${name}.ts`), nodeArgs ? { nodeArgs } : {});
    return { ok: true, seconds: (performance.now() - s0) / 1000, loadAvg1: [load0, os.loadavg()[0]!], result };
  } catch (e) {
    progress(`${name} FAILED: ${(e as Error).message}`);
    return { ok: false, seconds: (performance.now() - s0) / 1000, loadAvg1: [load0, os.loadavg()[0]!], error: (e as Error).message };
  }
}

const sections: Partial<Record<Name, Section<unknown>>> = {};
for (const name of selected) {
  progress(`=== ${name}`);
  sections[name] = await section(name);
}
const lease = sections.lease as Section<LeaseResult> | undefined;
const envelope = sections.envelope as Section<EnvelopeResult> | undefined;
const rewrap = sections.rewrap as Section<RewrapResult> | undefined;
const append = sections.append as Section<AppendResult> | undefined;
const provenance = sections.provenance as Section<ProvenanceResult> | undefined;
const search = sections.search as Section<SearchResult> | undefined;
const backup = sections.backup as Section<BackupResult> | undefined;
const erasure = sections.erasure as Section<ErasureResult> | undefined;
const probe = sections.probe as Section<ProbeResult> | undefined;
const faults = sections.faults as Section<FaultsResult> | undefined;
const streams = sections.streams as Section<StreamsResult> | undefined;
const scoped = sections.scoped as Section<ScopedResult> | undefined;
const forget = sections.forget as Section<ForgetResult> | undefined;
const supersede = sections.supersede as Section<SupersedeResult> | undefined;
const retrieval = sections.retrieval as Section<RetrievalResult> | undefined;
const providers = sections.providers as Section<ProvidersResult> | undefined;
const keysSection = sections.keys as Section<KeysResult> | undefined;
const units = sections.units as Section<UnitsResult> | undefined;
const bulk = sections.bulk as Section<BulkResult> | undefined;
const store = sections.store as Section<StoreResult> | undefined;
const shards = sections.shards as Section<ShardsResult> | undefined;
const totalSeconds = (performance.now() - t0) / 1000;

// a BENCH_ONLY subset goes to its own file: bench/results.json keeps the last full run
const resultsFile = path.join(BENCH_DIR, only ? `results-${selected.join('-') || 'none'}.json` : 'results.json');
// the measured sections first, as they are: a report that fails below loses no figure (written again, whole, at the end)
await writeFile(
  resultsFile,
  `${JSON.stringify({ startedAt: started.toISOString(), totalSeconds, quick: QUICK, full: FULL, partial: true, sections }, null, 2)}\n`,
);

/** A section's own tables; a formatter that throws on a malformed result costs that section's tables, not the report. */
function formatted<T>(format: (r: T) => string, result: T): string {
  try {
    return format(result);
  } catch (e) {
    return `FORMAT FAILED: ${(e as Error).message} (the figures are in the results file)`;
  }
}

// ------------------------------------------------------------------ report
const out: string[] = [];
const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
out.push('');
out.push(
  `lethe benchmarks${QUICK ? ' — BENCH_QUICK smoke run, figures are not meaningful' : ''} — ${started.toISOString()} — ` +
    `Node ${process.version}, ${os.cpus().length} x ${cpu}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB`,
);
const sectionLine = (name: string, s: Section<unknown> | undefined) =>
  s ? `(${name}: ${fmtSeconds(s.seconds)}, 1-min load average ${fmtNum(s.loadAvg1[0], 2)} -> ${fmtNum(s.loadAvg1[1], 2)})` : '';

out.push('');
out.push('== 1. Lease throughput ==');
if (lease?.result) out.push(formatted(formatLease, lease.result), sectionLine('lease', lease));
else out.push(lease ? `FAILED: ${lease.error}` : 'skipped');

out.push('');
out.push('== 2. Envelope throughput ==');
if (envelope?.result) out.push(formatted(formatEnvelope, envelope.result), sectionLine('envelope', envelope));
else out.push(envelope ? `FAILED: ${envelope.error}` : 'skipped');

out.push('');
out.push('== 3. KEK rotation (re-wrap) ==');
if (rewrap?.result) out.push(formatted(formatRewrap, rewrap.result), sectionLine('rewrap', rewrap));
else out.push(rewrap ? `FAILED: ${rewrap.error}` : 'skipped');

out.push('');
out.push('== 4. Appends through the writer client ==');
if (append?.result) out.push(formatted(formatAppend, append.result), sectionLine('append', append));
else out.push(append ? `FAILED: ${append.error}` : 'skipped');

out.push('');
out.push('== 5. Provenance: touching query and regeneration ==');
if (provenance?.result) out.push(formatted(formatProvenance, provenance.result), sectionLine('provenance', provenance));
else out.push(provenance ? `FAILED: ${provenance.error}` : 'skipped');

out.push('');
out.push('== 6. Search: the HNSW index (queries, recall, memory, deletion), embedding, rebuild ==');
if (search?.result) out.push(formatted(formatSearch, search.result), sectionLine('search', search));
else out.push(search ? `FAILED: ${search.error}` : 'skipped');

out.push('');
out.push('== 7. Backups: throughput and propagation ==');
if (backup?.result) out.push(formatted(formatBackup, backup.result), sectionLine('backup', backup));
else out.push(backup ? `FAILED: ${backup.error}` : 'skipped');

out.push('');
out.push('== 8. Erasure: one subject, a store 20x and 100x larger, PostgreSQL and PGlite, over HTTP ==');
if (erasure?.result) out.push(formatted(formatErasure, erasure.result), sectionLine('erasure', erasure));
else out.push(erasure ? `FAILED: ${erasure.error}` : 'skipped');

out.push('');
out.push('== 9. Probe: recall on the evaluation set; lexical probe at 10,000 vs 1,000,000 records ==');
if (probe?.result) out.push(formatted(formatProbe, probe.result), sectionLine('probe', probe));
else out.push(probe ? `FAILED: ${probe.error}` : 'skipped');

out.push('');
out.push('== 10. Faults: appends through the writer client over a slow network (Toxiproxy, 5 ms) vs direct ==');
if (faults?.result) out.push(formatted(formatFaults, faults.result), sectionLine('faults', faults));
else out.push(faults ? `FAILED: ${faults.error}` : 'skipped');

out.push('');
out.push('== 11. Streams: lease latency with 400 erasure events streams open vs none ==');
if (streams?.result) out.push(formatted(formatStreams, streams.result), sectionLine('streams', streams));
else out.push(streams ? `FAILED: ${streams.error}` : 'skipped');

out.push('');
out.push('== 12. Scoped search: one subject vs every subject (20,000 vectors; 100,000 with BENCH_FULL=1) ==');
if (scoped?.result) out.push(formatted(formatScoped, scoped.result), sectionLine('scoped', scoped));
else out.push(scoped ? `FAILED: ${scoped.error}` : 'skipped');

out.push('');
out.push('== 12b. Retrieval: does a search find what an agent asks? (labelled conversations, same-run BM25) ==');
if (retrieval?.result) out.push(formatted(formatRetrieval, retrieval.result), sectionLine('retrieval', retrieval));
else out.push(retrieval ? `FAILED: ${retrieval.error}` : 'skipped');

out.push('');
out.push('== 13. Forget one memory: a subject of 10 vs 10,000 memories ==');
if (forget?.result) out.push(formatted(formatForget, forget.result), sectionLine('forget', forget));
else out.push(forget ? `FAILED: ${forget.error}` : 'skipped');

out.push('');
out.push('== 13b. Updates and forgets of one subject under steady appends ==');
if (supersede?.result) out.push(formatted(formatSupersede, supersede.result), sectionLine('supersede', supersede));
else out.push(supersede ? `FAILED: ${supersede.error}` : 'skipped');

out.push('');
out.push('== 14. Key providers: local keyring vs PKCS#11 (SoftHSM2) vs AWS KMS (local-kms) ==');
if (providers?.result) out.push(formatted(formatProviders, providers.result), sectionLine('providers', providers));
else out.push(providers ? `FAILED: ${providers.error}` : 'skipped');

out.push('');
out.push('== 15. Keys: creation vs bare PostgreSQL commits at 1/16/64 clients, bulk creation, leases and creation through PKCS#11 and AWS KMS ==');
if (keysSection?.result) out.push(formatted(formatKeys, keysSection.result), sectionLine('keys', keysSection));
else out.push(keysSection ? `FAILED: ${keysSection.error}` : 'skipped');

out.push('');
out.push('== 16. Units: storage and CPU per subject key, entry, artifact and provenance edge (inputs of bench/scale.ts) ==');
if (units?.result) out.push(formatted(formatUnits, units.result), sectionLine('units', units));
else out.push(units ? `FAILED: ${units.error}` : 'skipped');

out.push('');
out.push('== 17. Bulk erasure: class-A subjects through POST /v1/erasures/batch, one replica vs two ==');
if (bulk?.result) out.push(formatted(formatBulk, bulk.result), sectionLine('bulk', bulk));
else out.push(bulk ? `FAILED: ${bulk.error}` : 'skipped');

out.push('');
out.push("== 18. Memory calls: LetheStore vs LangGraph's PostgresStore on the same PostgreSQL at 1/16/64 clients ==");
if (store?.result) out.push(formatted(formatStore, store.result), sectionLine('store', store));
else out.push(store ? `FAILED: ${store.error}` : 'skipped');

out.push('');
out.push('== 19. Sharded indexes: per-replica vectors and memory at 1/2/3 replicas, scoped search through peers, takeover after a SIGKILL ==');
if (shards?.result) out.push(formatted(formatShards, shards.result), sectionLine('shards', shards));
else out.push(shards ? `FAILED: ${shards.error}` : 'skipped');

const summary: string[][] = [];
// one section's malformed result costs the summary rows from it on, not the aims, the wall time and results.json
try {
  if (lease?.result) {
    const r = lease.result;
    summary.push([
      'lease req/s ÷ /healthz req/s',
      `${fmtNum(r.lease.reqPerSec, 0)} / ${fmtNum(r.healthz.reqPerSec, 0)}`,
      fmtRatio(r.ratio),
      `target >= ${r.target}: ${r.ratio >= r.target ? 'met' : 'NOT met'}${r.valid ? '' : '; INVALID RUN (errors)'}`,
    ]);
  }
  if (envelope?.result) {
    for (const s of envelope.result.sizes) {
      summary.push([
        `envelope ${fmtBytes(s.sizeBytes)}: lethe MB/s ÷ AES-256-GCM MB/s`,
        `${fmtNum(s.lethe.mbPerSec, 2)} / ${fmtNum(s.aesGcm.mbPerSec, 2)}`,
        fmtRatio(s.ratio),
        '',
      ]);
    }
  }
  if (rewrap?.result) {
    const r = rewrap.result;
    summary.push([
      `rotation keys/s ÷ crypto-only keys/s (${r.keys.toLocaleString('en-US')} keys)`,
      `${fmtNum(r.large.rotation.keysPerSec, 0)} / ${fmtNum(r.crypto.keysPerSec, 0)}`,
      fmtRatio(r.rotationVsCrypto),
      `rotation ${fmtSeconds(r.large.rotation.seconds)}, crypto alone ~${fmtSeconds(r.cryptoSecondsExtrapolated)}`,
    ]);
    summary.push([
      `rotation peak live heapUsed ${r.large.keys.toLocaleString('en-US')} ÷ ${r.small.keys.toLocaleString('en-US')} keys`,
      `${(r.large.liveHeap.peakHeapUsed / 2 ** 20).toFixed(1)} / ${(r.small.liveHeap.peakHeapUsed / 2 ** 20).toFixed(1)} MiB`,
      fmtRatio(r.liveHeapRatio),
      `${Math.abs(r.liveHeapRatio - 1) <= 0.2 ? 'flat' : 'NOT flat'} (live heap: after forced GCs at ~10 batches); garbage included ` +
        `${(r.large.memoryPeak.heapUsed / 2 ** 20).toFixed(1)} / ${(r.small.memoryPeak.heapUsed / 2 ** 20).toFixed(1)} MiB, ${fmtRatio(r.peakHeapRatio)}`,
    ]);
    summary.push(['rotation verified (sample unwraps, old epoch retired)', '', '', r.small.verification.ok && r.large.verification.ok ? 'ok' : 'FAILED']);
  }
  if (append?.result) {
    const r = append.result;
    summary.push([
      'append entries/s: LetheWriter ÷ plain put, same batching',
      `${fmtNum(r.writer.entriesPerSec, 0)} / ${fmtNum(r.baseline.entriesPerSec, 0)}`,
      fmtRatio(r.ratio),
      `target >= ${r.target}: ${r.ratio >= r.target ? 'met' : 'NOT met'}; writer ${fmtNum(r.writer.mbPerSec, 2)} MB/s of text${r.valid ? '' : '; INVALID RUN (see warnings)'}`,
    ]);
    summary.push([
      `read entries/s (GET .../entries, ${r.read.subjects.toLocaleString('en-US')} subjects)`,
      fmtNum(r.read.entriesPerSec, 0),
      '',
      `${fmtNum(r.read.segmentGetsPerRequest, 1)} ranged GETs per request (one per frame); ${fmtRatio(r.read.readAmplification)} bytes fetched per text byte`,
    ]);
    summary.push([
      'stored bytes of overhead per frame (512 B entries)',
      fmtNum(r.overhead.perFrame, 1),
      '',
      `envelope fixed ${r.overhead.envelopeFixed} B (key id ${r.overhead.keyIdLength} B); predicted ${fmtNum(r.overhead.predictedPerFrame, 1)} B`,
    ]);
  }
  if (provenance?.result) {
    const t = provenance.result.touching;
    const g = provenance.result.regeneration;
    summary.push([
      `touchingSubject median ms, ${fmtInt(t.large.edges)} ÷ ${fmtInt(t.small.edges)} edges (${t.expected} artifacts)`,
      `${fmtNum(t.large.query.medianMs, 2)} / ${fmtNum(t.small.query.medianMs, 2)}`,
      fmtRatio(t.ratio),
      `aim <= ${t.target}: ${t.ratio <= t.target ? 'met' : 'NOT met'}; p95 ${fmtNum(t.large.query.p95Ms, 2)} / ${fmtNum(t.small.query.p95Ms, 2)} ms; ` +
        `plan at ${fmtInt(t.large.edges)}: ${fmtInt(t.large.plan.sharedHit + t.large.plan.sharedRead)} buffers, ` +
        `${t.large.plan.seqScans.length ? `whole-table scans: ${t.large.plan.seqScans.join(', ')}` : 'index scans only'}` +
        (t.small.plan.seqScans.length ? `; the ${fmtInt(t.small.edges)}-edge plan hashes the whole provenance table` : ''),
    ]);
    if (t.small.indexPathQuery && t.indexPathRatio !== null) {
      summary.push([
        `  same, ${fmtInt(t.small.edges)}-edge graph forced onto the index path (enable_seqscan off)`,
        `${fmtNum(t.large.query.medianMs, 2)} / ${fmtNum(t.small.indexPathQuery.medianMs, 2)}`,
        fmtRatio(t.indexPathRatio),
        `aim <= ${t.target}: ${t.indexPathRatio <= t.target ? 'met' : 'NOT met'}`,
      ]);
    }
    summary.push([
      'artifacts regenerated/s ÷ artifacts written/s (built-in regenerator)',
      `${fmtNum(g.regenerate.perSec, 1)} / ${fmtNum(g.write.perSec, 1)}`,
      fmtRatio(g.ratio),
      `${fmtInt(g.regenerate.regenerated)} regenerated; verification ${g.verification.ok ? 'ok' : 'FAILED'}`,
    ]);
  }
  if (search?.result) summary.push(...searchSummary(search.result));
  if (backup?.result) {
    const r = backup.result;
    const p = r.propagation;
    summary.push([
      `backup objects/s ÷ plain copy objects/s (${fmtInt(r.live.objects)} objects, ${fmtNum(r.live.bytes / 1e6, 1)} MB)`,
      `${fmtNum(r.full.objectsPerSec, 0)} / ${fmtNum(r.baseline.objectsPerSec, 0)}`,
      fmtRatio(r.ratio),
      `${fmtNum(r.full.mbPerSec, 3)} / ${fmtNum(r.baseline.mbPerSec, 3)} MB/s; copy = mean of one before and one after ` +
        `(${fmtNum(r.copies.before.seconds, 1)} / ${fmtNum(r.copies.after.seconds, 1)} s); objects phase alone ${fmtRatio(r.objectsPhaseRatio)}`,
    ]);
    summary.push([
      'incremental backup (nothing new) seconds ÷ full backup seconds',
      `${fmtNum(r.incremental.seconds, 1)} / ${fmtNum(r.full.seconds, 1)}`,
      fmtRatio(r.incremental.seconds / r.full.seconds),
      `${fmtInt(r.incremental.copied)} copied, ${fmtInt(r.incremental.reused)} reused; ${fmtNum(r.incremental.objectsPerSec, 0)} objects/s`,
    ]);
    summary.push([
      `propagation ms: key in ${fmtInt(p.holders)} backups ÷ key in 1 backup`,
      `${fmtNum(p.many.medianPropagateMs, 0)} / ${fmtNum(p.one.medianPropagateMs, 1)}`,
      fmtRatio(p.ratio),
      `bytes written per destruction ${fmtInt(p.bytesWritten.many)} / ${fmtInt(p.bytesWritten.one)} B (${fmtRatio(p.bytesWritten.ratio)}; no manifest rewritten, ${fmtNum(p.manifestBytes / 1e6, 2)} MB each); ${fmtInt(p.extraBackups)} extra holders ${p.extras}; ` +
        `checks ${[...p.one.samples, ...p.many.samples].every((s) => s.ok) ? 'ok' : 'FAILED'}${r.valid ? '' : '; INVALID RUN (see warnings)'}`,
    ]);
  }
  if (erasure?.result) {
    const r = erasure.result;
    const shape = `${fmtInt(r.shape.entriesPerSubject)} entries, ${r.shape.summariesPerSubject + r.shape.digestsPerSubject} artifacts`;
    for (const b of r.backends) {
      const base = b.sizes[0]!;
      for (const x of b.sizes.slice(1)) {
        summary.push([
          `erasure median ms on ${b.backend} (${shape}, over HTTP), ${fmtInt(x.counts.entries)} ÷ ${fmtInt(base.counts.entries)} entries`,
          `${fmtNum(x.medianWallMs, 0)} / ${fmtNum(base.medianWallMs, 0)}`,
          fmtRatio(x.ratio),
          (r.aims.find((a) => a.name === `erasure ${b.backend} ${x.factor}x store ÷ base`)?.aim ?? '') + (r.valid ? '' : '; INVALID RUN (see warnings)'),
        ]);
      }
    }
  }
  if (probe?.result) {
    const q = probe.result.quality;
    const s = probe.result.scale;
    const pct = (x: number | null) => (x === null ? 'n/a' : `${fmtNum(x * 100, 1)}%`);
    summary.push([
      `probe recall on the evaluation set (${q.pairs} pairs)`,
      q.categories
        .filter((c) => c.positive)
        .map((c) => pct(c.recall))
        .join(' / '),
      '',
      `${q.categories
        .filter((c) => c.positive)
        .map((c) => c.category)
        .join(' / ')}; false positives ` +
        `${q.categories
          .filter((c) => !c.positive)
          .map((c) => `${c.category} ${c.falsePositives}`)
          .join(', ')}; precision ${pct(q.precision)}`,
    ]);
    summary.push([
      `lexical probe median ms (${fmtInt(s.small.subjectRecords)} records), ${fmtInt(s.large.records)} ÷ ${fmtInt(s.small.records)} records`,
      `${fmtNum(s.large.probe.medianMs, 1)} / ${fmtNum(s.small.probe.medianMs, 1)}`,
      fmtRatio(s.ratio),
      `aim <= ${s.target}: ${s.ratio <= s.target ? 'met' : 'NOT met'}; ${fmtInt(s.large.examined)} / ${fmtInt(s.small.examined)} candidates examined` +
        (probe.result.valid ? '' : '; INVALID RUN (see warnings)'),
    ]);
    summary.push([
      `shingle index bytes per record, ${fmtInt(s.large.records)} ÷ ${fmtInt(s.small.records)} records`,
      `${fmtNum(s.large.memory.bytesPerRecord, 0)} / ${fmtNum(s.small.memory.bytesPerRecord, 0)}`,
      fmtRatio(s.memoryRatio),
      `${fmtNum(s.large.memory.deltaBytes / 2 ** 30, 2)} GiB at ${fmtInt(s.large.records)}; ${fmtInt(s.large.distinct)} posting lists`,
    ]);
  }
  if (faults?.result) {
    const r = faults.result;
    summary.push([
      `append entries/s: ${r.latencyMs} ms latency on database and store ÷ direct`,
      `${fmtNum(r.slow.entriesPerSec, 0)} / ${fmtNum(r.direct.entriesPerSec, 0)}`,
      fmtRatio(r.ratio),
      `the proxy without latency ÷ direct ${fmtRatio(r.proxyRatio)}${r.valid ? '' : '; INVALID RUN (errors)'}`,
    ]);
  }
  if (streams?.result) {
    const r = streams.result;
    summary.push([
      `lease p50 with ${r.streams} events streams open ÷ none`,
      `${fmtNum(r.with.load.latencyMs.p50, 0)} / ${fmtNum(r.without.load.latencyMs.p50, 0)} ms`,
      fmtRatio(r.p50Ratio),
      `target <= ${r.target}: ${r.p50Ratio <= r.target ? 'met' : 'NOT met'}; p99 ${fmtRatio(r.p99Ratio)}${r.valid ? '' : '; INVALID RUN'}`,
    ]);
  }
  if (scoped?.result) {
    const r = scoped.result;
    summary.push([
      `scoped search median ms (one subject, k = ${r.k}) ÷ allSubjects, ${fmtInt(r.vectors)} vectors`,
      `${fmtNum(r.service.scoped.stats.medianMs, 2)} / ${fmtNum(r.service.global.stats.medianMs, 2)}`,
      fmtRatio(r.service.ratio),
      `p95 ${fmtNum(r.service.scoped.stats.p95Ms, 2)} / ${fmtNum(r.service.global.stats.p95Ms, 2)} ms (${fmtRatio(r.service.p95Ratio)}); ranking alone ${fmtRatio(r.index.ratio)}` +
        (r.warnings.length === 0 ? '' : '; INVALID RUN (see warnings)'),
    ]);
  }
  if (forget?.result) {
    const r = forget.result;
    const lg = r.legacy.large;
    summary.push([
      `forget one memory median ms, subject of ${fmtInt(r.large.memories)} ÷ ${fmtInt(r.small.memories)} memories`,
      `${fmtNum(r.large.medianWallMs, 0)} / ${fmtNum(r.small.medianWallMs, 0)}`,
      fmtRatio(r.ratio),
      `aim <= ${r.target}: ${r.ratio <= r.target ? 'met' : 'NOT met'}; destroy step ${fmtNum(r.large.medianDestroyMs, 0)} / ${fmtNum(r.small.medianDestroyMs, 0)} ms (${fmtRatio(r.destroyRatio)}); ` +
        `event loop held up to ${fmtNum(r.large.medianEventLoopMaxMs, 0)} / ${fmtNum(r.small.medianEventLoopMaxMs, 0)} ms` +
        (r.valid ? '' : '; INVALID RUN (see warnings)'),
    ]);
    if (r.large.rekeyMedian) {
      summary.push([
        `  re-key: ${fmtInt(lg.memories)} legacy frames rewritten ÷ one shard's record keys re-wrapped (${fmtInt(r.large.rekeyMedian.rewritten)})`,
        `${fmtNum(lg.parts.totalMs, 0)} / ${fmtNum(r.large.rekeyMedian.totalMs, 0)}`,
        fmtRatio(lg.parts.totalMs / r.large.rekeyMedian.totalMs),
        "the previous design (every frame read, opened, re-sealed, stored) vs the forgets' destroy-step re-key",
      ]);
    }
  }
  if (providers?.result) {
    const r = providers.result;
    const local = localRun(r);
    const c1 = (run: typeof local) => run.throughput.find((f) => f.concurrency === 1)!;
    const c16 = (run: typeof local) => run.throughput.find((f) => f.concurrency === 16)!;
    for (const run of r.runs.filter((x) => x.kind !== 'local')) {
      summary.push([
        `${run.kind} wraps/s ÷ local keyring wraps/s, concurrency 1`,
        `${fmtNum(c1(run).wrapsPerSec, 0)} / ${fmtNum(c1(local).wrapsPerSec, 0)}`,
        fmtRatio(c1(run).wrapsPerSec / c1(local).wrapsPerSec),
        `figures only; unwraps ${fmtRatio(c1(run).unwrapsPerSec / c1(local).unwrapsPerSec)}; concurrency 16: wraps ` +
          `${fmtRatio(c16(run).wrapsPerSec / c16(local).wrapsPerSec)}, unwraps ${fmtRatio(c16(run).unwrapsPerSec / c16(local).unwrapsPerSec)}`,
      ]);
      const n = rotationSecondsFor(run, r.keys);
      const localN = rotationSecondsFor(local, r.keys);
      summary.push([
        `${run.kind} rotation keys/s ÷ local keyring keys/s (${fmtInt(run.rotation.keys)} ÷ ${fmtInt(local.rotation.keys)} keys)`,
        `${fmtNum(run.rotation.rotation.keysPerSec, 0)} / ${fmtNum(local.rotation.rotation.keysPerSec, 0)}`,
        fmtRatio(run.rotation.rotation.keysPerSec / local.rotation.rotation.keysPerSec),
        `figures only; ${fmtInt(r.keys)} keys: ${fmtSeconds(n.seconds)}${n.computed ? ' (computed from the rate)' : ''} vs ${fmtSeconds(localN.seconds)}` +
          (run.rotation.verification.ok ? '' : '; VERIFICATION FAILED'),
      ]);
    }
    if (!local.rotation.verification.ok) summary.push(['local keyring rotation verified', '', '', 'FAILED']);
  }
  if (keysSection?.result) {
    const r = keysSection.result;
    for (const p of r.points) {
      summary.push([
        `key creation (PUT .../key) ÷ bare PostgreSQL insert-and-commit, ${p.clients} client${p.clients === 1 ? '' : 's'}`,
        `${fmtNum(p.keys.reqPerSec, 0)} / ${fmtNum(p.bare.perSec, 0)}`,
        fmtRatio(p.ratio),
        p.clients === r.connections ? `aim >= 0.5: ${p.ratio >= 0.5 ? 'met' : 'NOT met'}${r.valid ? '' : '; INVALID RUN (see warnings)'}` : 'reported',
      ]);
    }
    summary.push([
      `bulk key creation keys/s (POST /v1/keys/batch, ${fmtInt(r.bulk.subjects)} subjects) ÷ 10,000/s`,
      `${fmtNum(r.bulk.medianKeysPerSec, 0)} / 10,000`,
      fmtRatio(r.bulk.medianKeysPerSec / 10_000),
      `aim >= 1: ${r.bulk.medianKeysPerSec >= 10_000 ? 'met' : 'NOT met'}`,
    ]);
    for (const p of r.providers) {
      summary.push([
        `${p.kind}: warm lease /s and key creation /s ÷ local keyring, ${r.connections} connections`,
        `${fmtNum(p.lease.reqPerSec, 0)} / ${fmtNum(r.local.lease.reqPerSec, 0)}; ${fmtNum(p.create.reqPerSec, 0)} / ${fmtNum(r.local.create.reqPerSec, 0)}`,
        `${fmtRatio(p.leaseRatio)}; ${fmtRatio(p.createRatio)}`,
        'figures only',
      ]);
    }
  }
  if (bulk?.result) {
    const r = bulk.result;
    summary.push([
      `bulk erasure subjects/s, 2 replicas ÷ 1 (${fmtInt(r.subjects)} class-A subjects, one machine and one PostgreSQL)`,
      `${fmtNum(r.two.subjectsPerSec, 1)} / ${fmtNum(r.one.subjectsPerSec, 1)}`,
      fmtRatio(r.ratio),
      `aim > 1: ${r.ratio > 1 ? 'met' : 'NOT met'}; ledger chain records per erasure ${fmtNum(r.one.ledgerPerErasure, 2)} / ${fmtNum(r.two.ledgerPerErasure, 2)}`,
    ]);
  }
  if (shards?.result) {
    const r = shards.result;
    const n3 = r.phases.find((p) => p.replicas === 3);
    if (n3) {
      summary.push([
        `max vectors per replica, 3 sharded replicas ÷ 1 (${r.shards} shards, ${fmtInt(r.vectors)} vectors)`,
        `${fmtInt(n3.maxVectors)} / ${fmtInt(r.phases[0]!.maxVectors)}`,
        fmtRatio(n3.vectorShare),
        `aim <= 0.40: ${n3.vectorShare <= 0.4 ? 'met' : 'NOT met'}; RSS ${n3.perReplica.map((p) => fmtNum(p.rssBytes / 2 ** 20, 0)).join(' / ')} MiB vs ${fmtNum(r.phases[0]!.perReplica[0]!.rssBytes / 2 ** 20, 0)} MiB at 1`,
      ]);
    }
    summary.push([
      'scoped search p50 ms, 3 sharded replicas (round robin) ÷ 1 unsharded',
      `${fmtNum(r.search.sharded.stats.medianMs, 2)} / ${fmtNum(r.search.unsharded.stats.medianMs, 2)}`,
      fmtRatio(r.search.p50Ratio),
      `aim <= 1.5: ${r.search.p50Ratio <= 1.5 ? 'met' : 'NOT met'}; p95 ${fmtRatio(r.search.p95Ratio)}`,
    ]);
    summary.push([
      'shard takeover after a SIGKILL: seconds to every shard ready and searched whole ÷ 30 s',
      `${fmtNum(r.takeover.wholeSeconds, 1)} / 30`,
      fmtRatio(r.takeover.wholeSeconds / 30),
      `aim <= 1: ${r.takeover.wholeSeconds <= 30 ? 'met' : 'NOT met'}; owned again after ${fmtNum(r.takeover.takenSeconds, 1)} s (the lease), ready ${fmtNum(r.takeover.readySeconds, 1)} s` +
        (r.warnings.length === 0 ? '' : '; INVALID RUN (see warnings)'),
    ]);
  }
} catch (e) {
  summary.push(['(summary rows stopped here)', '', '', `FAILED: ${(e as Error).message}`]);
}
out.push('');
out.push('== Summary (ratio = measured ÷ same-run baseline) ==');
out.push(table(['figure', 'measured / baseline', 'ratio', 'note'], summary));
const failed = Object.entries(sections)
  .filter(([, s]) => !s.ok)
  .map(([n]) => n);

// every section's `aims` (sections without any do not appear)
const aims = Object.entries(sections).flatMap(([name, s]) => ((s?.result as { aims?: Aim[] } | undefined)?.aims ?? []).map((a) => ({ section: name, ...a })));
out.push('');
out.push('== Aims (same-run ratios against the aims in docs/performance.md) ==');
if (aims.length > 0) {
  // judged at the section's start, after up to SETTLE_MS for the previous section's load to decay: other work does not
  const busy = (section: string) => startedBusy(sections[section as Name]);
  out.push(
    table(
      ['section', 'figure', 'ratio', 'aim', 'verdict', '1-min load'],
      aims.map((a) => [
        a.section,
        a.name,
        fmtRatio(a.ratio),
        a.aim,
        `${a.met ? 'met' : 'NOT met'}${busy(a.section) ? ' (not comparable)' : ''}`,
        sections[a.section as Name]!.loadAvg1.map((l) => fmtNum(l, 2)).join(' -> '),
      ]),
    ),
  );
  const uncomparable = aims.filter((a) => busy(a.section)).length;
  out.push(
    `${aims.filter((a) => a.met).length} of ${aims.length} aims met` +
      (uncomparable > 0 ? `; ${uncomparable} from sections started at a 1-min load above ${COMPARABLE_LOAD} on ${os.cpus().length} CPUs: not comparable` : ''),
  );
} else out.push('no section of this run reported an aim');

// wall time per section (each in its own Node process: start-up included) against the default run's target
const runKind = QUICK ? 'BENCH_QUICK run' : FULL ? 'BENCH_FULL run' : only ? 'BENCH_ONLY subset' : 'default run';
out.push('');
out.push(`== Wall time (${runKind}) ==`);
out.push(
  table(
    ['section', 'seconds', '1-min load start -> end', 'status'],
    [
      ...Object.entries(sections).map(([name, s]) => [name, fmtNum(s.seconds, 1), s.loadAvg1.map((l) => fmtNum(l, 2)).join(' -> '), s.ok ? 'ok' : 'FAILED']),
      ['total, child start-up included', fmtNum(totalSeconds, 1), '', failed.length ? `FAILED: ${failed.join(', ')}` : 'ok'],
    ],
  ),
);
out.push(
  `total run time ${fmtSeconds(totalSeconds)}; target for the default \`npm run bench\` <= ${DEFAULT_RUN_TARGET_SECONDS} s (10 minutes)` +
    (runKind === 'default run' && selected.length === ALL.filter((n) => !NOT_DEFAULT.has(n)).length
      ? `: ${totalSeconds <= DEFAULT_RUN_TARGET_SECONDS ? 'met' : 'NOT met'}`
      : ` (not comparable: a ${runKind})`),
);
const maxLoad = Math.max(...Object.values(sections).flatMap((s) => s.loadAvg1));
const busyAtStart = Object.entries(sections).filter(([, s]) => startedBusy(s));
if (busyAtStart.length > 0) {
  out.push(
    `NOT COMPARABLE: ${busyAtStart.map(([n, s]) => `${n} (${fmtNum(s.loadAvg1[0], 2)})`).join(', ')} started at a 1-min load above ${COMPARABLE_LOAD} ` +
      `on ${os.cpus().length} CPUs: other work shared the machine; run again on a quiet one before quoting their figures.`,
  );
} else if (maxLoad > os.cpus().length) {
  out.push(
    `NOTE: the 1-min load average reached ${fmtNum(maxLoad, 2)} on ${os.cpus().length} CPUs, no section starting above ${COMPARABLE_LOAD}: ` +
      "the sections' own load; the ratios compare figures measured under the same conditions.",
  );
}
process.stdout.write(`${out.join('\n')}\n`);

await writeFile(
  resultsFile,
  `${JSON.stringify(
    {
      startedAt: started.toISOString(),
      finishedAt: new Date().toISOString(),
      totalSeconds,
      quick: QUICK,
      full: FULL,
      targetSeconds: DEFAULT_RUN_TARGET_SECONDS,
      aims,
      benchKeys: keys,
      machine: { node: process.version, platform: `${os.platform()} ${os.release()}`, cpus: os.cpus().length, cpuModel: cpu, totalMemBytes: os.totalmem() },
      lease: lease ?? null,
      envelope: envelope ?? null,
      rewrap: rewrap ?? null,
      append: append ?? null,
      provenance: provenance ?? null,
      search: search ?? null,
      backup: backup ?? null,
      erasure: erasure ?? null,
      probe: probe ?? null,
      faults: faults ?? null,
      streams: streams ?? null,
      scoped: scoped ?? null,
      retrieval: retrieval ?? null,
      forget: forget ?? null,
      supersede: supersede ?? null,
      providers: providers ?? null,
      keys: keysSection ?? null,
      units: units ?? null,
      bulk: bulk ?? null,
      store: store ?? null,
      shards: shards ?? null,
    },
    null,
    2,
  )}\n`,
);
progress(`wrote ${path.relative(process.cwd(), resultsFile)}`);
if (failed.length > 0) process.exitCode = 1;

/**
 * The scale plan's arithmetic (docs/scale.md): reads the per-unit costs the bench
 * measured and extrapolates them to a target store — by default 10,000,000 subjects,
 * 1,000,000,000 log entries and 100,000,000 artifacts — printing a markdown report.
 *
 *   npx tsx bench/scale.ts [results.json] [results-units.json]
 *   npm run bench:scale
 *
 * Inputs: bench/results.json (the last full `npm run bench`) for every section, and the
 * `units` section (bench/units.ts) from it, or — when that run predates the section —
 * from bench/results-units.json (`BENCH_ONLY=units npm run bench`). Every figure printed
 * says where it comes from: `measured` with its path in the results file, `computed`
 * with the formula over measured figures and parameters, or `parameter`. Nothing else
 * enters: every assumption (a memory budget, a partition size, a replica count) is a
 * parameter below, printed with its value, and can be changed from the environment:
 *
 *   SCALE_SUBJECTS (10,000,000)  SCALE_ENTRIES (1,000,000,000)  SCALE_ARTIFACTS (100,000,000)
 *   SCALE_EDGES_PER_ARTIFACT     (default: the units section's measured shape, 5)
 *   SCALE_ENTRY_TEXT_BYTES       (default: the units section's mean entry text)
 *   SCALE_INDEX_BUDGET_GIB (16)  memory per replica given to the in-memory indices
 *   SCALE_VECTORS_PER_REPLICA (1,000,000)  a shard size to quote memory and rebuild time for
 *   SCALE_PARTITION_GIB (16)     largest partition wanted (hash partitions by subject)
 *   SCALE_NODE_TIB (2)           PostgreSQL data one node is planned to hold before distributing
 *   SCALE_REPLICAS (1,4,16,64)   replica counts to compute for
 *   SCALE_ERASURE_LANES (4)      erasures one replica runs at once (LETHE_ERASURE_CONCURRENCY's default)
 *   SCALE_PUTS_PER_PREFIX (3,500) PUT/s one key prefix takes (AWS S3's documented per-prefix rate)
 *
 * Not a benchmark section: it measures nothing, runs in well under a second.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { BENCH_DIR } from './support/mode.js';
import { isMain } from './support/process.js';

// ------------------------------------------------------------------ inputs

type Json = Record<string, unknown>;

export interface Inputs {
  readonly results: Json;
  readonly resultsFile: string;
  /** Where the units section was read from. */
  readonly unitsFile: string;
}

export function loadInputs(resultsPath = path.join(BENCH_DIR, 'results.json'), unitsPath = path.join(BENCH_DIR, 'results-units.json')): Inputs {
  const results = JSON.parse(readFileSync(resultsPath, 'utf8')) as Json;
  let unitsFile = resultsPath;
  const hasUnits = (r: Json) => {
    const u = r.units as Json | null | undefined;
    return !!u && typeof u === 'object' && !!u.result;
  };
  if (!hasUnits(results)) {
    if (!existsSync(unitsPath)) throw new Error(`${resultsPath} has no units section and ${unitsPath} does not exist: run BENCH_ONLY=units npm run bench`);
    const units = JSON.parse(readFileSync(unitsPath, 'utf8')) as Json;
    if (!hasUnits(units)) throw new Error(`${unitsPath} has no units result`);
    results.units = units.units;
    results.unitsStartedAt = units.startedAt;
    unitsFile = unitsPath;
  } else {
    results.unitsStartedAt = results.startedAt;
  }
  return { results, resultsFile: resultsPath, unitsFile };
}

/** A value at a dotted path (array elements as `[i]` or `[key=value]`). */
function at(root: unknown, p: string): unknown {
  let cur: unknown = root;
  for (const part of p.split('.')) {
    const m = /^([^[]*)((?:\[[^\]]+\])*)$/.exec(part);
    if (!m) throw new Error(`bad path ${p}`);
    if (m[1]) cur = (cur as Json | undefined)?.[m[1]];
    for (const sel of m[2]!.match(/\[[^\]]+\]/g) ?? []) {
      const inner = sel.slice(1, -1);
      const arr = cur as unknown[] | undefined;
      if (!Array.isArray(arr)) throw new Error(`${p}: ${sel} on a non-array`);
      if (/^-?\d+$/.test(inner)) {
        const i = Number(inner);
        cur = arr[i < 0 ? arr.length + i : i];
      } else {
        const [k, v] = inner.split('=');
        cur = arr.find((x) => String((x as Json)[k!]) === v);
      }
    }
  }
  return cur;
}

// ------------------------------------------------------------------ figures

/** A number with where it comes from. */
export interface Fig {
  readonly v: number;
  /** `measured: <path>` | `computed: <formula>` | `parameter: <name>` */
  readonly how: string;
}

function envNum(name: string, fallback: number): number {
  const raw = process.env[name]?.trim();
  if (!raw) return fallback;
  const n = Number(raw.replace(/[_,]/g, ''));
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number`);
  return n;
}

const GiB = 2 ** 30;
const TiB = 2 ** 40;

function fmt(n: number, digits = 0): string {
  if (!Number.isFinite(n)) return 'n/a';
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** 1,234 B / 12.3 KiB / 45.6 GiB / 7.89 TiB */
function bytes(n: number): string {
  if (!Number.isFinite(n)) return 'n/a';
  const units: Array<[number, string]> = [
    [2 ** 50, 'PiB'],
    [TiB, 'TiB'],
    [GiB, 'GiB'],
    [2 ** 20, 'MiB'],
    [2 ** 10, 'KiB'],
  ];
  for (const [size, name] of units) if (n >= size) return `${fmt(n / size, n / size >= 100 ? 0 : n / size >= 10 ? 1 : 2)} ${name}`;
  return `${fmt(n)} B`;
}

function duration(s: number): string {
  if (!Number.isFinite(s)) return 'n/a';
  if (s < 120) return `${fmt(s, 1)} s`;
  if (s < 7200) return `${fmt(s / 60, 1)} min`;
  if (s < 3 * 86400) return `${fmt(s / 3600, 1)} h`;
  return `${fmt(s / 86400, 1)} days`;
}

function pow2ceil(n: number): number {
  if (n <= 1) return 1;
  return 2 ** Math.ceil(Math.log2(n));
}

// ------------------------------------------------------------------ the report

export function scaleReport(inputs: Inputs): string {
  const r = inputs.results;
  const rel = (f: string) => path.relative(process.cwd(), f) || f;
  const RES = rel(inputs.resultsFile);
  const UNITS = rel(inputs.unitsFile);
  /** A measured figure from the results (the units section's file when the path starts with `units.`). */
  const m = (p: string): Fig => {
    const v = at(r, p);
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`${p}: not a number in the results (${JSON.stringify(v)})`);
    return { v, how: `measured: ${p.startsWith('units.') ? UNITS : RES} → ${p}` };
  };
  const param = (name: string, fallback: number, note: string): Fig => ({
    v: envNum(name, fallback),
    how: `parameter: ${name}${process.env[name] ? '' : ' (default)'} — ${note}`,
  });
  const c = (v: number, formula: string): Fig => ({ v, how: `computed: ${formula}` });

  // ---------------------------------------------------------------- parameters
  const U = 'units.result';
  const shape = {
    edgesPerArtifact: m(`${U}.shape.sourcesPerArtifact`),
    entryText: m(`${U}.shape.meanEntryTextBytes`),
  };
  const P = {
    subjects: param('SCALE_SUBJECTS', 10_000_000, 'subjects with a live key'),
    entries: param('SCALE_ENTRIES', 1_000_000_000, 'log entries'),
    artifacts: param('SCALE_ARTIFACTS', 100_000_000, 'artifacts, one version each'),
    edgesPerArtifact: param(
      'SCALE_EDGES_PER_ARTIFACT',
      shape.edgesPerArtifact.v,
      `provenance edges per artifact (default: the units section's shape, ${shape.edgesPerArtifact.how})`,
    ),
    entryText: param(
      'SCALE_ENTRY_TEXT_BYTES',
      Math.round(shape.entryText.v),
      `mean entry text bytes (default: the units section's generated sentences, ${shape.entryText.how})`,
    ),
    indexBudget: param('SCALE_INDEX_BUDGET_GIB', 16, 'GiB of memory per replica given to the in-memory indices'),
    shardVectors: param('SCALE_VECTORS_PER_REPLICA', 1_000_000, 'a shard size to quote memory and rebuild time for'),
    partition: param('SCALE_PARTITION_GIB', 16, 'largest PostgreSQL partition wanted, GiB'),
    node: param('SCALE_NODE_TIB', 2, 'PostgreSQL data one node is planned to hold, TiB'),
    lanes: param('SCALE_ERASURE_LANES', 4, "erasures one replica runs at once (LETHE_ERASURE_CONCURRENCY's default, src/config/index.ts)"),
    putsPerPrefix: param('SCALE_PUTS_PER_PREFIX', 3_500, "PUT/s one key prefix takes (AWS S3's documented per-prefix rate; MinIO has no such limit)"),
  };
  const replicas = (process.env.SCALE_REPLICAS ?? '1,4,16,64')
    .split(',')
    .map((s) => Number(s.trim()))
    .filter((n) => Number.isSafeInteger(n) && n > 0);
  const S = P.subjects.v;
  const E = P.entries.v;
  const A = P.artifacts.v;
  const EDGES = A * P.edgesPerArtifact.v;

  const out: string[] = [];
  const row = (cells: string[]) => out.push(`| ${cells.join(' | ')} |`);
  const head = (cells: string[]) => {
    row(cells);
    row(cells.map(() => '---'));
  };
  const figRow = (name: string, f: Fig, shown: string) => row([name, shown, f.how]);

  out.push(`## Scale plan: ${fmt(S)} subjects, ${fmt(E)} entries, ${fmt(A)} artifacts`);
  out.push('');
  out.push(
    `Inputs: \`${RES}\` (run started ${String(r.startedAt)}) and the units section from \`${UNITS}\` (run started ${String(r.unitsStartedAt)}). ` +
      'Every line says whether it is measured (with its path in the results), computed (with the formula) or a parameter (an assumption, changeable from the environment).',
  );
  out.push('');
  out.push('### Parameters');
  out.push('');
  head(['parameter', 'value', 'source']);
  for (const [k, f] of Object.entries(P)) figRow(k, f, fmt(f.v));
  row(['replicas', replicas.join(', '), 'parameter: SCALE_REPLICAS' + (process.env.SCALE_REPLICAS ? '' : ' (default)')]);
  out.push('');

  // ---------------------------------------------------------------- per-unit inputs
  const unit = {
    subjectPg: m(`${U}.units.subject.pgBytes`),
    entryPg: m(`${U}.units.entry.pgBytes`),
    artifactPg: m(`${U}.units.artifact.pgBytes`),
    edgePg: m(`${U}.units.edge.pgBytes`),
    entryObj: m(`${U}.units.entry.objectBytes`),
    entryDisk: m(`${U}.units.entry.diskBytes`),
    artifactObj: m(`${U}.units.artifact.objectBytes`),
    artifactDisk: m(`${U}.units.artifact.diskBytes`),
    entryCpu: m(`${U}.units.entry.cpuSeconds`),
    artifactCpu: m(`${U}.units.artifact.cpuSeconds`),
    subjectCpu: m(`${U}.units.subject.cpuSeconds`),
    frameOverhead: m('append.result.overhead.perFrame'),
    entriesPerSegment: m('append.result.writer.entriesPerSegment'),
    writerRate: m('append.result.writer.entriesPerSec'),
    inprocRate: m(`${U}.units.entry.wallPerSec`),
    writerServiceCpu: m('append.result.writer.serviceCpuSeconds'),
    writerEntries: m('append.result.writer.entries'),
    vectorBytes: m('search.result.index.memory.bytesPerVector'),
    vectorBytesMarginal: m('search.result.index.memory.secondHalf.bytesPerVector'),
    vectorsMeasured: m('search.result.index.vectors'),
    shingleBytes: m('probe.result.scale.large.memory.bytesPerRecord'),
    shingleRecords: m('probe.result.scale.large.records'),
    rebuildPerMillion: m('search.result.rebuild.projectedSecondsPerMillion'),
    graphPerMillion: m('search.result.rebuild.projectedGraphSecondsPerMillion'),
    rewrap: m('rewrap.result.large.rotation.keysPerSec'),
    rewrapKeys: m('rewrap.result.large.keys'),
    rewrapCrypto: m('rewrap.result.crypto.keysPerSec'),
    leaseRate: m('lease.result.lease.reqPerSec'),
    leaseCpu: m('lease.result.lease.serviceCpuUsPerReq'),
    leaseAudit: m('lease.result.leaseAuditRows'),
    leaseTotal: m('lease.result.lease.requestsTotal'),
    leasesPerBatch: m('lease.result.leasesPerBatch'),
    keyCreate: m('keys.result.local.create.reqPerSec'),
    keyBulk: m('keys.result.bulk.medianKeysPerSec'),
    bareCommits: m('keys.result.points[clients=64].bare.perSec'),
    erasureWall: m('erasure.result.backends[backend=postgres].sizes[-1].medianWallMs'),
    erasureStore: m('erasure.result.backends[backend=postgres].sizes[-1].targetEntries'),
  };
  const providerRuns = (at(r, 'providers.result.runs') as Array<{ kind: string }> | undefined) ?? [];

  out.push('### Per-unit costs (the inputs)');
  out.push('');
  head(['figure', 'value', 'source']);
  const packedOf = (u: string) => m(`${U}.units.${u}.pgBytesPacked`).v;
  figRow(
    'PostgreSQL bytes per subject key (all tables it grows), slope (packed)',
    unit.subjectPg,
    `${fmt(unit.subjectPg.v)} B (${fmt(packedOf('subject'))} B)`,
  );
  figRow(
    'PostgreSQL bytes per log entry (log index + sealed embedding row), slope (packed)',
    unit.entryPg,
    `${fmt(unit.entryPg.v)} B (${fmt(packedOf('entry'))} B)`,
  );
  figRow('PostgreSQL bytes per artifact (its edges apart), slope (packed)', unit.artifactPg, `${fmt(unit.artifactPg.v)} B (${fmt(packedOf('artifact'))} B)`);
  figRow('PostgreSQL bytes per provenance edge, slope (packed)', unit.edgePg, `${fmt(unit.edgePg.v)} B (${fmt(packedOf('edge'))} B)`);
  figRow('object bytes per entry, one segment per entry (in-process append)', unit.entryObj, `${fmt(unit.entryObj.v)} B`);
  figRow('stored bytes over the text per frame, batched segments (writer client)', unit.frameOverhead, `${fmt(unit.frameOverhead.v, 1)} B`);
  figRow('entries per segment object (writer client)', unit.entriesPerSegment, fmt(unit.entriesPerSegment.v));
  figRow('object bytes per artifact', unit.artifactObj, `${fmt(unit.artifactObj.v)} B`);
  figRow('MinIO disk bytes per entry object / per artifact object (single drive)', unit.entryDisk, `${fmt(unit.entryDisk.v)} / ${fmt(unit.artifactDisk.v)} B`);
  figRow(
    `memory per vector in the HNSW index (at ${fmt(unit.vectorsMeasured.v)} vectors)`,
    unit.vectorBytes,
    `${fmt(unit.vectorBytes.v)} B (second half alone ${fmt(unit.vectorBytesMarginal.v)} B)`,
  );
  figRow(`memory per record in the shingle index (at ${fmt(unit.shingleRecords.v)} records)`, unit.shingleBytes, `${fmt(unit.shingleBytes.v)} B`);
  figRow('CPU per append, in-process writer path (this process only)', unit.entryCpu, `${fmt(unit.entryCpu.v * 1e6)} µs`);
  figRow(
    'service CPU per append, writer-client path',
    c(unit.writerServiceCpu.v / unit.writerEntries.v, `append.result.writer.serviceCpuSeconds ÷ append.result.writer.entries (${RES})`),
    `${fmt((unit.writerServiceCpu.v / unit.writerEntries.v) * 1e6)} µs`,
  );
  figRow('CPU per artifact write / per key creation, in-process', unit.artifactCpu, `${fmt(unit.artifactCpu.v * 1e6)} / ${fmt(unit.subjectCpu.v * 1e6)} µs`);
  figRow('service CPU per warm lease', unit.leaseCpu, `${fmt(unit.leaseCpu.v)} µs`);
  figRow('appends/s through the writer client, one replica', unit.writerRate, fmt(unit.writerRate.v));
  figRow('warm leases/s, one replica, 16 connections', unit.leaseRate, fmt(unit.leaseRate.v));
  figRow('key creations/s (PUT .../key), one replica, 16 connections', unit.keyCreate, fmt(unit.keyCreate.v));
  figRow(`KEK rotation keys/s, local keyring, ${fmt(unit.rewrapKeys.v)} keys`, unit.rewrap, fmt(unit.rewrap.v));
  figRow(`erasure wall ms, one subject, PostgreSQL store of ${fmt(unit.erasureStore.v)} entries (median)`, unit.erasureWall, fmt(unit.erasureWall.v));
  figRow('bare PostgreSQL insert-and-commit/s, 64 clients (the database ceiling on this machine)', unit.bareCommits, fmt(unit.bareCommits.v));
  out.push('');
  const load = at(r, 'units.loadAvg1') as number[] | undefined;
  out.push(
    `All on the 2-core development machine, PostgreSQL and MinIO on loopback; the units section ran with a 1-minute load average of ${load ? load.map((x) => fmt(x, 2)).join(' → ') : 'n/a'} ` +
      '(its CPU and rate figures are lower on a busy machine; its byte figures do not depend on load).',
  );
  out.push('');

  // ---------------------------------------------------------------- PostgreSQL
  out.push('### PostgreSQL: table sizes and partitions');
  out.push('');
  type TableIn = {
    table: string;
    bytesPerRow: number | null;
    bytesPerRowAtLarge: number | null;
    bytesPerRowPacked: number | null;
    rowsPer: { subject: number; entry: number; artifact: number };
  };
  const tables = (at(r, `${U}.tables`) as TableIn[] | undefined) ?? [];
  /** Bytes per row as a range: packed (VACUUM FULL) .. the larger of the slope and the whole-table figure at the large size. */
  const rowRange = (t: TableIn): [number, number] => {
    const hi = Math.max(t.bytesPerRow ?? 0, t.bytesPerRowAtLarge ?? 0);
    const lo = Math.min(t.bytesPerRowPacked ?? hi, hi);
    return [lo, hi];
  };
  const partBytes = P.partition.v * GiB;
  const partitionKey: Record<string, string> = {
    subject_keys: 'hash(subject_hash)',
    log_entries: 'hash(subject_hash)',
    embeddings: "hash(key_id): a subject's entry embeddings share its key id",
    audit_log: 'range(seq): append-only chain; old ranges detached and archived',
    artifacts: 'hash(artifact_id)',
    artifact_keys: 'hash(artifact_id)',
    provenance: 'hash(artifact_id)',
  };
  head(['table', 'rows', 'bytes per row (low – high)', 'size (low – high)', 'partitions (on high)', 'partition key', 'source']);
  let pgLow = 0;
  let pgHigh = 0;
  for (const t of tables) {
    if (t.bytesPerRow === null) continue;
    const perArtifact = t.table === 'provenance' ? P.edgesPerArtifact.v : t.rowsPer.artifact;
    const rows = t.rowsPer.subject * S + t.rowsPer.entry * E + perArtifact * A;
    const [lo, hi] = rowRange(t);
    pgLow += rows * lo;
    pgHigh += rows * hi;
    row([
      t.table,
      fmt(rows),
      `${fmt(lo)} – ${fmt(hi)}`,
      `${bytes(rows * lo)} – ${bytes(rows * hi)}`,
      fmt(pow2ceil((rows * hi) / partBytes)),
      partitionKey[t.table] ?? '—',
      `computed: (${fmt(t.rowsPer.subject, 2)}×subjects + ${fmt(t.rowsPer.entry, 2)}×entries + ${fmt(perArtifact, 2)}×artifacts${t.table === 'provenance' ? ' [SCALE_EDGES_PER_ARTIFACT]' : ''}) rows × B/row; measured: ${U}.tables[table=${t.table}]`,
    ]);
  }
  row(['**total**', '', '', `**${bytes(pgLow)} – ${bytes(pgHigh)}**`, '', '', 'computed: sum of the rows above']);
  out.push('');
  out.push(
    `Rows per unit: the rows each fill phase of the units section added ÷ its units (${UNITS}). Bytes per row, low: after VACUUM FULL of its larger store (bytesPerRowPacked: heap rewritten packed, indexes rebuilt); ` +
      'high: the larger of the slope of pg_total_relation_size (heap + indexes + TOAST, after VACUUM ANALYZE) between its two sizes (bytesPerRow) and the whole table ÷ its rows at the larger size (bytesPerRowAtLarge) — ' +
      'the free space concurrent inserts and B-tree page splits on random ids leave. ' +
      'Partitions: computed on the high size, the next power of two ≥ size ÷ SCALE_PARTITION_GIB (a power of two, so a partition splits in two by doubling the modulus). ' +
      "Tables of fixed size (epochs, audit_head, embedding_counts) and tables that hold rows only while work is in flight (index_queue, erasures, leases' batches) are not in the table; " +
      'neither are WAL, standbys or backups.',
  );
  out.push('');
  const nodes = Math.ceil(pgHigh / (P.node.v * TiB));
  const unitTotal = c(
    S * unit.subjectPg.v + E * unit.entryPg.v + A * unit.artifactPg.v + EDGES * unit.edgePg.v,
    'subjects × B/subject + entries × B/entry + artifacts × B/artifact + edges × B/edge, the slope figures',
  );
  out.push(`- The total from the per-unit slope figures alone: ${bytes(unitTotal.v)} (${unitTotal.how}).`);
  out.push(
    `- PostgreSQL nodes at SCALE_NODE_TIB = ${fmt(P.node.v)} TiB per node: **${fmt(nodes)}** on the high total (computed: ⌈high total ÷ SCALE_NODE_TIB⌉; one copy, no standbys, no WAL headroom) — ` +
      `${nodes <= 1 ? 'one node holds it: declarative hash partitioning by subject hash on one PostgreSQL' : 'more than one node: a distributed PostgreSQL (Citus) with the subject hash as the distribution column'}.`,
  );
  const ingestOne = c(E / unit.writerRate.v, `entries ÷ ${unit.writerRate.how}`);
  out.push(
    `- Writing ${fmt(E)} entries at the measured one-replica writer rate: ${duration(ingestOne.v)} (${ingestOne.how}); at N replicas ÷ N while the database keeps up (not measured above one replica).`,
  );
  out.push('');

  // ---------------------------------------------------------------- object store
  out.push('### Object store');
  out.push('');
  const writerEntryBytes = c(
    P.entryText.v + unit.frameOverhead.v,
    'SCALE_ENTRY_TEXT_BYTES + stored bytes over the text per frame (append.result.overhead.perFrame)',
  );
  const inprocEntryBytes = c(
    unit.entryObj.v - shape.entryText.v + P.entryText.v,
    `object bytes per entry (${U}.units.entry.objectBytes) − the measured mean text + SCALE_ENTRY_TEXT_BYTES`,
  );
  head(['prefix', 'objects', 'bytes (logical)', 'source']);
  row([
    '`log/seg_<id>` (writer client: batched segments)',
    fmt(E / unit.entriesPerSegment.v),
    bytes(E * writerEntryBytes.v),
    `computed: objects = entries ÷ entries per segment; bytes = entries × (${writerEntryBytes.how})`,
  ]);
  row(['`log/seg_<id>` (in-process append: one segment per entry)', fmt(E), bytes(E * inprocEntryBytes.v), `computed: entries × (${inprocEntryBytes.how})`]);
  row([
    '`artifacts/<art_id>/v<n>`',
    fmt(A),
    bytes(A * unit.artifactObj.v),
    `computed: artifacts × ${unit.artifactObj.how} (artifact text ≈ ${fmt(Number(at(r, `${U}.shape.meanArtifactTextBytes`)))} B)`,
  ]);
  out.push('');
  const diskInproc = c(E * unit.entryDisk.v + A * unit.artifactDisk.v, `entries × ${unit.entryDisk.how} + artifacts × …artifact.diskBytes`);
  out.push(
    `- MinIO single-drive disk for one object per entry plus the artifacts: ${bytes(diskInproc.v)} (${diskInproc.how}); erasure-coded or replicated deployments multiply this by their parity/copy factor.`,
  );
  for (const n of replicas) {
    const puts = c((n * unit.writerRate.v) / unit.entriesPerSegment.v, `${n} × writer appends/s ÷ entries per segment`);
    const putsInproc = c(n * unit.inprocRate.v, `${n} × ${unit.inprocRate.how}, one object each`);
    out.push(
      `- ${n} replica${n === 1 ? '' : 's'} appending at the measured rates: writer client ${fmt(puts.v, 1)} segment PUT/s (${puts.how}); in-process appends ${fmt(putsInproc.v)} PUT/s (${putsInproc.how}) → ` +
        `${fmt(Math.max(1, Math.ceil(putsInproc.v / P.putsPerPrefix.v)))} prefix(es) at SCALE_PUTS_PER_PREFIX (computed: ⌈PUT/s ÷ SCALE_PUTS_PER_PREFIX⌉).`,
    );
  }
  out.push('');

  // ---------------------------------------------------------------- in-memory indices
  out.push('### In-memory indices per replica');
  out.push('');
  const records = E + A;
  const vecMem = c(records * unit.vectorBytes.v, `(entries + artifacts) × ${unit.vectorBytes.how}`);
  const shMem = c(records * unit.shingleBytes.v, `(entries + artifacts) × ${unit.shingleBytes.how}`);
  const budget = P.indexBudget.v * GiB;
  const shards = c(Math.ceil((vecMem.v + shMem.v) / budget), '⌈(vector index + shingle index) ÷ SCALE_INDEX_BUDGET_GIB⌉');
  head(['index', 'records', 'memory', 'source']);
  row(['HNSW vectors (entries + artifacts)', fmt(records), bytes(vecMem.v), vecMem.how]);
  row(['shingle index (entries + artifacts)', fmt(records), bytes(shMem.v), shMem.how]);
  row(['**both**', '', `**${bytes(vecMem.v + shMem.v)}**`, 'computed: the sum']);
  out.push('');
  const perShard = records / shards.v;
  out.push(
    `- Shards by subject hash at SCALE_INDEX_BUDGET_GIB = ${fmt(P.indexBudget.v)} GiB per replica: **${fmt(shards.v)}** (${shards.how}), ` +
      `~${fmt(perShard)} records each (computed: records ÷ shards); every shard needs at least one replica, more for availability.`,
  );
  const shardMem = c(P.shardVectors.v * (unit.vectorBytes.v + unit.shingleBytes.v), 'SCALE_VECTORS_PER_REPLICA × (B per vector + B per shingle record)');
  const shardRebuild = c((P.shardVectors.v / 1e6) * unit.rebuildPerMillion.v, `SCALE_VECTORS_PER_REPLICA ÷ 10^6 × ${unit.rebuildPerMillion.how}`);
  const shardGraph = c((P.shardVectors.v / 1e6) * unit.graphPerMillion.v, `SCALE_VECTORS_PER_REPLICA ÷ 10^6 × ${unit.graphPerMillion.how}`);
  out.push(
    `- A replica holding ${fmt(P.shardVectors.v)} records: ${bytes(shardMem.v)} of indices (${shardMem.how}); searchable after a rebuild of ${duration(shardRebuild.v)} (${shardRebuild.how}), HNSW graph complete after ${duration(shardGraph.v)} (${shardGraph.how}).`,
  );
  const fullRebuild = c((perShard / 1e6) * unit.rebuildPerMillion.v, 'records per shard ÷ 10^6 × projected rebuild seconds per million');
  out.push(
    `- A replica of one ${fmt(P.indexBudget.v)} GiB shard (~${fmt(perShard)} records): searchable after ${duration(fullRebuild.v)} (${fullRebuild.how}).`,
  );
  out.push('');

  // ---------------------------------------------------------------- KEK rotation
  out.push('### KEK rotation');
  out.push('');
  const wrapped = c(
    S + A,
    "subjects (one subject key each) + artifacts (one artifact-version key each); entries' record keys are wrapped under subject keys, not the KEK: none is re-wrapped",
  );
  out.push(`- Keys to re-wrap: ${fmt(wrapped.v)} (${wrapped.how}).`);
  out.push('');
  head(['provider', 'replicas', 'keys/s', 'rotation time', 'source']);
  for (const n of replicas) {
    const t = c(wrapped.v / (n * unit.rewrap.v), `keys ÷ (${n} × ${unit.rewrap.how})`);
    row([
      'local keyring',
      String(n),
      fmt(n * unit.rewrap.v),
      duration(t.v),
      t.how +
        (n > 1
          ? '; assumes N replicas re-wrap in parallel without slowing each other (rotation is safe on several replicas at once: SKIP LOCKED batches) — not measured above one'
          : ''),
    ]);
  }
  for (const p of providerRuns) {
    if (p.kind === 'local') continue;
    const f = m(`providers.result.runs[kind=${p.kind}].rotation.rotation.keysPerSec`);
    const t = c(wrapped.v / f.v, `keys ÷ ${f.how}`);
    row([p.kind, '1', fmt(f.v), duration(t.v), t.how]);
  }
  const cryptoBound = c(wrapped.v / unit.rewrapCrypto.v, `keys ÷ ${unit.rewrapCrypto.how} (unwrap + wrap alone, no database)`);
  out.push('');
  out.push(`- The crypto alone on this machine: ${duration(cryptoBound.v)} per replica-equivalent (${cryptoBound.how}).`);
  out.push('');

  // ---------------------------------------------------------------- erasures, leases
  out.push('### Erasures and leases across replicas');
  out.push('');
  const perReplica = c(1000 / unit.erasureWall.v, `1000 ÷ ${unit.erasureWall.how}`);
  const steps = (at(r, 'erasure.result.backends[backend=postgres].sizes[-1].stepMedians') as Array<{ name: string; ms: number }> | undefined) ?? [];
  out.push(
    `- One erasure at a time per replica: ${fmt(perReplica.v, 2)} erasures/s (${perReplica.how}); its steps' medians: ` +
      `${steps.map((s) => `${s.name} ${fmt(s.ms)} ms`).join(', ')} (measured: ${RES} → erasure.result.backends[backend=postgres].sizes[-1].stepMedians; wall time, not CPU).`,
  );
  out.push('');
  head(['replicas', 'erasures/s, one lane each (lower bound)', `erasures/s, ${fmt(P.lanes.v)} lanes each (upper bound)`, 'erasures per day (lower)', 'source']);
  for (const n of replicas) {
    row([
      String(n),
      fmt(n * perReplica.v, 1),
      fmt(n * P.lanes.v * perReplica.v, 1),
      fmt(n * perReplica.v * 86400),
      `computed: N × erasures/s per replica (× SCALE_ERASURE_LANES for the upper bound: lanes overlapping perfectly, not measured); assumes the database is not the bottleneck`,
    ]);
  }
  out.push('');
  const erasureCommits = at(r, `${U}.erasure.commitsPerErasure`);
  if (typeof erasureCommits === 'number' && erasureCommits > 0) {
    const ec = m(`${U}.erasure.commitsPerErasure`);
    const dbBound = c(unit.bareCommits.v / ec.v, `bare commits/s (${unit.bareCommits.how}) ÷ commits per erasure (${ec.how})`);
    const atN = c(dbBound.v / perReplica.v, 'database-bound erasures/s ÷ erasures/s per replica (one lane)');
    const atNLanes = c(dbBound.v / (perReplica.v * P.lanes.v), 'database-bound erasures/s ÷ (erasures/s per replica × SCALE_ERASURE_LANES)');
    out.push(
      `- The database bound: one erasure made ${fmt(ec.v, 0)} commits (${ec.how}; in-process, reads and the worker's claims included, ` +
        `a subject of ${String((at(r, `${U}.erasure.shape`) as Array<{ entries: number }> | undefined)?.[0]?.entries ?? '?')} entries) and this machine's PostgreSQL took ${fmt(unit.bareCommits.v)} bare insert-and-commit/s at 64 clients (${unit.bareCommits.how}): ` +
        `**about ${fmt(dbBound.v, 1)} erasures/s for one database node** (${dbBound.how}) — an estimate, not a bound either way: the read-only commits among them cost less than an insert-and-commit, the multi-row writes more. ` +
        `The replicas would reach it at about ${fmt(atN.v, 1)} (one lane each; ${atN.how}) or ${fmt(atNLanes.v, 1)} (${fmt(P.lanes.v)} lanes; ${atNLanes.how}); past that, the rows above assume what one node cannot give: ` +
        'more database nodes (subject-hash shards under Citus), each with its own bound.',
    );
  } else {
    out.push(
      `- The database-bound figure measured here: ${fmt(unit.bareCommits.v)} bare insert-and-commit/s at 64 clients (${unit.bareCommits.how}). ` +
        'The units section in these results has no erasure commit count, so the replica count at which the database binds erasures is not computed.',
    );
  }
  out.push(`- The erasure's per-step times do not grow with the store from 1,000 to 100,000 entries (${RES} → erasure.result.aims).`);
  const auditPerLease = c(unit.leaseAudit.v / unit.leaseTotal.v, 'lease.result.leaseAuditRows ÷ lease.result.lease.requestsTotal');
  const commitsPerLease = c(1 / unit.leasesPerBatch.v, `1 ÷ ${unit.leasesPerBatch.how}`);
  const leaseBound = c(unit.bareCommits.v / (unit.leaseRate.v * commitsPerLease.v), 'bare commits/s ÷ (leases/s per replica × commits per lease)');
  out.push(
    `- Leases: ${fmt(unit.leaseRate.v)}/s per replica (${unit.leaseRate.how}), ${fmt(commitsPerLease.v, 3)} commits per lease (${commitsPerLease.how}): ` +
      `the database's bare commit rate is reached near ${fmt(leaseBound.v, 1)} replicas (${leaseBound.how}) — a bound, not a measurement of N replicas.`,
  );
  const auditTable = tables.find((t) => t.table === 'audit_log');
  const auditRowBytes = auditTable ? rowRange(auditTable)[1] : NaN;
  const auditDay = c(
    unit.leaseRate.v * auditPerLease.v * 86400 * auditRowBytes,
    `leases/s per replica × ${fmt(auditPerLease.v, 2)} audit rows per lease (${auditPerLease.how}) × 86,400 × audit_log bytes per row, high (${UNITS} → ${U}.tables[table=audit_log])`,
  );
  out.push(
    `- Audit growth from leases at one replica's measured lease rate: ${bytes(auditDay.v)} per day (${auditDay.how}); the audit chain appends serialize on one row (audit_head), so its rate is one node's whatever the partitioning.`,
  );
  out.push('');
  return out.join('\n');
}

if (isMain(import.meta.url)) {
  const [resultsArg, unitsArg] = process.argv.slice(2);
  const inputs = loadInputs(resultsArg ? path.resolve(resultsArg) : undefined, unitsArg ? path.resolve(unitsArg) : undefined);
  process.stdout.write(`${scaleReport(inputs)}\n`);
}

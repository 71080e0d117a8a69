/**
 * Scoped search at store scale: what a search scoped to one subject costs against the
 * global search over the same in-memory index, through the service layer
 * (vault.search.search: embed the query, find the subject's live key and the
 * artifacts above its entries, rank, check the candidate artifacts' closures, read the
 * hits back through their keys, issue the read fence). The HTTP route adds parsing and
 * the replica freshness check on top of either.
 *
 *   setup   a fresh lethe_bench_* database, the vault opened on it (local filesystem
 *           object store, no listener). MEASURED (5) subjects get 100 entries each
 *           through vault.log.append (the subject's key, the frame in a segment, the
 *           sealed embedding), 5 summaries of 20 of their entries each, and one summary
 *           shared with the next measured subject (in their closures, never in one
 *           subject's scope: the scoped search must check and drop it). The rest of
 *           the index — up to BENCH_SCOPED_VECTORS (default 20,000; 100,000 with BENCH_FULL=1)
 *           entry vectors over BENCH_SCOPED_SUBJECTS (default 200; 1,000 with BENCH_FULL=1), each with a
 *           shingle set of 24 random keyed hashes in the lexical index
 *           subjects in all — is SEEDED DIRECTLY into the in-memory index
 *           (vault.vectors.publish), ~100 per filler subject, each filler subject's
 *           vectors filed under a key id of its own: writing 100,000 real entries would
 *           take minutes (appends run at ~350/s), and a search ranks an index vector
 *           the same whatever is behind it. The filler vectors are random sparse unit
 *           vectors (as many non-zero dimensions as the embedder gives these sentences):
 *           they rank below the measured subjects' entries for the queries, so the
 *           global search reads back real hits, not unreadable filler (checked per
 *           query: its candidates must all be real records, else a warning).
 *   query   BENCH_SCOPED_RUNS (default 40; 15 when quick) generated sentences after 3
 *           unmeasured, round robin over the measured subjects, each timed as
 *           search(q, 10, { subjects: [s] }) then search(q, 10, { allSubjects: true }).
 *           Also the ranking step alone: index.searchWithin over the subject's key and
 *           its artifacts vs index.search over the whole index, same queries.
 *           Figures: p50 / p95 ms of each and scoped ÷ global.
 */
import { mulberry32 as prng, seededId } from '../fixtures/prng.js';
import { byMode, envInt } from './support/mode.js';
import { scratchVault } from './support/scratch.js';
import { runIfMain, sleep } from './support/process.js';
import { type Aim, aim, fmtInt, fmtNum, fmtRatio, fmtSeconds, type LatencyStats, progress, stats, table } from './support/report.js';
import { randomSparseUnit, sentences } from './search.js';

const MEASURED = 5;
const PER_SUBJECT = 100;
const SUMMARIES = 5;
const K = 10;
const WARMUPS = 3;
/** Shingles of a seeded record (a short memory's words and pairs). */
const FILLER_SHINGLES = 24;

export interface ScopedRun {
  readonly stats: LatencyStats;
  /** Mean hits answered. */
  readonly meanHits: number;
}

export interface ScopedResult {
  readonly vectors: number;
  readonly subjects: number;
  /** Entry vectors written through the service (the measured subjects'). */
  readonly realEntries: number;
  readonly realArtifacts: number;
  /** Entry vectors seeded directly into the index. */
  readonly seeded: number;
  readonly setupSeconds: number;
  readonly k: number;
  readonly service: { readonly scoped: ScopedRun; readonly global: ScopedRun; readonly ratio: number; readonly p95Ratio: number };
  readonly index: {
    readonly scoped: LatencyStats;
    readonly global: LatencyStats;
    readonly ratio: number;
    readonly p95Ratio: number;
    readonly scopeVectors: number;
  };
  /** Scoped hits outside the subject's own records (must be 0). */
  readonly leaks: number;
  /** Queries whose global candidates were all real records. */
  readonly globalReal: number;
  readonly runs: number;
  readonly warnings: string[];
  readonly aims: Aim[];
}

export async function runScoped(): Promise<ScopedResult> {
  const total = envInt('BENCH_SCOPED_VECTORS', byMode({ quick: 20_000, normal: 20_000, full: 100_000 }), 1_000);
  const subjects = envInt('BENCH_SCOPED_SUBJECTS', byMode({ quick: 200, normal: 200, full: 1_000 }), MEASURED + 1);
  const runs = envInt('BENCH_SCOPED_RUNS', byMode({ quick: 15, normal: 40, full: 40 }), 5);
  const warnings: string[] = [];
  const { vault, cleanup } = await scratchVault('scoped');
  try {
    const s0 = performance.now();
    const texts = sentences(MEASURED * PER_SUBJECT, 21);
    const measured = Array.from({ length: MEASURED }, (_, i) => `bench-scoped-${i}`);
    const own = new Map<string, Set<string>>(measured.map((s) => [s, new Set()]));
    const keyOf = new Map<string, string>();
    progress(`scoped: ${MEASURED} subjects x ${PER_SUBJECT} entries through vault.log.append`);
    const entries: Array<Array<{ id: string; text: string }>> = measured.map(() => []);
    for (let i = 0; i < MEASURED * PER_SUBJECT; i++) {
      const s = i % MEASURED;
      const r = await vault.log.append(measured[s]!, { text: texts[i]! }, 'bench');
      entries[s]!.push({ id: r.entryId, text: texts[i]! });
      own.get(measured[s]!)!.add(r.entryId);
      keyOf.set(measured[s]!, r.keyId);
    }
    let realArtifacts = 0;
    for (let s = 0; s < MEASURED; s++) {
      const mine = entries[s]!;
      for (let j = 0; j < SUMMARIES; j++) {
        const sources = mine.slice(j * 20, j * 20 + 20);
        const text = sources.map((e) => e.text.split(',')[0]).join('. ');
        const { artifactId } = await vault.artifacts.write({ kind: 'summary', text, sources: sources.map((e) => e.id) }, 'bench');
        own.get(measured[s]!)!.add(artifactId);
        realArtifacts++;
      }
      // shared with the next subject: in both closures, in neither subject's scope alone
      const next = entries[(s + 1) % MEASURED]!;
      await vault.artifacts.write({ kind: 'summary', text: `${mine[0]!.text} ${next[1]!.text}`, sources: [mine[0]!.id, next[1]!.id] }, 'bench');
      realArtifacts++;
    }

    const seeded = total - MEASURED * PER_SUBJECT;
    const fillers = subjects - MEASURED;
    progress(
      `scoped: seeding ${fmtInt(seeded)} entry vectors of ${fmtInt(fillers)} other subjects directly into the in-memory index (not written through the service)`,
    );
    const embedder = vault.vectors.embedder;
    let nnz = 0;
    for (const v of await embedder.embed(texts.slice(0, 200))) for (const x of v) if (x !== 0) nnz++;
    const nonZero = Math.round(nnz / 200);
    const rand = prng(31);
    const fillerKeys = Array.from({ length: fillers }, () => seededId('key_', rand));
    const batch: Array<{ recordId: string; recordType: 'entry'; keyId: string; vector: Float32Array; shingles: Float64Array }> = [];
    for (let i = 0; i < seeded; i++) {
      const vector = new Float32Array(embedder.dimensions);
      randomSparseUnit(vector, nonZero, rand);
      // a short record's shingle set (words and pairs), for the lexical index the hybrid ranking reads
      const shingles = Float64Array.from({ length: FILLER_SHINGLES }, () => Math.floor(rand() * 2 ** 53)).sort();
      batch.push({ recordId: seededId('entry_', rand), recordType: 'entry', keyId: fillerKeys[i % fillers]!, vector, shingles });
      if (batch.length === 5_000) vault.vectors.publish(batch.splice(0));
    }
    vault.vectors.publish(batch.splice(0));
    const vectors = vault.vectors.index.size;
    // steady state: the graph built over the seeded vectors (it is built in the background, on this thread)
    for (const until = performance.now() + 120_000; vault.vectors.index.graphPending > 0 && performance.now() < until; ) await sleep(100);
    if (vault.vectors.index.graphPending > 0) warnings.push(`${vault.vectors.index.graphPending} vectors still waiting for the graph after 120 s`);
    const setupSeconds = (performance.now() - s0) / 1000;
    progress(`scoped: index holds ${fmtInt(vectors)} vectors; setup ${fmtSeconds(setupSeconds)}`);

    const queries = sentences(WARMUPS + runs, 77);
    const scopedMs: number[] = [];
    const globalMs: number[] = [];
    const scopedIndexMs: number[] = [];
    const globalIndexMs: number[] = [];
    let scopedHits = 0;
    let globalHits = 0;
    let leaks = 0;
    let globalReal = 0;
    let scopeVectors = 0;
    const real = new Set([...own.values()].flatMap((s) => [...s]));
    for (const ids of await vault.artifacts.touchingSubjects(measured.map((s) => vault.keys.subjectHash(s)))) real.add(ids.artifactId);
    progress(`scoped: ${WARMUPS} + ${runs} queries, scoped and global in turn`);
    for (let r = 0; r < queries.length; r++) {
      const subject = measured[r % MEASURED]!;
      const q = queries[r]!;
      const a0 = performance.now();
      const scoped = await vault.search.search(q, K, { subjects: [subject] });
      const a1 = performance.now();
      const global = await vault.search.search(q, K, { allSubjects: true });
      const a2 = performance.now();
      // the ranking step alone, on the same index
      const [vector] = await embedder.embed([q]);
      const index = vault.vectors.index;
      const touching = (await vault.artifacts.touchingSubjects([vault.keys.subjectHash(subject)])).map((t) => t.artifactId);
      const b0 = performance.now();
      index.searchWithin(vector!, K * 2 + 4, { keyIds: [keyOf.get(subject)!], ids: touching });
      const b1 = performance.now();
      const candidates = index.search(vector!, K * 2 + 4);
      const b2 = performance.now();
      if (r < WARMUPS) continue;
      scopedMs.push(a1 - a0);
      globalMs.push(a2 - a1);
      scopedIndexMs.push(b1 - b0);
      globalIndexMs.push(b2 - b1);
      scopedHits += scoped.hits.length;
      globalHits += global.hits.length;
      for (const h of scoped.hits) if (!own.get(subject)!.has(h.id)) leaks++;
      if (candidates.every((c) => real.has(c.id))) globalReal++;
      scopeVectors = index.idsOfKey(keyOf.get(subject)!).length + touching.length;
    }
    if (leaks > 0) warnings.push(`${leaks} scoped hits were not the subject's own records`);
    if (globalReal < runs)
      warnings.push(
        `${runs - globalReal} of ${runs} global searches had seeded filler among their candidates (read back as unreadable: the global figure is then high)`,
      );
    if (scopedHits / runs < K) warnings.push(`scoped searches answered ${fmtNum(scopedHits / runs, 1)} hits on average, not ${K}`);
    const service = {
      scoped: { stats: stats(scopedMs, WARMUPS), meanHits: scopedHits / runs },
      global: { stats: stats(globalMs, WARMUPS), meanHits: globalHits / runs },
    };
    const idx = { scoped: stats(scopedIndexMs, WARMUPS), global: stats(globalIndexMs, WARMUPS) };
    return {
      vectors,
      subjects,
      realEntries: MEASURED * PER_SUBJECT,
      realArtifacts,
      seeded,
      setupSeconds,
      k: K,
      service: {
        ...service,
        ratio: service.scoped.stats.medianMs / service.global.stats.medianMs,
        p95Ratio: service.scoped.stats.p95Ms / service.global.stats.p95Ms,
      },
      index: { ...idx, ratio: idx.scoped.medianMs / idx.global.medianMs, p95Ratio: idx.scoped.p95Ms / idx.global.p95Ms, scopeVectors },
      leaks,
      globalReal,
      runs,
      warnings,
      aims: [
        aim(
          `scoped search p50 (hybrid, k = 10) at ${fmtInt(vectors)} memories ÷ 10 ms`,
          service.scoped.stats.medianMs / 10,
          '<= 1',
          service.scoped.stats.medianMs <= 10,
        ),
      ],
    };
  } finally {
    await cleanup();
  }
}

export function formatScoped(r: ScopedResult): string {
  const row = (name: string, s: LatencyStats, extra: string): string[] => [name, fmtNum(s.medianMs, 2), fmtNum(s.p95Ms, 2), fmtNum(s.maxMs, 2), extra];
  const lines = [
    `${fmtInt(r.vectors)} vectors in the index: ${fmtInt(r.realEntries)} entries and ${r.realArtifacts} artifacts of ${MEASURED} measured subjects written through the service, ` +
      `${fmtInt(r.seeded)} entry vectors of ${fmtInt(r.subjects - MEASURED)} other subjects seeded directly into the in-memory index (setup ${fmtSeconds(r.setupSeconds)}); ` +
      `k = ${r.k}, ${r.runs} queries after ${WARMUPS} warm-up, one at a time`,
    table(
      ['search', 'median ms', 'p95 ms', 'max ms', 'note'],
      [
        row(
          `vault.search.search, subject (${PER_SUBJECT} entries, ${SUMMARIES} own summaries, 2 shared)`,
          r.service.scoped.stats,
          `${fmtNum(r.service.scoped.meanHits, 1)} hits on average`,
        ),
        row('vault.search.search, allSubjects (baseline)', r.service.global.stats, `${fmtNum(r.service.global.meanHits, 1)} hits on average`),
        row(`index.searchWithin (the subject's ${fmtInt(r.index.scopeVectors)} vectors)`, r.index.scoped, 'ranking only'),
        row(`index.search (${fmtInt(r.vectors)} vectors)`, r.index.global, 'ranking only'),
      ],
    ),
    `scoped ÷ global: service ${fmtRatio(r.service.ratio)} (p95 ${fmtRatio(r.service.p95Ratio)}), ranking alone ${fmtRatio(r.index.ratio)} (p95 ${fmtRatio(r.index.p95Ratio)}); ` +
      `scoped hits outside the subject: ${r.leaks}; global searches whose candidates were all real records: ${r.globalReal} of ${r.runs}`,
  ];
  for (const w of r.warnings) lines.push(`WARNING: ${w}`);
  return lines.join('\n');
}

await runIfMain(import.meta.url, runScoped, formatScoped);

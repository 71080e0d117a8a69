/**
 * probe: can the subject still be reconstructed? Candidates from three sources — the
 * lexical index (readable records sharing a distinctive shingle with the fingerprints,
 * within the per-record postings budget), the vector index (adaptive-k neighbours of the fingerprints and of
 * every public attribute) and the provenance graph (the affected artifacts) — scored
 * against the fingerprints (src/erasure/probe.ts). A vector still indexed under an
 * unreadable key counts too; the matches are confirmed readable through their tiers.
 *
 * The probe runs only on an index that is caught up: while this replica rebuilds its
 * indexes it parks (uncounted); when its lexical index does not hold every stored
 * record of a live key (a missed notification) it reconciles it against the stored
 * rows; what it still cannot hold (a row that does not open, one written before
 * lexical indexing) parks it, and after MAX_INDEX_WAITS it fails the erasure naming
 * the coverage. A match that became unreadable while the probe ran parks it too (the
 * same count). Read-only, apart from reconciling this replica's in-memory indexes:
 * safe to run again.
 *
 * Nor does it certify over text it has not seen: entries a writer registered wait in
 * the indexing queue until the indexer embeds them (src/log/indexer.ts). The probe
 * takes the queue's high-water mark when it first runs and waits for every entry
 * queued up to it — QUEUE_WAIT_MS in place, then parked, at most MAX_QUEUE_WAITS times
 * (about 30 s in all); past that it probes what is indexed and records the entries it
 * could not see (`probe.unindexed`): the erasure ends `incomplete` with an `unindexed`
 * residual naming their count. Entries queued after the mark are writes made after the
 * probe started, as a write after the certificate would be.
 */
import type { Coverage } from '../../vectors/service.js';
import { type ProbePartInput, probePart } from '../probe-part.js';
import { ErasureKey } from '../erasure-key.js';
import { probedEvent } from '../probe-audit.js';
import { inEffect } from '../view.js';
import { forgottenEntries, targetOf } from '../state.js';
import { combineProbeScores, decodeFingerprints, type Fingerprints, PROBE_MAX_QUERIES, type ProbeScore, spread } from '../probe.js';
import type { ErasureResources } from '../resources.js';
import { Park, type Step, type StepContext } from './step.js';
import { TierFailure } from '../machine.js';

type ShardCover = { readonly shard: number; readonly stored: number; readonly indexed: number };

/** Parks while the index catches up, before the probe fails the erasure. */
export const MAX_INDEX_WAITS = 10;
/** Parks while a shard has no searchable owner (a lease running out, then a rebuild), before the probe fails the erasure (about 2 minutes). */
export const MAX_SHARD_WAITS = 120;
/**
 * How long the probe waits, uncounted, for shards a live replica is rebuilding before it fails the erasure: a rebuild
 * that never ends (a replica whose fill keeps failing holds its leases) must not park an erasure for ever. A whole
 * index's rebuild takes about 5 minutes at the plan's scale (docs/scale.md).
 */
export const MAX_REBUILD_WAIT_MS = 30 * 60_000;
const INDEX_WAIT_MS = 1000;
/** How long the probe waits in place, each time it runs, for the entries queued before it started. */
export const QUEUE_WAIT_MS = 2000;
/** Parks for them before it probes without them (and the erasure ends incomplete). */
export const MAX_QUEUE_WAITS = 10;

/**
 * Coverage of what is stored now: the counts when they agree (the usual case), else
 * this replica's index reconciled against a snapshot of the stored rows (loading what
 * it missed, dropping what it should not hold), so steady writes on other replicas
 * cannot keep the counts apart.
 */
async function currentCoverage(res: ErasureResources): Promise<Coverage> {
  const coverage = await res.vectors.coverage();
  if (coverage.rebuilding || coverage.indexed === sealedRows(coverage)) return coverage;
  return res.vectors.reconcile();
}

/** The sealed rows the lexical index must hold (the queued entries are waited for apart, up to the probe's mark). */
function sealedRows(coverage: Coverage): number {
  return coverage.stored - coverage.queued;
}

function scoreOf(list: ReadonlyArray<{ id: string; score: number }>, id: string): { score?: number } {
  const found = list.find((m) => m.id === id);
  return found ? { score: found.score } : {};
}

/**
 * Waits (bounded) for the entries queued for indexing before the probe started, and
 * until this replica's lexical index covers every stored record: a Park while it must
 * wait, the coverage and what stayed unindexed once it may probe.
 */
async function awaitQueue(res: StepContext['res'], state: StepContext['state']) {
  // the entries registered before the probe started are indexed first (bounded: past it, the erasure says what was not seen)
  const queueWait = res.probeQueueWait ?? { waitMs: QUEUE_WAIT_MS, parks: MAX_QUEUE_WAITS };
  state.queueMark ??= await res.log.indexer.mark();
  const unindexed = state.queueMark > 0 ? await res.log.indexer.waitIndexed({ mark: state.queueMark, timeoutMs: queueWait.waitMs }) : 0;
  if (unindexed > 0 && (state.queueWaits ?? 0) < queueWait.parks) {
    state.queueWaits = (state.queueWaits ?? 0) + 1;
    return new Park(
      new Date(Date.now() + INDEX_WAIT_MS),
      `${unindexed} entr${unindexed === 1 ? 'y' : 'ies'} registered before the probe started still wait in the indexing queue: waiting for ${unindexed === 1 ? 'it' : 'them'} (${state.queueWaits} of ${queueWait.parks})`,
    );
  }
  return { unindexed, queueWait };
}

async function awaitCoverage(res: StepContext['res'], state: StepContext['state'], replica: string) {
  const queued = await awaitQueue(res, state);
  if (queued instanceof Park) return queued;
  const { unindexed, queueWait } = queued;
  const coverage = await currentCoverage(res);
  if (coverage.rebuilding) {
    // a rebuild is progress: wait for it without counting the wait
    return new Park(new Date(Date.now() + INDEX_WAIT_MS), `the lexical index on replica ${replica} is being rebuilt: waiting for it to catch up`);
  }
  if (coverage.indexed !== sealedRows(coverage)) {
    const waits = (state.indexWaits ?? 0) + 1;
    const what = `the lexical index on replica ${replica} covers ${coverage.indexed} of ${sealedRows(coverage)} stored records`;
    if (waits > MAX_INDEX_WAITS) throw new TierFailure(`${what} after ${MAX_INDEX_WAITS} waits: the probe cannot certify on an index that is not caught up`);
    state.indexWaits = waits;
    return new Park(new Date(Date.now() + INDEX_WAIT_MS), `${what}: waiting for it to catch up (${waits} of ${MAX_INDEX_WAITS})`);
  }
  return { coverage, unindexed, queueWait };
}

/**
 * The probe's score, leaving out a supersession's successor chain (supersede.ts); a
 * successor written while it scored (the item's next update) is not a copy either:
 * scored again without it.
 */
async function scoreBeyondSuccessors<T extends ProbeScore>(
  res: ErasureResources,
  row: StepContext['row'],
  score: (successors: ReadonlySet<string>) => Promise<T>,
): Promise<{ scored: T; successors: ReadonlySet<string> }> {
  const successorsNow = async () => new Set(await res.log.successorsOf(forgottenEntries(row) ?? []));
  let successors = await successorsNow();
  let scored = await score(successors);
  for (let again = 0; again < 3 && scored.matches.length > 0; again++) {
    const later = await successorsNow();
    if (!scored.matches.some((m) => later.has(m.id) && !successors.has(m.id))) break;
    successors = later;
    scored = await score(successors);
  }
  return { scored, successors };
}

/** A resumed erasure's probe waits its whole bounds again (the cause is fixed, or a rebuild under way gets its full time). */
export function freshProbeWaits(state: StepContext['state']): void {
  delete state.indexWaits;
  delete state.shardWaits;
  delete state.rebuildSince;
}

/**
 * A sharded probe's coverage, from the parts the owners answered: every shard answered —
 * one with no searchable owner parks the probe, uncounted while a live owner rebuilds
 * it (a takeover is progress), MAX_SHARD_WAITS times otherwise, never certified without
 * — and for every shard the records its owner's index holds equal the sealed rows of
 * live keys stored in it, read by the owner just before it scored (else each owner
 * reconciles its shards at the next try, counted as the index waits).
 */
export async function shardedCoverage(
  res: Pick<StepContext['res'], 'vectors'>,
  state: StepContext['state'],
  parts: {
    count: number;
    missing: readonly number[];
    progressing: readonly number[];
    coverage: ReadonlyArray<{ shard: number; stored: number; indexed: number }>;
  },
): Promise<Coverage | Park> {
  if (parts.missing.length > 0) {
    const what = `index shard(s) ${parts.missing.join(', ')} of ${parts.count} have no searchable owner (unowned, rebuilding or not answering)`;
    if (parts.missing.every((s) => parts.progressing.includes(s))) {
      state.rebuildSince ??= new Date().toISOString();
      const since = Date.parse(state.rebuildSince);
      if (Date.now() - since > MAX_REBUILD_WAIT_MS)
        throw new TierFailure(
          `${what}: still rebuilding ${Math.round((Date.now() - since) / 60_000)} minutes after the probe first waited for them; the probe cannot certify without them`,
        );
      return new Park(new Date(Date.now() + INDEX_WAIT_MS), `${what}: a replica is rebuilding them (waiting since ${state.rebuildSince})`);
    }
    const waits = (state.shardWaits ?? 0) + 1;
    if (waits > MAX_SHARD_WAITS) throw new TierFailure(`${what} after ${MAX_SHARD_WAITS} waits: the probe cannot certify without them`);
    state.shardWaits = waits;
    return new Park(new Date(Date.now() + INDEX_WAIT_MS), `${what}: waiting for them (${waits} of ${MAX_SHARD_WAITS})`);
  }
  delete state.shardWaits;
  delete state.rebuildSince;
  const byShard = new Map(parts.coverage.map((c) => [c.shard, c]));
  const off = Array.from({ length: parts.count }, (_, s) => s).filter((s) => !byShard.has(s) || byShard.get(s)!.indexed !== byShard.get(s)!.stored);
  const stored = parts.coverage.reduce((n, c) => n + c.stored, 0);
  const indexed = parts.coverage.reduce((n, c) => n + c.indexed, 0);
  if (off.length > 0) {
    const waits = (state.indexWaits ?? 0) + 1;
    const what = `the lexical indexes of shard(s) ${off.join(', ')} of ${parts.count} do not hold exactly their stored records (${indexed} held of ${stored} in all)`;
    if (waits > MAX_INDEX_WAITS) throw new TierFailure(`${what} after ${MAX_INDEX_WAITS} waits: the probe cannot certify on an index that is not caught up`);
    state.indexWaits = waits;
    return new Park(new Date(Date.now() + INDEX_WAIT_MS), `${what}: each owner reconciles its shards (${waits} of ${MAX_INDEX_WAITS})`);
  }
  delete state.indexWaits;
  const { queued } = await res.vectors.coverage();
  return { indexed, stored: stored + queued, queued, rebuilding: false };
}

export const probe: Step = {
  name: 'probe',
  async run({ res, row, state }) {
    const scope = targetOf(row, state.keyId ?? null);
    for (const f of await res.tiers['key-table'].probe(scope, { vectors: [], records: [], neighbours: 0 })) {
      if (f.kind === 'live-key') throw new TierFailure(`tier key-table: the subject has a live key (${f.keyId}) after its destruction`);
    }
    if (!row.sealedFingerprints) throw new TierFailure('the probe fingerprints are missing: the probe cannot run');
    const replica = res.records.replica;
    const shards = res.shardProbes;
    // sharded: the coverage is counted from the parts the owners answer (below)
    const ready = shards ? await awaitQueue(res, state) : await awaitCoverage(res, state, replica);
    if (ready instanceof Park) return ready;
    const { unindexed, queueWait } = ready;
    let coverage: Coverage | undefined = 'coverage' in ready ? (ready.coverage as Coverage) : undefined;
    if (!shards) delete state.indexWaits;
    const key = await ErasureKey.unwrap(res.versionKeys, row);
    let fp: Fingerprints | undefined;
    let plain: Uint8Array | undefined;
    try {
      plain = key.open('fingerprints', row.sealedFingerprints);
      fp = decodeFingerprints(plain);
    } finally {
      plain?.fill(0);
      key.close();
    }
    const queries: Float32Array[] = [];
    try {
      const embedder = res.vectors.embedder;
      // vector queries: at most PROBE_MAX_QUERIES of the records, evenly spread (each a search of the HNSW graph, its cost about logarithmic in the store: src/vectors/vector-index.ts), and every public attribute
      if (fp.model === embedder.model) queries.push(...spread(fp.records, PROBE_MAX_QUERIES).map((r) => r.vector));
      if (fp.attributes.length) queries.push(...(await embedder.embed(fp.attributes)));
      res.failpoint?.('probe-candidates');
      // only rulings a second principal approved leave a record out (a proposal, a rejected or revoked one counts it)
      const rulings = (state.dismissals ?? []).filter(inEffect);
      const dismissed = new Map(rulings.map((d) => [d.id, { score: d.ruledScore, keyId: d.keyId }]));
      const provenance = (state.graph?.nodes ?? []).filter((n) => n.type === 'artifact').map((n) => n.id);
      const input = (successors: ReadonlySet<string>): ProbePartInput => ({
        model: fp!.model,
        records: fp!.records,
        queries,
        provenance,
        dismissed,
        successors,
        similarity: res.probeSimilarity,
      });
      // every shard's index probed (sharded: this replica's part and each owner's), or this replica's whole index
      let sharded = { count: shards?.count ?? 1, missing: [] as number[], progressing: [] as number[], coverage: [] as ShardCover[] };
      const { scored, successors } = await scoreBeyondSuccessors(res, row, async (successors) => {
        if (!shards) return probePart(res, scope, input(successors));
        const all = await shards.probe(scope, input(successors), { reconcile: (state.indexWaits ?? 0) > 0 }, (local, mine) =>
          probePart(res, scope, local, mine),
        );
        sharded = { ...sharded, missing: all.missing, progressing: all.progressing, coverage: all.parts.flatMap((p) => p.coverage ?? []) };
        return { ...combineProbeScores(all.parts), indexed: all.parts.reduce((n, p) => n + p.indexed, 0) };
      });
      const checked = shards ? await shardedCoverage(res, state, sharded) : coverage;
      if (checked instanceof Park) return checked;
      coverage = checked;
      if (!coverage) throw new TierFailure('the probe ran without its coverage');
      // a match is named only when its tier still reads it (or it is an indexed vector whose text is gone)
      const query = {
        vectors: [],
        records: scored.matches
          .filter((m) => m.tier !== 'vector-index')
          .map((m) => ({ id: m.id, type: m.tier === 'log' ? ('entry' as const) : ('artifact' as const) })),
        neighbours: 0,
      };
      const readable = new Set(
        [...(await res.tiers.log.probe(scope, query)), ...(await res.tiers.artifacts.probe(scope, query))].flatMap((f) => (f.kind === 'text' ? [f.id] : [])),
      );
      const gone = scored.matches.filter((m) => m.tier !== 'vector-index' && !readable.has(m.id)).length;
      // a match that became unreadable meanwhile (its key destroyed) carries nothing now: probe again on the index without it
      if (gone > 0) {
        const waits = (state.indexWaits ?? 0) + 1;
        if (waits > MAX_INDEX_WAITS)
          throw new TierFailure(`${gone} matched record(s) the index holds cannot be read, after ${MAX_INDEX_WAITS} probes: the probe cannot certify`);
        state.indexWaits = waits;
        return new Park(new Date(Date.now() + INDEX_WAIT_MS), `${gone} matched record(s) became unreadable while the probe ran: probing again`);
      }
      const { matches } = scored;
      delete state.queueMark;
      delete state.queueWaits;
      state.probe = {
        recovered: scored.recovered,
        threshold: res.probeThreshold,
        matches,
        examined: scored.examined,
        coverage: { indexed: coverage.indexed, stored: sealedRows(coverage), ...(coverage.queued > 0 ? { queued: coverage.queued } : {}) },
        ...(unindexed > 0 ? { unindexed } : {}),
        replica,
        cappedShingles: scored.cappedShingles,
        ...(successors.size > 0 ? { successors: [...successors].sort() } : {}),
        ...(rulings.length
          ? {
              dismissed: rulings.map((d) => ({
                ...d,
                ...scoreOf(scored.dismissedMatches, d.id),
                ...(scored.lapsed.includes(d.id) ? { lapsed: true } : {}),
              })),
            }
          : {}),
      };
      const e = scored.examined;
      return {
        // the result enters the audit chain with the step's commit: certify signs only what the probe found (probe-audit.ts)
        audit: [probedEvent(row.erasureId, state.probe)],
        detail:
          `recovered ${scored.recovered} of the subject's private content (threshold ${res.probeThreshold}); ${matches.length} match(es)` +
          (scored.dismissedMatches.length ? `, ${scored.dismissedMatches.length} dismissed` : '') +
          `; candidates examined: ${e.shingleIndex} from the shingle index, ${e.vectorIndex} from the vector index, ${e.provenance} from provenance; index coverage ${coverage.indexed}/${sealedRows(coverage)} on replica ${replica}` +
          (unindexed > 0
            ? `; ${unindexed} entr${unindexed === 1 ? 'y' : 'ies'} registered before the probe started still not indexed after ${queueWait.parks} waits: not probed`
            : ''),
      };
    } finally {
      for (const r of fp.records) r.vector.fill(0);
      for (const q of queries) q.fill(0);
    }
  },
};

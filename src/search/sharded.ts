/**
 * A sharded search (LETHE_INDEX_SHARDS > 1): each replica indexes the records of the
 * shards it holds (src/vault/shards.ts), so a search ranks on this replica what it
 * holds and asks the owners of the other shards it needs — a scoped search the shards
 * of its subjects and of the artifacts above them, an all-subjects search every shard —
 * over signed internal calls (src/vault/replica-calls.ts), and merges by score. A shard
 * whose owner is unknown, rebuilding, or does not answer under the fence it was routed
 * by is `missing`: the answer says so (partial), rather than silently lacking its hits.
 */
import { placeOfArtifact, placeOfSubject, planShards, type ShardPlan, type ShardRow, shardOf } from '../vault/shards.js';
import type { Vectors } from '../vectors/service.js';
import type { IndexHit, RecordType } from '../vectors/vector-index.js';
import { type RankScope, rankerFor, type SearchMode } from './rank.js';

/** What one replica asks another: rank the query over the scope, for these shards (each under the fence it was routed by). */
export interface PeerRankRequest {
  readonly query: string;
  readonly mode: SearchMode;
  readonly n: number;
  /** null: every record (an all-subjects search). */
  readonly scope: RankScope | null;
  readonly shards: ReadonlyArray<{ readonly shard: number; readonly fence: number }>;
  /** The shard count the asking replica splits by: a replica splitting by another answers for none. */
  readonly count: number;
}

export interface PeerRankAnswer {
  readonly hits: ReadonlyArray<{ readonly id: string; readonly type: RecordType; readonly keyId: string; readonly score: number }>;
  /** The shards it answered for: held under the fence asked, and searchable there. */
  readonly shards: ReadonlyArray<{ readonly shard: number; readonly fence: number }>;
}

/** What a sharded search needs of the replica (src/app/shard-keeper.ts). */
export interface ShardRouting {
  readonly count: number;
  readonly replicaId: string;
  /** The shards this replica answers for now (held, and its index filled for them), with their fences. */
  answering(): ReadonlyMap<number, number>;
  /** Every shard's row, as this replica last read them. */
  owners(): readonly ShardRow[];
  /** Reads every shard's row again (a search found one with no searchable owner, or an owner answered under another fence). */
  refresh(): Promise<void>;
  /** One peer's ranking (rejects when it fails or times out, after `timeoutMs` at most). */
  ask(url: string, request: PeerRankRequest, timeoutMs?: number): Promise<PeerRankAnswer>;
}

/** Which shards a sharded search consulted and which it could not (its hits may lack theirs). */
export interface ShardCoverage {
  readonly total: number;
  readonly consulted: number[];
  readonly missing: number[];
}

export type AsyncRanker = (n: number, keep: (id: string) => boolean) => Promise<IndexHit[]>;

/** How long one search may spend asking peers in all (then their shards are missing): it answers within 20 s. */
const PEER_BUDGET_MS = 10_000;
/** How long one peer call may take. */
const PEER_ASK_MS = 5_000;
/** The most candidates a peer is asked for (what the internal route takes). */
const MAX_PEER_N = 100_000;

/** The shards a search needs: its subjects' and its artifacts' (scoped), or all. */
export function shardsOf(count: number, scope: { hashes: readonly Uint8Array[]; artifactIds: readonly string[] } | undefined): number[] {
  if (!scope) return Array.from({ length: count }, (_, i) => i);
  const out = new Set<number>();
  for (const h of scope.hashes) out.add(shardOf(placeOfSubject(h), count));
  for (const id of scope.artifactIds) out.add(shardOf(placeOfArtifact(id), count));
  return [...out].sort((a, b) => a - b);
}

/**
 * A ranker over the needed shards: this replica's index for those it answers, one call
 * per owner for the others (asked again, wider, each round). A shard the routing read
 * has no searchable owner for, or whose owner answers under another fence or not at all,
 * is looked up once more after the routing is read again (a hand-over just happened);
 * one still unanswered is missing. `coverage` fills as it goes.
 */
export function shardedRanker(
  routing: ShardRouting,
  local: () => Promise<((n: number, keep: (id: string) => boolean) => IndexHit[]) | undefined>,
  request: Omit<PeerRankRequest, 'n' | 'shards' | 'count'>,
  needed: readonly number[],
): { rank: AsyncRanker; coverage: ShardCoverage } {
  const coverage: ShardCoverage = { total: routing.count, consulted: [], missing: [] };
  const deadline = Date.now() + PEER_BUDGET_MS;
  const consulted = new Set<number>();
  const missing = new Set<number>();
  const peers = new Map<string, Array<{ shard: number; fence: number }>>();
  let localUsed = false;
  /** The shards this replica answers for in this search (each round checks they still are). */
  const localShards = new Set<number>();
  /** Ids `keep` refused so far: peers are asked for that many more, so what they send survives the filter. */
  const refused = new Set<string>();
  let localRank: Promise<((n: number, keep: (id: string) => boolean) => IndexHit[]) | undefined> | undefined;
  const localRanked = (n: number, keep: (id: string) => boolean): Promise<IndexHit[]> =>
    localUsed ? (localRank ??= local()).then((r) => (r ? r(n, keep) : [])) : Promise.resolve([]);
  const take = (p: ShardPlan) => {
    localUsed ||= p.mine.length > 0;
    for (const s of p.mine) {
      consulted.add(s);
      localShards.add(s);
    }
    for (const [url, list] of p.peers) peers.set(url, [...(peers.get(url) ?? []), ...list]);
  };
  /** Asks each peer for its shards: their hits, with the shards each answered under the fence asked (the others go to `unanswered`). */
  const askAll = (asked: ReadonlyMap<string, Array<{ shard: number; fence: number }>>, n: number, keep: (id: string) => boolean, unanswered: number[]) =>
    Promise.all(
      [...asked].map(async ([url, shards]) => {
        let answered = new Map<number, number>();
        let hits: IndexHit[] = [];
        let full = false;
        try {
          const left = deadline - Date.now();
          // past the search's budget a peer is not asked: its shards are missing
          if (left <= 0) throw new Error('the search is out of time for its peers');
          const asked = Math.min(n + refused.size, MAX_PEER_N);
          const answer = await routing.ask(url, { ...request, n: asked, shards, count: routing.count }, Math.min(PEER_ASK_MS, left));
          full = answer.hits.length >= asked;
          answered = new Map(answer.shards.map((s) => [s.shard, s.fence]));
          hits = answer.hits.filter((h) => {
            if (keep(h.id)) return true;
            refused.add(h.id);
            return false;
          });
        } catch {
          // none of its shards answered
        }
        const left = shards.filter((s) => answered.get(s.shard) === s.fence);
        for (const s of left) consulted.add(s.shard);
        for (const s of shards) if (answered.get(s.shard) !== s.fence) unanswered.push(s.shard);
        // a replica that answers for none of them is no owner of theirs: its hits are left out
        return { url, hits: left.length > 0 ? hits : [], left, full: full && left.length > 0 };
      }),
    );
  /** What the next rounds ask: each peer for the shards it answered. */
  const keepAsking = (asked: ReadonlyArray<{ url: string; left: Array<{ shard: number; fence: number }> }>) => {
    for (const { url, left } of asked) {
      if (left.length > 0) peers.set(url, left);
      else peers.delete(url);
    }
  };
  /** Routes the needed shards; those no one answers for now are looked up once more after the routing is read again. */
  const route = async () => {
    let p = planShards(routing.answering(), routing.owners(), routing.replicaId, needed);
    if (p.missing.length > 0) {
      take(p);
      await routing.refresh();
      p = planShards(routing.answering(), routing.owners(), routing.replicaId, p.missing);
    }
    take(p);
    for (const s of p.missing) missing.add(s);
  };
  let routed: Promise<void> | undefined;
  /** Peers answered as many as asked, yet `keep` left fewer than `n`: they hold more (asked again, for more, twice at most). */
  const rank: AsyncRanker = async (n, keep) => {
    for (let attempt = 0; ; attempt++) {
      const { hits, full } = await rankOnce(n, keep);
      if (hits.length >= n || !full || attempt === 2) return hits;
    }
  };
  const rankOnce = async (n: number, keep: (id: string) => boolean): Promise<{ hits: IndexHit[]; full: boolean }> => {
    routed ??= route();
    await routed;
    // a shard handed over since the last round is no longer answered here
    const answering = routing.answering();
    for (const s of localShards) if (!answering.has(s)) missing.add(s);
    const unanswered: number[] = [];
    const [ranked, remote] = await Promise.all([localRanked(n, keep), askAll(peers, n, keep, unanswered)]);
    keepAsking(remote);
    const lists = [ranked, ...remote.map((r) => r.hits)];
    if (unanswered.length > 0) {
      // a hand-over: the owners as the database says now, asked once
      await routing.refresh();
      const wasLocal = localUsed;
      const p = planShards(routing.answering(), routing.owners(), routing.replicaId, unanswered);
      for (const s of p.missing) missing.add(s);
      take({ ...p, peers: new Map() });
      const again: number[] = [];
      const retried = await askAll(p.peers, n, keep, again);
      for (const r of retried) if (r.left.length > 0) peers.set(r.url, [...(peers.get(r.url) ?? []), ...r.left]);
      lists.push(...retried.map((r) => r.hits));
      for (const s of again) missing.add(s);
      if (!wasLocal && localUsed) lists.push(await localRanked(n, keep));
    }
    coverage.consulted.splice(0, coverage.consulted.length, ...[...consulted].filter((s) => !missing.has(s)).sort((a, b) => a - b));
    coverage.missing.splice(0, coverage.missing.length, ...[...missing].sort((a, b) => a - b));
    return { hits: merge(lists, n), full: remote.some((r) => r.full) };
  };
  return { rank, coverage };
}

/** The `n` best of several rankings (a record in more than one, during a hand-over, once at its best score). */
function merge(lists: ReadonlyArray<readonly IndexHit[]>, n: number): IndexHit[] {
  const best = new Map<string, IndexHit>();
  for (const list of lists) for (const h of list) if ((best.get(h.id)?.score ?? Number.NEGATIVE_INFINITY) < h.score) best.set(h.id, h);
  return [...best.values()].sort((a, b) => b.score - a.score).slice(0, n);
}

/** A peer's side: ranks the query over this replica's index for the shards it answers for under the fences asked. */
export async function rankForPeer(vectors: Vectors, routing: ShardRouting, request: PeerRankRequest): Promise<PeerRankAnswer> {
  const answering = request.count === routing.count ? routing.answering() : new Map<number, number>();
  const shards = request.shards.filter((s) => answering.get(s.shard) === s.fence);
  if (shards.length === 0) return { hits: [], shards };
  const rank = await rankerFor(vectors, request.query, request.mode, request.scope ?? undefined);
  const hits = rank ? rank(request.n, () => true) : [];
  return { hits: hits.map((h) => ({ id: h.id, type: h.type, keyId: h.keyId, score: h.score })), shards };
}

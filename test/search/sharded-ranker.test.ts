/**
 * The sharded search's routing (src/search/sharded.ts), with an in-memory routing and
 * peers: hits of this replica and of the owners merged by score; a shard with no
 * searchable owner, or whose owner answers under another fence or fails, is named
 * missing — after the routing is read again once, which finds a new owner after a
 * hand-over.
 */
import { describe, expect, it } from 'vitest';
import { type PeerRankAnswer, type PeerRankRequest, type ShardRouting, shardedRanker, shardsOf } from '../../src/search/sharded.js';
import type { ShardRow } from '../../src/vault/shards.js';
import type { IndexHit } from '../../src/vectors/vector-index.js';

const row = (shard: number, owner: string | null, fence: number, state: 'ready' | 'rebuilding' = 'ready'): ShardRow => ({
  shard,
  owner,
  url: owner && `http://${owner}`,
  urlMac: null,
  fence,
  state,
  live: owner !== null,
});
const hit = (id: string, score: number): IndexHit => ({ id, type: 'entry', keyId: `k_${id}`, score });

function routing(
  rows: ShardRow[],
  opts: {
    answering?: Map<number, number>;
    peers?: Record<string, (r: PeerRankRequest) => PeerRankAnswer>;
    after?: ShardRow[];
  },
) {
  let current = rows;
  const asked: Array<{ url: string; shards: number[] }> = [];
  const r: ShardRouting = {
    count: rows.length,
    replicaId: 'me',
    answering: () => opts.answering ?? new Map(),
    owners: () => current,
    refresh: async () => {
      if (opts.after) current = opts.after;
    },
    ask: async (url, request) => {
      asked.push({ url, shards: request.shards.map((s) => s.shard) });
      const peer = opts.peers?.[url];
      if (!peer) throw new Error('refused');
      return peer(request);
    },
  };
  return { r, asked };
}

const request = { query: 'q', mode: 'hybrid' as const, scope: null };

describe('shardedRanker', () => {
  it("merges this replica's hits with the owners', best first, each shard consulted once", async () => {
    const { r, asked } = routing([row(0, 'me', 1), row(1, 'b', 3), row(2, 'c', 2)], {
      answering: new Map([[0, 1]]),
      peers: {
        'http://b': (q) => ({ hits: [hit('b1', 0.9), hit('b2', 0.2)], shards: q.shards }),
        'http://c': (q) => ({ hits: [hit('c1', 0.5)], shards: q.shards }),
      },
    });
    const { rank, coverage } = shardedRanker(r, async () => () => [hit('m1', 0.7)], request, [0, 1, 2]);
    expect((await rank(3, () => true)).map((h) => h.id)).toEqual(['b1', 'm1', 'c1']);
    expect(coverage).toEqual({ total: 3, consulted: [0, 1, 2], missing: [] });
    expect(asked.map((a) => a.url).sort()).toEqual(['http://b', 'http://c']);
  });

  it('names a shard missing when no one holds it, or its owner is rebuilding, or fails', async () => {
    const { r } = routing([row(0, null, 1), row(1, 'b', 1, 'rebuilding'), row(2, 'dead', 1), row(3, 'c', 1)], {
      peers: { 'http://c': (q) => ({ hits: [hit('c1', 0.5)], shards: q.shards }) },
    });
    const { rank, coverage } = shardedRanker(r, async () => undefined, request, [0, 1, 2, 3]);
    expect((await rank(5, () => true)).map((h) => h.id)).toEqual(['c1']);
    expect(coverage).toEqual({ total: 4, consulted: [3], missing: [0, 1, 2] });
  });

  it('after a hand-over (the owner answers under another fence), reads the routing again and asks the new owner', async () => {
    const { r, asked } = routing([row(0, 'old', 1)], {
      peers: {
        'http://old': () => ({ hits: [hit('stale', 0.9)], shards: [] }),
        'http://new': (q) => ({ hits: [hit('n1', 0.4)], shards: q.shards }),
      },
      after: [row(0, 'new', 2)],
    });
    const { rank, coverage } = shardedRanker(r, async () => undefined, request, [0]);
    expect((await rank(5, () => true)).map((h) => h.id)).toEqual(['n1']);
    expect(coverage).toEqual({ total: 1, consulted: [0], missing: [] });
    expect(asked.map((a) => a.url)).toEqual(['http://old', 'http://new']);
    // the next round asks the new owner only
    await rank(10, () => true);
    expect(asked.map((a) => a.url)).toEqual(['http://old', 'http://new', 'http://new']);
  });

  it('keeps to what `keep` allows, and a shard with no owner found after a refresh stays missing', async () => {
    const { r } = routing([row(0, null, 0), row(1, 'b', 1)], {
      peers: { 'http://b': (q) => ({ hits: [hit('x', 0.9), hit('y', 0.8)], shards: q.shards }) },
    });
    const { rank, coverage } = shardedRanker(r, async () => undefined, request, [0, 1]);
    expect((await rank(5, (id) => id !== 'x')).map((h) => h.id)).toEqual(['y']);
    expect(coverage.missing).toEqual([0]);
  });

  it('asks a peer that answered in full for more when `keep` left fewer than n, so a search is not cut short', async () => {
    const all = Array.from({ length: 20 }, (_, i) => hit(`h${i}`, 1 - i / 100));
    const { r, asked } = routing([row(0, 'b', 1)], {
      peers: { 'http://b': (q) => ({ hits: all.slice(0, q.n), shards: q.shards }) },
    });
    const { rank } = shardedRanker(r, async () => undefined, request, [0]);
    // the first five are refused (unreadable, out of range): five more are asked for
    const got = await rank(5, (id) => !['h0', 'h1', 'h2', 'h3', 'h4'].includes(id));
    expect(got.map((h) => h.id)).toEqual(['h5', 'h6', 'h7', 'h8', 'h9']);
    expect(asked.length).toBe(2);
  });

  it('a shard this replica stopped answering for between rounds is named missing', async () => {
    const answering = new Map([[0, 1]]);
    const { r } = routing([row(0, 'me', 1)], { answering });
    const { rank, coverage } = shardedRanker(r, async () => () => [hit('m1', 0.5)], request, [0]);
    await rank(5, () => true);
    expect(coverage.missing).toEqual([]);
    answering.clear();
    await rank(20, () => true);
    expect(coverage.missing).toEqual([0]);
  });

  it("shardsOf: a scope's subjects' and artifacts' shards; every shard for all subjects", () => {
    expect(shardsOf(4, undefined)).toEqual([0, 1, 2, 3]);
    expect(shardsOf(4, { hashes: [Uint8Array.from([0, 0, 0, 5])], artifactIds: [] })).toEqual([1]);
    expect(shardsOf(4, { hashes: [Uint8Array.from([0, 0, 0, 5]), Uint8Array.from([0, 0, 0, 6])], artifactIds: [] })).toEqual([1, 2]);
  });
});

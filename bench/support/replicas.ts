/**
 * `lethe serve` replicas on one scratch database, sharded or not, as the shards section
 * drives them: each on a port of its own (a sharded replica's LETHE_REPLICA_URL must name
 * it before it starts) and in a process group of its own (killGroup ends it as a crash
 * would); what each says of itself (its replica id, the shards it answers for, the
 * vectors its index holds) and what index_shards says of all of them.
 */
import type postgres from 'postgres';
import { processRssBytes } from './load.js';
import { sleep } from './process.js';
import type { Scratch } from './scratch.js';
import { type Server, startScratchService } from './service.js';
import { freePort } from '../../infra/local-server.js';

export interface Replica {
  readonly server: Server;
  readonly url: string;
  /** The replica id it leases shards under (GET /readyz: replica.id). */
  readonly id: string;
}

export interface ShardRow {
  readonly shard: number;
  readonly owner: string | null;
  readonly state: string;
  readonly fence: number;
  /** Owned and its lease not run out, by the database's clock. */
  readonly live: boolean;
}

/**
 * Starts one replica on the scaffold's database and data directory with `env` (the
 * caller's shared root key and tokens) and LETHE_INDEX_SHARDS = `shards`; stopped by the
 * scaffold's cleanup.
 */
export async function startReplica(scratch: Scratch, env: Record<string, string>, shards: number): Promise<Replica> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server = await startScratchService(
    scratch,
    { ...env, PORT: String(port), LETHE_INDEX_SHARDS: String(shards), ...(shards > 1 ? { LETHE_REPLICA_URL: url } : {}) },
    120_000,
    { ownGroup: true },
  );
  const ready = await readiness(url);
  if (!ready.replica?.id) throw new Error(`replica at ${url} names no replica id in /readyz`);
  return { server, url, id: ready.replica.id };
}

interface Readiness {
  readonly status: string;
  readonly replica?: { readonly id: string };
  readonly shards?: { readonly count: number; readonly answering: number[] };
}

/** GET /readyz's body (a 503 has one too). */
export async function readiness(url: string): Promise<Readiness> {
  const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(10_000) });
  return (await res.json()) as Readiness;
}

/** lethe_index_vectors: the vectors held in the replica's index. */
export async function indexVectors(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
  const line = text.split('\n').find((l) => l.startsWith('lethe_index_vectors '));
  return Number(line?.split(' ').at(-1) ?? Number.NaN);
}

/** The replica's resident set now (bytes; NaN when /proc cannot tell). */
export function replicaRss(r: Replica): number {
  return processRssBytes(r.server.child.pid!) ?? Number.NaN;
}

/** Every shard's row. */
export async function shardRows(sql: postgres.Sql): Promise<ShardRow[]> {
  const rows = await sql<Array<{ shard: number; owner: string | null; state: string; fence: string; live: boolean }>>`
    select shard, owner, state, fence, (owner is not null and expires_at > now()) as live from index_shards order by shard`;
  return rows.map((r) => ({ shard: r.shard, owner: r.owner, state: r.state, fence: Number(r.fence), live: r.live }));
}

/**
 * Waits until the `replicas` have split the `shards` between them and settled: every
 * shard held by one of them, live and ready; each holding shards ÷ replicas (rounded
 * down or up); each answering (GET /readyz) for exactly the shards its rows say; and
 * their indexes together holding `vectors` vectors. Resolves with the rows and each
 * replica's vectors; rejects after `timeoutMs`.
 */
export async function waitForSplit(
  sql: postgres.Sql,
  replicas: readonly Replica[],
  shards: number,
  vectors: number,
  timeoutMs: number,
): Promise<{ rows: ShardRow[]; held: number[][]; vectors: number[] }> {
  const floor = Math.floor(shards / replicas.length);
  const ceil = Math.ceil(shards / replicas.length);
  const deadline = performance.now() + timeoutMs;
  let last = '';
  for (;;) {
    const rows = await shardRows(sql);
    const held = replicas.map((r) => rows.filter((x) => x.owner === r.id && x.live && x.state === 'ready').map((x) => x.shard));
    const split = rows.length === shards && held.flat().length === shards && held.every((h) => h.length >= floor && h.length <= ceil);
    if (split) {
      const answering = await Promise.all(replicas.map(async (r) => (await readiness(r.url)).shards?.answering ?? []));
      const counts = await Promise.all(replicas.map((r) => indexVectors(r.url)));
      const agree = answering.every((a, i) => a.join(',') === held[i]!.join(','));
      if (agree && counts.reduce((a, b) => a + b, 0) === vectors) return { rows, held, vectors: counts };
      last = `answering ${JSON.stringify(answering)}, vectors ${counts.join(' + ')} of ${vectors}`;
    } else last = `rows ${JSON.stringify(rows.map((r) => [r.shard, r.owner?.slice(-6) ?? null, r.state, r.live]))}`;
    if (performance.now() > deadline) throw new Error(`${replicas.length} replica(s) did not split ${shards} shards within ${timeoutMs / 1000} s: ${last}`);
    await sleep(200);
  }
}

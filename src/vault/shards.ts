/**
 * Index shard leases (LETHE_INDEX_SHARDS > 1): each replica holds the in-memory indexes
 * of some subject-hash shards, under leases on `index_shards` rows it renews every
 * tick. No coordination service: the rows, the database's clock and row locks decide.
 *
 * - A lease not renewed for `leaseMs` (its replica died, paused or lost the database)
 *   is taken by another replica at its next tick.
 * - Every change of owner increments the shard's `fence`. An owner acts for a shard
 *   (marks it ready, answers a peer's query for it) only under the fence it was given;
 *   a peer compares the fence it routed by with the one the owner answers under.
 * - Each replica holds about shards ÷ live members (`index_shard_members`: a row each
 *   replica writes at every tick, with its shard count; live for three ticks, at least a
 *   lease): one holding more than its share (rounded up) lets the
 *   extra go, one at its share lets one go while a live replica holds less than the
 *   share rounded down, and a replica holding fewer takes unowned or expired ones. Once
 *   split, nothing moves until a replica comes or goes. A replica takes nothing at its
 *   first tick (it only joins), so replicas starting together split the shards rather
 *   than the first taking all. A live member naming another
 *   count stops every replica from taking or letting go of shards (they renew what they
 *   hold) and a new one from starting.
 * - A replica that could not renew stops acting for its shards once the lease it last
 *   renewed has run out by its own clock, less a fifth of it.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { type SQL, sql } from 'drizzle-orm';
import { utf8 } from '../crypto/index.js';
import { type Database, type Executor, queryRows } from '../db/client.js';
import { LetheError } from '../errors.js';

/** How long a lease lasts unless renewed (a dead replica's shards are taken within this plus a tick). */
export const LEASE_MS = 10_000;
/** How often a replica renews, takes and lets go of shards. */
export const TICK_MS = 2_000;
/** A replica stops acting for its shards this share of a lease before the one it last renewed runs out (clock drift, a slow renewal). */
const MARGIN = 0.2;
/** The most shards a store may be split into. */
export const MAX_SHARDS = 1024;

export interface ShardRow {
  readonly shard: number;
  readonly owner: string | null;
  readonly url: string | null;
  /** The owner's MAC of `url` (ReplicaCalls.addressMac): checked before the address is called. */
  readonly urlMac: string | null;
  readonly fence: number;
  readonly state: 'rebuilding' | 'ready';
  /** Owned and its lease not run out (the database's clock). */
  readonly live: boolean;
}

export interface ShardChange {
  /** Shards taken this tick, each under its new fence. */
  readonly gained: ReadonlyMap<number, number>;
  /** Shards this replica no longer holds. */
  readonly lost: readonly number[];
  /** Set when a live replica splits by another count: this one renewed what it holds and took nothing. */
  readonly refused?: LetheError;
}

type Raw = {
  shard: number;
  owner: string | null;
  owner_url: string | null;
  owner_url_mac: string | null;
  fence: string | number;
  state: 'rebuilding' | 'ready';
  live: boolean | string;
};

export class ShardLeases {
  readonly #db: Database;
  readonly #o: {
    readonly shards: number;
    readonly replicaId: string;
    readonly url: string;
    readonly urlMac: string;
    readonly leaseMs: number;
    readonly tickMs: number;
  };
  /** Shard → the fence it is held under. */
  readonly #held = new Map<number, number>();
  /** When (this process's clock) the leases were last renewed. */
  #renewedAt = 0;
  /** Whether this replica's member row was written at an earlier tick. */
  #joined = false;

  /** `urlMac`: this replica's MAC of its own `url` (ReplicaCalls.addressMac), stored beside it for the others to check. */
  constructor(db: Database, options: { shards: number; replicaId: string; url: string; urlMac: string; leaseMs?: number; tickMs?: number }) {
    if (!Number.isInteger(options.shards) || options.shards < 1 || options.shards > MAX_SHARDS) {
      throw new LetheError('validation_failed', `shards must be 1 to ${MAX_SHARDS}`);
    }
    this.#db = db;
    this.#o = { leaseMs: LEASE_MS, tickMs: TICK_MS, ...options };
  }

  get count(): number {
    return this.#o.shards;
  }

  get replicaId(): string {
    return this.#o.replicaId;
  }

  /** The shards this replica may act for now, each with its fence (none once its leases may have run out). */
  held(): ReadonlyMap<number, number> {
    if (Date.now() - this.#renewedAt > this.#o.leaseMs * (1 - MARGIN)) return new Map();
    return this.#held;
  }

  /**
   * Creates the shard rows. Refuses (`conflict`) while a live member names another
   * count, or the table holds more shards and a replica still holds one of them:
   * every replica needs the same LETHE_INDEX_SHARDS.
   */
  async init(): Promise<void> {
    const n = this.#o.shards;
    await this.#db.transaction(async (tx) => {
      await tx.execute(sql`lock table index_shards in exclusive mode`);
      await this.#refuseOtherCounts(tx);
      const [other] = await queryRows<{ n: number }>(
        tx,
        sql`select count(*)::int as n from index_shards where shard >= ${n} and owner is not null and expires_at > now()`,
      );
      if ((other?.n ?? 0) > 0) {
        throw new LetheError(
          'conflict',
          `index_shards is split into more than ${n} shards and a replica still holds one: every replica needs the same LETHE_INDEX_SHARDS`,
        );
      }
      // rows past the count are left alone (a replica splitting by more keeps its own); this one reads only its count's
      await tx.execute(sql`insert into index_shards (shard) select generate_series(0, ${n - 1}) on conflict (shard) do nothing`);
      await tx.execute(sql`delete from index_shard_members where seen_at < now() - interval '1 hour'`);
    });
  }

  async #refuseOtherCounts(exec: Executor): Promise<void> {
    const [other] = await queryRows<{ shards: number }>(
      exec,
      sql`select shards from index_shard_members where shards <> ${this.#o.shards} and seen_at > now() - make_interval(secs => ${this.#memberSeconds()}) limit 1`,
    );
    if (other) {
      throw new LetheError(
        'conflict',
        `a live replica splits the index into ${other.shards} shards and this one into ${this.#o.shards}: every replica needs the same LETHE_INDEX_SHARDS`,
      );
    }
  }

  /** How long a member counts as live after its last tick (three ticks, at least a lease). */
  #memberSeconds(): number {
    return Math.max(this.#o.leaseMs, 3 * this.#o.tickMs) / 1000;
  }

  /** Renews the leases held, lets go of more than this replica's share, takes shards up to it. */
  async tick(): Promise<ShardChange> {
    const me = this.#o.replicaId;
    const lease = this.#o.leaseMs / 1000;
    const before = new Map(this.#held);
    const startedAt = Date.now();
    await this.#db.execute(sql`insert into index_shard_members (replica_id, shards, seen_at) values (${me}, ${this.#o.shards}, now())
                                on conflict (replica_id) do update set shards = excluded.shards, seen_at = now()`);
    const renewed = await queryRows<{ shard: number; fence: string | number }>(
      this.#db,
      sql`update index_shards set expires_at = now() + make_interval(secs => ${lease}), owner_url = ${this.#o.url}, owner_url_mac = ${this.#o.urlMac}
           where owner = ${me} and expires_at > now() returning shard, fence`,
    );
    this.#held.clear();
    for (const r of renewed) if (before.get(r.shard) === Number(r.fence)) this.#held.set(r.shard, Number(r.fence));
    // a row this replica owns under a fence it did not take (a restart with the same id) is let go
    const strays = renewed.filter((r) => !this.#held.has(r.shard)).map((r) => r.shard);
    if (strays.length > 0) await this.#letGo(strays);
    this.#renewedAt = startedAt;

    // replicas that disagree on the count would split subjects differently: renew (so nothing held is lost) but move
    // nothing until they agree; the refusal says which count is live
    try {
      await this.#refuseOtherCounts(this.#db);
    } catch (e) {
      this.#joined = true;
      return { gained: new Map(), lost: [...before.keys()].filter((s) => !this.#held.has(s)), refused: e as LetheError };
    }
    // the rows of this count, should a replica of another have removed them
    await this.#db.execute(sql`insert into index_shards (shard) select generate_series(0, ${this.#o.shards - 1}) on conflict (shard) do nothing`);
    // the first tick only joins: replicas starting together see each other before any takes a share (not all of it)
    if (!this.#joined) {
      this.#joined = true;
      return { gained: new Map(), lost: [...before.keys()] };
    }
    const { alive, holdings } = await this.#liveReplicas();
    const share = Math.ceil(this.#o.shards / alive);
    const floor = Math.floor(this.#o.shards / alive);
    const gained = new Map<number, number>();
    // let go of more than the share; of the share itself only while a live replica holds less than the floor (no churn once split)
    const keep = holdings.some(([id, n]) => id !== me && n < floor) ? Math.max(floor, share - 1) : share;
    if (this.#held.size > keep) {
      // the highest first, so replicas settle on the same split
      const extra = [...this.#held.keys()].sort((a, b) => b - a).slice(0, this.#held.size - keep);
      await this.#letGo(extra);
      for (const s of extra) this.#held.delete(s);
    } else if (this.#held.size < share) {
      const taken = await queryRows<{ shard: number; fence: string | number }>(
        this.#db,
        sql`update index_shards set owner = ${me}, owner_url = ${this.#o.url}, owner_url_mac = ${this.#o.urlMac}, fence = fence + 1, state = 'rebuilding',
                  expires_at = now() + make_interval(secs => ${lease})
             where shard in (select shard from index_shards
                              where shard < ${this.#o.shards} and (owner is null or expires_at <= now())
                              order by owner is not null, shard limit ${share - this.#held.size}
                              for update skip locked)
           returning shard, fence`,
      );
      for (const r of taken) {
        this.#held.set(r.shard, Number(r.fence));
        gained.set(r.shard, Number(r.fence));
      }
    }
    const lost = [...before.keys()].filter((s) => !this.#held.has(s));
    return { gained, lost };
  }

  /** Marks a shard searchable here; false when it is no longer this replica's under `fence`. */
  async markReady(shard: number, fence: number): Promise<boolean> {
    const rows = await queryRows<{ shard: number }>(
      this.#db,
      sql`update index_shards set state = 'ready' where shard = ${shard} and owner = ${this.#o.replicaId} and fence = ${fence}
           and expires_at > now() returning shard`,
    );
    return rows.length === 1;
  }

  /** Every shard's row, as the database's clock sees it. */
  async rows(): Promise<ShardRow[]> {
    const raw = await queryRows<Raw>(
      this.#db,
      sql`select shard, owner, owner_url, owner_url_mac, fence, state, (owner is not null and expires_at > now()) as live
            from index_shards where shard < ${this.#o.shards} order by shard`,
    );
    return raw.map((r) => ({
      shard: r.shard,
      owner: r.owner,
      url: r.owner_url,
      urlMac: r.owner_url_mac,
      fence: Number(r.fence),
      state: r.state,
      live: r.live === true || r.live === 't',
    }));
  }

  /** A clean shutdown: every shard held goes back, for the others to take at their next tick. */
  async release(): Promise<void> {
    const held = [...this.#held.keys()];
    this.#held.clear();
    if (held.length > 0) await this.#letGo(held);
  }

  async #letGo(shards: readonly number[]): Promise<void> {
    await this.#db.execute(
      sql`update index_shards set owner = null, owner_url = null, owner_url_mac = null, expires_at = null, state = 'rebuilding'
           where owner = ${this.#o.replicaId} and shard = any(${`{${shards.join(',')}}`}::int[])`,
    );
  }

  /** The live members (this one included: it wrote its row this tick), and how many shards each holds. */
  async #liveReplicas(): Promise<{ alive: number; holdings: Array<[string, number]> }> {
    const rows = await queryRows<{ replica_id: string; n: number }>(
      this.#db,
      sql`select m.replica_id, (select count(*)::int from index_shards s where s.owner = m.replica_id and s.expires_at > now()) as n
            from index_shard_members m where m.seen_at > now() - make_interval(secs => ${this.#memberSeconds()})`,
    );
    const holdings: Array<[string, number]> = rows.map((r) => [r.replica_id, r.n]);
    if (!holdings.some(([id]) => id === this.#o.replicaId)) holdings.push([this.#o.replicaId, this.#held.size]);
    return { alive: holdings.length, holdings };
  }

  /** A clean shutdown's last step: this replica is no member any more (the others share its shards at once). */
  async leave(): Promise<void> {
    await this.#db.execute(sql`delete from index_shard_members where replica_id = ${this.#o.replicaId}`);
  }
}

/**
 * Where a record falls among the shards, as a 32-bit number: an entry's is its
 * subject's (the first four bytes of the subject hash, already a keyed hash), so a
 * subject's records share a shard; an artifact spans subjects, so its own id places it.
 */
export function placeOfSubject(subjectHash: Uint8Array): number {
  return ((subjectHash[0]! << 24) | (subjectHash[1]! << 16) | (subjectHash[2]! << 8) | subjectHash[3]!) >>> 0;
}

export function placeOfArtifact(artifactId: string): number {
  return placeOfSubject(sha256(utf8.encode(artifactId)));
}

/** The shard of a place among `count`. */
export function shardOf(place: number, count: number): number {
  return place % count;
}

/** placeOfSubject / placeOfArtifact in SQL, over an embeddings row `e` and its subject key `s` (left joined on the key id). */
export const PLACE_SQL: SQL = sql.raw(`(case when e.record_type = 'entry'
  then (get_byte(s.subject_hash, 0)::bigint << 24) | (get_byte(s.subject_hash, 1) << 16) | (get_byte(s.subject_hash, 2) << 8) | get_byte(s.subject_hash, 3)
  else (get_byte(sha256(convert_to(e.record_id, 'UTF8')), 0)::bigint << 24) | (get_byte(sha256(convert_to(e.record_id, 'UTF8')), 1) << 16)
     | (get_byte(sha256(convert_to(e.record_id, 'UTF8')), 2) << 8) | get_byte(sha256(convert_to(e.record_id, 'UTF8')), 3) end)`);

/** Which shards this replica answers for itself, which live, searchable owner to ask for each of the others, and those no one can answer now. */
export interface ShardPlan {
  readonly mine: number[];
  readonly peers: Map<string, Array<{ shard: number; fence: number }>>;
  readonly missing: number[];
}

/** Plans `shards` over the routing read (`rows`) and the shards this replica answers for (`answering`, with their fences). */
export function planShards(answering: ReadonlyMap<number, number>, rows: readonly ShardRow[], replicaId: string, shards: readonly number[]): ShardPlan {
  const byShard = new Map(rows.map((r) => [r.shard, r]));
  const plan: ShardPlan = { mine: [], peers: new Map(), missing: [] };
  for (const shard of shards) {
    const row = byShard.get(shard);
    if (answering.has(shard)) plan.mine.push(shard);
    else if (!row?.live || row.state !== 'ready' || !row.url || row.owner === replicaId) plan.missing.push(shard);
    else plan.peers.set(row.url, [...(plan.peers.get(row.url) ?? []), { shard, fence: row.fence }]);
  }
  return plan;
}

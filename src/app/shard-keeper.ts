/**
 * A sharded replica's shards (LETHE_INDEX_SHARDS > 1): every TICK_MS it renews its
 * leases, takes or lets go of shards (src/vault/shards.ts) and reads every shard's
 * owner for routing; when the shards it holds change, its indexes are rebuilt for
 * them (in the background: renewals go on meanwhile), and each shard it gained is
 * marked ready — and answered for — only once that rebuild is swapped in.
 */
import type { ProbePart, ProbePartInput, ProbeTarget } from '../erasure/probe-part.js';
import { encodePeerProbe, PEER_PROBE_PATH, PeerProbeAnswerSchema } from '../http/routes/internal/probe-for-peer.js';
import { PEER_RANK_PATH, PeerRankAnswerSchema } from '../http/routes/internal/rank-for-peer.js';
import type { Logger } from '../observability/logger.js';
import { describeError } from '../observability/logger.js';
import type { ShardProbes } from '../erasure/resources.js';
import type { PeerRankAnswer, PeerRankRequest, ShardRouting } from '../search/service.js';
import { REPLICA_ANSWER_HEADER, REPLICA_CALL_HEADER, type ReplicaCalls } from '../vault/replica-calls.js';
import { planShards, type ShardLeases, type ShardRow, TICK_MS } from '../vault/shards.js';
import type { Vectors } from '../vectors/service.js';

/** How long a replica waits for a peer's ranking before the peer's shards count as missing (a search answers within 20 s). */
export const PEER_TIMEOUT_MS = 5_000;
/** How long an erasure's probe waits for a peer's part (it may reconcile its index first); past it the shards count as missing. */
const PROBE_TIMEOUT_MS = 30_000;

export class ShardKeeper implements ShardRouting, ShardProbes {
  readonly #leases: ShardLeases;
  readonly #vectors: Vectors;
  readonly #calls: ReplicaCalls;
  readonly #logger: Logger;
  readonly #tickMs: number;
  #rows: readonly ShardRow[] = [];
  /** Shard → fence, for the shards whose records the index holds (their rebuild swapped in). */
  readonly #ready = new Map<number, number>();
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;
  /** The shards the index was last filled for, and the fill running now. */
  #indexedFor: ReadonlySet<number> = new Set();
  #filling: Promise<void> | undefined;
  #stopped = false;

  constructor(d: { leases: ShardLeases; vectors: Vectors; calls: ReplicaCalls; logger: Logger; tickMs?: number }) {
    this.#leases = d.leases;
    this.#vectors = d.vectors;
    this.#calls = d.calls;
    this.#logger = d.logger;
    this.#tickMs = d.tickMs ?? TICK_MS;
  }

  get count(): number {
    return this.#leases.count;
  }

  get replicaId(): string {
    return this.#leases.replicaId;
  }

  answering(): ReadonlyMap<number, number> {
    const held = this.#leases.held();
    const out = new Map<number, number>();
    for (const [shard, fence] of held) if (this.#ready.get(shard) === fence) out.set(shard, fence);
    return out;
  }

  owners(): readonly ShardRow[] {
    return this.#rows;
  }

  async refresh(): Promise<void> {
    this.#rows = this.#vouched(await this.#leases.rows());
  }

  /** The rows with an address no replica vouched for (written without the root key) made unroutable: their shards are missing, never called. */
  #vouched(rows: readonly ShardRow[]): ShardRow[] {
    return rows.map((r) => {
      if (r.url === null || (r.owner !== null && this.#calls.vouches(r.owner, r.url, r.urlMac))) return r;
      this.#logger.warn({ shard: r.shard }, 'an index shard row names an address no replica vouched for: it is not called');
      return { ...r, url: null };
    });
  }

  /** Creates the shard rows, takes a first share and starts ticking. */
  async start(): Promise<void> {
    await this.#leases.init();
    await this.tick();
    const loop = () => {
      if (this.#stopped) return;
      this.#ticking = this.tick().finally(() => {
        if (this.#stopped) return;
        this.#timer = setTimeout(loop, this.#tickMs);
        this.#timer.unref();
      });
    };
    this.#timer = setTimeout(loop, this.#tickMs);
    this.#timer.unref();
  }

  /**
   * One round: renew, take or let go, read the owners. Whenever the shards held differ
   * from those the index was last filled for (a change, or a rebuild that failed), a
   * rebuild for them starts (one at a time); each shard is marked ready, and answered
   * for, once a rebuild that included it under its fence is swapped in.
   */
  async tick(): Promise<void> {
    let renewed = false;
    try {
      const change = await this.#leases.tick();
      renewed = true;
      if (change.refused)
        this.#logger.error(
          { err: describeError(change.refused) },
          'index shards: replicas disagree on LETHE_INDEX_SHARDS; none are taken or let go until they agree',
        );
      if (change.gained.size > 0 || change.lost.length > 0) {
        this.#logger.info({ held: [...this.#leases.held().keys()], gained: [...change.gained.keys()], lost: change.lost }, 'index shards changed');
      }
    } catch (e) {
      this.#logger.warn({ err: describeError(e) }, 'could not renew or take the index shard leases');
    }
    const held = new Map(this.#leases.held());
    for (const s of this.#ready.keys()) if (held.get(s) !== this.#ready.get(s)) this.#ready.delete(s);
    // a renewal that failed says nothing about what is held: the index stays as it is (answering() stops once the leases may have run out)
    const wanted = [...held].filter(([s, f]) => this.#ready.get(s) !== f);
    const same = held.size === this.#indexedFor.size && [...held.keys()].every((s) => this.#indexedFor.has(s));
    if (renewed && !this.#stopped && !this.#filling && (!same || wanted.length > 0)) {
      this.#filling = this.#fill(held).finally(() => {
        this.#filling = undefined;
      });
    }
    await this.refresh().catch((e: unknown) => this.#logger.warn({ err: describeError(e) }, 'could not read the index shard owners'));
  }

  /** Rebuilds the index for the shards `held` (under their fences) and marks them ready; a failure is retried at the next tick. */
  async #fill(held: ReadonlyMap<number, number>): Promise<void> {
    try {
      await this.#vectors.setShards(new Set(held.keys()));
    } catch (e) {
      this.#indexedFor = new Set();
      this.#logger.warn({ err: describeError(e) }, 'could not fill the indexes for the shards held: trying again at the next tick');
      return;
    }
    this.#indexedFor = new Set(held.keys());
    try {
      for (const [shard, fence] of held) {
        if (this.#stopped || this.#leases.held().get(shard) !== fence || this.#ready.get(shard) === fence) continue;
        if (await this.#leases.markReady(shard, fence)) this.#ready.set(shard, fence);
      }
      await this.refresh();
    } catch (e) {
      // marked at the next tick (the index holds them already)
      this.#logger.warn({ err: describeError(e) }, 'could not mark the index shards ready');
    }
  }

  ask(url: string, request: PeerRankRequest, timeoutMs = PEER_TIMEOUT_MS): Promise<PeerRankAnswer> {
    return this.#call(url, PEER_RANK_PATH, request, PeerRankAnswerSchema, timeoutMs);
  }

  /**
   * An erasure's probe over every shard: this replica's part for the shards it answers
   * for, each owner's for the others (the routing read again once when a shard has no
   * searchable owner); the shards no owner answered for under the fence asked are missing.
   */
  async probe(
    target: ProbeTarget,
    input: ProbePartInput,
    options: { readonly reconcile: boolean },
    local: (input: ProbePartInput, shards: ReadonlySet<number>) => Promise<ProbePart>,
  ): Promise<{ parts: ProbePart[]; missing: number[]; progressing: number[] }> {
    const all = Array.from({ length: this.count }, (_, i) => i);
    let plan = planShards(this.answering(), this.#rows, this.replicaId, all);
    if (plan.missing.length > 0) {
      await this.refresh();
      plan = planShards(this.answering(), this.#rows, this.replicaId, all);
    }
    const missing = [...plan.missing];
    const mine = async (): Promise<ProbePart[]> => {
      if (plan.mine.length === 0) return [];
      if (options.reconcile) await this.#vectors.reconcile();
      return [await local(input, new Set(plan.mine))];
    };
    const theirs = [...plan.peers].map(async ([url, shards]) => {
      try {
        const answer = await this.#call(
          url,
          PEER_PROBE_PATH,
          encodePeerProbe(target, input, { reconcile: options.reconcile, shards, count: this.count }),
          PeerProbeAnswerSchema,
          PROBE_TIMEOUT_MS,
        );
        const answered = new Map(answer.shards.map((s) => [s.shard, s.fence]));
        for (const s of shards) if (answered.get(s.shard) !== s.fence) missing.push(s.shard);
        return answer.shards.length > 0 ? [answer.part] : [];
      } catch (e) {
        this.#logger.warn({ err: describeError(e) }, 'a replica did not answer for its index shards in an erasure probe');
        missing.push(...shards.map((s) => s.shard));
        return [];
      }
    });
    const parts = (await Promise.all([mine(), ...theirs])).flat();
    // a missing shard a live replica holds and is rebuilding is a takeover under way
    await this.refresh().catch(() => undefined);
    const rows = new Map(this.#rows.map((r) => [r.shard, r]));
    const progressing = missing.filter((s) => rows.get(s)?.live && rows.get(s)?.state === 'rebuilding');
    return { parts, missing: missing.sort((a, b) => a - b), progressing };
  }

  /** One signed call to the replica at `url`: its answer, once its signature (by that replica, for this call) and shape check out. */
  async #call<T>(url: string, path: string, request: unknown, schema: { parse(value: unknown): T }, timeoutMs = PEER_TIMEOUT_MS): Promise<T> {
    const body = new TextEncoder().encode(JSON.stringify(request));
    const signature = this.#calls.sign('POST', path, url, body);
    try {
      const res = await fetch(new URL(path, url), {
        method: 'POST',
        headers: { 'content-type': 'application/json', [REPLICA_CALL_HEADER]: signature },
        body,
        // an owner's address is one a replica vouched for: never followed elsewhere
        redirect: 'error',
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (res.status !== 200) {
        await res.body?.cancel();
        throw new Error(`a peer answered ${res.status}`);
      }
      const answer = new Uint8Array(await res.arrayBuffer());
      this.#calls.verifyAnswer(signature, url, res.headers.get(REPLICA_ANSWER_HEADER), answer);
      return schema.parse(JSON.parse(new TextDecoder().decode(answer)));
    } finally {
      body.fill(0);
    }
  }

  /** Stops ticking and lets every shard go (the others take them at their next tick). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#ticking?.catch(() => undefined);
    await this.#filling;
    this.#ready.clear();
    await this.#leases.release().catch((e: unknown) => this.#logger.warn({ err: describeError(e) }, 'could not let the index shards go'));
    await this.#leases.leave().catch((e: unknown) => this.#logger.warn({ err: describeError(e) }, 'could not leave the index shard members'));
  }
}

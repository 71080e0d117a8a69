/**
 * `replica_heartbeats`: each running replica's row — whether it hears the others'
 * events (listener), whether its in-memory indexes are whole (index), and the last
 * key destruction it applied (applied_seq, the destruction ledger's seq). A replica
 * upserts its row every HEARTBEAT_MS and deletes it when it closes; a row not seen for
 * DEAD_AFTER_BEATS heartbeats is silent (the replica died or is paused). Times are the
 * database's clock, so replicas on other hosts agree on them.
 */
import { sql } from 'drizzle-orm';
import { type Database, queryRows } from '../db/client.js';

export const HEARTBEAT_MS = 2000;
export const DEAD_AFTER_BEATS = 3;
/** A row silent for this long is forgotten (deleted by any replica): its replica is gone. */
export const FORGET_AFTER_MS = 60 * 60 * 1000;

export interface ReplicaStatus {
  readonly listener: 'up' | 'down';
  readonly index: 'ready' | 'rebuilding';
  readonly appliedSeq: number;
}

export interface ReplicaRow extends ReplicaStatus {
  readonly replicaId: string;
  readonly startedAt: Date;
  readonly seenAt: Date;
  /** Seen within DEAD_AFTER_BEATS heartbeats. */
  readonly alive: boolean;
}

/** Which replicas have applied the destruction numbered `seq`. */
export interface Acknowledgement {
  readonly seq: number;
  readonly checkedAt: Date;
  /** Alive and applied_seq ≥ seq. */
  readonly applied: readonly ReplicaRow[];
  /** Alive and behind. */
  readonly lagging: readonly ReplicaRow[];
  /** Not seen for DEAD_AFTER_BEATS heartbeats and behind: dead, or paused with the vectors in memory. */
  readonly silent: readonly ReplicaRow[];
}

type Raw = {
  replica_id: string;
  started_at: Date | string;
  seen_at: Date | string;
  applied_seq: string | number;
  listener: 'up' | 'down';
  index: 'ready' | 'rebuilding';
  alive: boolean;
  now: Date | string;
};

export class ReplicaHeartbeats {
  readonly #db: Database;
  readonly #deadAfterMs: number;

  constructor(db: Database, options: { heartbeatMs?: number } = {}) {
    this.#db = db;
    this.#deadAfterMs = (options.heartbeatMs ?? HEARTBEAT_MS) * DEAD_AFTER_BEATS;
  }

  /** How long a replica may be silent before it counts as dead. */
  get deadAfterMs(): number {
    return this.#deadAfterMs;
  }

  async beat(replicaId: string, startedAt: Date, status: ReplicaStatus): Promise<void> {
    await this.#db.execute(sql`
      insert into replica_heartbeats (replica_id, started_at, seen_at, applied_seq, listener, index)
      values (${replicaId}, ${startedAt.toISOString()}, now(), ${status.appliedSeq}, ${status.listener}, ${status.index})
      on conflict (replica_id) do update set seen_at = now(), applied_seq = excluded.applied_seq, listener = excluded.listener, index = excluded.index`);
  }

  /** A clean shutdown: the replica is gone, nothing waits for it. */
  async remove(replicaId: string): Promise<void> {
    await this.#db.execute(sql`delete from replica_heartbeats where replica_id = ${replicaId}`);
  }

  /** Deletes rows silent for longer than FORGET_AFTER_MS. */
  async forget(): Promise<number> {
    const rows = await queryRows<{ replica_id: string }>(
      this.#db,
      sql`delete from replica_heartbeats where seen_at < now() - make_interval(secs => ${FORGET_AFTER_MS / 1000}) returning replica_id`,
    );
    return rows.length;
  }

  async list(): Promise<{ rows: ReplicaRow[]; now: Date }> {
    const raw = await queryRows<Raw>(
      this.#db,
      sql`select replica_id, started_at, seen_at, applied_seq, listener, index, now() as now,
                 seen_at > now() - make_interval(secs => ${this.#deadAfterMs / 1000}) as alive
            from replica_heartbeats order by replica_id`,
    );
    const rows = raw.map((r) => ({
      replicaId: r.replica_id,
      startedAt: new Date(r.started_at),
      seenAt: new Date(r.seen_at),
      appliedSeq: Number(r.applied_seq),
      listener: r.listener,
      index: r.index,
      alive: r.alive === true || (r.alive as unknown) === 't',
    }));
    return { rows, now: raw[0] ? new Date(raw[0].now) : new Date() };
  }

  async acknowledgement(seq: number): Promise<Acknowledgement> {
    const { rows, now } = await this.list();
    return {
      seq,
      checkedAt: now,
      applied: rows.filter((r) => r.alive && r.appliedSeq >= seq),
      lagging: rows.filter((r) => r.alive && r.appliedSeq < seq),
      silent: rows.filter((r) => !r.alive && r.appliedSeq < seq),
    };
  }
}

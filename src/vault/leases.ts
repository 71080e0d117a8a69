/**
 * Group commit for key leases. A lease must be durable — its audit row, which
 * carries the lease id and expiry, committed — before the DEK leaves the service,
 * but one transaction per lease would serialize every lease on the audit chain's
 * lock. Instead, leases that arrive while batches are committing wait for the next
 * batch: one transaction records them all. At low load a batch is a single lease
 * and adds no latency.
 *
 * A batch is one statement, one round trip: it takes shared locks on the key rows
 * (FOR KEY SHARE: a destruction waits for the batch, then sees its audit rows), and
 * appends the audit rows by compare-and-set on the chain's head. The statement is
 * the authority on key state: a key is leased only if its row is still `active`
 * when the batch commits, whatever the DEK cache believed.
 */
import { type SQL, sql } from 'drizzle-orm';
import { type Database, queryRows } from '../db/client.js';
import type { AuditEvent, AuditLog } from './audit.js';
import { Batcher } from './batcher.js';

export interface LeaseRequest {
  readonly keyId: string;
  readonly subjectHash: Uint8Array;
  readonly leaseId: string;
  readonly expiresAt: Date;
  readonly actor: string;
}

/** ok: recorded; fenced: an erasure holds the key; gone: no live key with this id. */
export type LeaseOutcome = 'ok' | 'fenced' | 'gone';

/** One lease in the group commit's queue (its identity answers it). */
interface Pending {
  readonly request: LeaseRequest;
}

const MAX_BATCH = 512;
/** Compare-and-set attempts before a batch falls back to locking the audit head. */
const CAS_ATTEMPTS = 4;

export class LeaseRecorder {
  readonly #db: Database;
  readonly #audit: AuditLog;
  /** The group commit (batcher.ts). */
  readonly #batches = new Batcher<Pending, LeaseOutcome>((batch) => this.#commit(batch), MAX_BATCH);

  constructor(db: Database, audit: AuditLog) {
    this.#db = db;
    this.#audit = audit;
  }

  record(request: LeaseRequest): Promise<LeaseOutcome> {
    return this.#batches.submit({ request });
  }

  /**
   * Records a batch in one statement: shared locks on its keys, a check that every
   * key is still active, and the audit rows chained onto the head this process
   * expects (compare-and-set, `AuditLog.casTurn`: the process's group commits take
   * turns on the head). Keys that are no longer active leave the batch; a head moved
   * by another writer is re-read. After a few lost races the batch takes the head's
   * lock in a transaction instead, so it always finishes.
   */
  async #commit(batch: readonly Pending[]): Promise<Map<Pending, LeaseOutcome>> {
    const outcomes = new Map<Pending, LeaseOutcome>();
    let pending = [...batch];
    for (let attempt = 0; attempt < CAS_ATTEMPTS && pending.length > 0; attempt++) {
      const keyIds = [...new Set(pending.map((p) => p.request.keyId))];
      const events = pending.map(leaseEvent);
      // the tip's head MAC is checked when it is read: a moved head is refused, not extended
      const result = await this.#audit.casTurn(this.#db, async (tip) => {
        const r = await this.#audit.appendIfHead(this.#db, events, tip, {
          name: 'lethe_lease_batch',
          lockFirst: lockKeys(keyIds),
          guard: sql`(select count(*) from locked where state = 'active') = ${keyIds.length}`,
        });
        if (r.appended) return { value: r, tip: r.tip };
        const states = lockedStates(r.locked);
        // a key no longer active explains the refusal; otherwise another writer moved the head
        return { value: r, tip: pending.some((p) => states.get(p.request.keyId) !== 'active') ? tip : undefined };
      });
      if (result.appended) {
        for (const p of pending) outcomes.set(p, 'ok');
        return outcomes;
      }
      const states = lockedStates(result.locked);
      for (const p of pending) {
        const state = states.get(p.request.keyId);
        if (state !== 'active') outcomes.set(p, state === 'fenced' ? 'fenced' : 'gone');
      }
      pending = pending.filter((p) => states.get(p.request.keyId) === 'active');
    }
    if (pending.length === 0) return outcomes;
    // Contended head: lock it, like every other audited change.
    const rest = pending;
    const states = await this.#db.transaction(async (tx) => {
      const rows = await queryRows<{ key_id: string; state: string }>(tx, lockKeys([...new Set(rest.map((p) => p.request.keyId))]));
      const byKey = new Map(rows.map((r) => [r.key_id, r.state]));
      await this.#audit.append(tx, rest.filter((p) => byKey.get(p.request.keyId) === 'active').map(leaseEvent));
      return byKey;
    });
    for (const p of rest) {
      const state = states.get(p.request.keyId);
      outcomes.set(p, state === 'active' ? 'ok' : state === 'fenced' ? 'fenced' : 'gone');
    }
    return outcomes;
  }
}

/** key id → state of the rows a batch statement locked (`json_agg` of them, or null). */
function lockedStates(locked: unknown): Map<string, string> {
  return new Map(((locked ?? []) as Array<{ key_id: string; state: string }>).map((r) => [r.key_id, r.state]));
}

/**
 * The keys' rows under shared locks — heads only: a key rolled into a shard is leased no
 * more (its lease answers `gone` and is looked up again) — a destruction (FOR UPDATE) waits for them. One
 * index lookup per key (a lateral subquery with a limit: the statement is prepared, and
 * its plan never turns into a scan of subject_keys whatever the planner guesses).
 */
function lockKeys(keyIds: readonly string[]): SQL {
  return sql`select k.key_id, k.state
               from json_array_elements_text(${JSON.stringify(keyIds)}::json) as v(id)
               cross join lateral (select key_id, state from subject_keys where key_id = v.id and head limit 1 for key share) k`;
}

function leaseEvent({ request }: Pending): AuditEvent {
  return {
    actor: request.actor,
    action: 'key.lease',
    keyId: request.keyId,
    subjectHash: request.subjectHash,
    detail: { leaseId: request.leaseId, expiresAt: request.expiresAt.toISOString() },
  };
}

/** How long lethe knows a lease: leases live at most a day (the configuration's bound on LETHE_LEASE_TTL_SECONDS). */
const LEASE_WINDOW = sql`interval '1 day'`;

/**
 * A key's leases of the last day, each with its release if it has one (the first:
 * a release is recorded once, but a second row would change nothing). A lease ends
 * at its release or its expiry, whichever comes first.
 */
function keyLeases(keyId: string): SQL {
  return sql`select l.expires_at, r.released_at, least(l.expires_at, coalesce(r.released_at, l.expires_at)) as ended_at
               from (select detail::json ->> 'leaseId' as lease_id, (detail::json ->> 'expiresAt')::timestamptz as expires_at
                       from audit_log
                      where key_id = ${keyId} and action = 'key.lease' and at > now() - ${LEASE_WINDOW}) l
               left join (select detail::json ->> 'leaseId' as lease_id, min(at) as released_at
                            from audit_log
                           where key_id = ${keyId} and action = 'key.lease.release' and at > now() - ${LEASE_WINDOW}
                           group by 1) r on r.lease_id = l.lease_id`;
}

const asDate = (v: string | Date | null | undefined): Date | null => (v ? new Date(v) : null);

/**
 * The latest expiry of the key's leases that were not released (null when there is
 * none), from its audit rows: what a writer may still hold. Only the last day of the
 * key's history is read (the `(key_id, at)` index).
 */
export async function leasedUntil(exec: Parameters<typeof queryRows>[0], keyId: string): Promise<Date | null> {
  const [row] = await queryRows<{ until: string | Date | null }>(
    exec,
    sql`select max(expires_at) as until from (${keyLeases(keyId)}) x where released_at is null`,
  );
  return asDate(row?.until);
}

/** What became of a key's leases (the erasure's drain_leases step and its certificate). */
export interface LeaseSummary {
  /** Leases handed out for the key in the last day. */
  readonly leases: number;
  /** How many of them their writer released. */
  readonly released: number;
  /** The latest expiry of a lease not released (null: none), past or future. */
  readonly outstandingUntil: Date | null;
  /** When the last lease ended — released or expired — or will end; null without leases. */
  readonly endedAt: Date | null;
  /** How that last lease ended: its writer released it, or it expired (null without leases). */
  readonly lastEnded: 'released' | 'expired' | null;
}

export async function leaseSummary(exec: Parameters<typeof queryRows>[0], keyId: string): Promise<LeaseSummary> {
  const [row] = await queryRows<{
    leases: number;
    released: number;
    outstanding: string | Date | null;
    ended: string | Date | null;
    last_released: boolean | null;
  }>(
    exec,
    sql`with e as (${keyLeases(keyId)})
        select count(*)::int as leases, count(released_at)::int as released,
               max(expires_at) filter (where released_at is null) as outstanding,
               max(ended_at) as ended,
               bool_or(released_at is not null and released_at < expires_at and ended_at = (select max(ended_at) from e)) as last_released
          from e`,
  );
  const leases = row?.leases ?? 0;
  return {
    leases,
    released: row?.released ?? 0,
    outstandingUntil: asDate(row?.outstanding),
    endedAt: asDate(row?.ended),
    lastEnded: leases === 0 ? null : row?.last_released ? 'released' : 'expired',
  };
}

/** A lease as its audit row recorded it. */
export interface LeaseRecord {
  readonly keyId: string;
  readonly expiresAt: Date;
  readonly released: boolean;
}

/**
 * The lease `leaseId` handed out for the subject within the last day — on its live
 * key or on one of its keys destroyed within the day (an erasure's destroyed key: the
 * release that ends its drain) — or undefined. Reads the subject's keys by their
 * indexes, then each key's last day of audit rows by `(key_id, at)`.
 */
export async function findLease(exec: Parameters<typeof queryRows>[0], subjectHash: Uint8Array, leaseId: string): Promise<LeaseRecord | undefined> {
  const [row] = await queryRows<{ key_id: string; expires_at: string | Date; released: boolean }>(
    exec,
    sql`with k as (select key_id from subject_keys where subject_hash = ${subjectHash}
                   union
                   select key_id from destruction_ledger where subject_hash = ${subjectHash} and destroyed_at > now() - ${LEASE_WINDOW})
        select a.key_id, (a.detail::json ->> 'expiresAt')::timestamptz as expires_at,
               exists (select 1 from audit_log r
                        where r.key_id = a.key_id and r.action = 'key.lease.release' and r.at >= a.at
                          and r.detail::json ->> 'leaseId' = ${leaseId}) as released
          from k join audit_log a on a.key_id = k.key_id
         where a.at > now() - ${LEASE_WINDOW} and a.action = 'key.lease' and a.detail::json ->> 'leaseId' = ${leaseId}
         limit 1`,
  );
  return row ? { keyId: row.key_id, expiresAt: new Date(row.expires_at), released: row.released } : undefined;
}

/** The rollback of a release another request recorded first (`recordRelease`). */
class AlreadyReleased extends Error {}

/**
 * Records the release of a lease: its `key.lease.release` audit row (lease id) on the
 * lease's key. True when this call recorded it; false when another did first — the
 * count is taken after `append` holds the chain head's lock, so two concurrent
 * releases of one lease leave one row.
 */
export async function recordRelease(
  db: Database,
  audit: AuditLog,
  release: { keyId: string; subjectHash: Uint8Array; leaseId: string; actor: string },
): Promise<boolean> {
  try {
    await db.transaction(async (tx) => {
      await audit.append(tx, [
        { actor: release.actor, action: 'key.lease.release', keyId: release.keyId, subjectHash: release.subjectHash, detail: { leaseId: release.leaseId } },
      ]);
      const [row] = await queryRows<{ n: number }>(
        tx,
        sql`select count(*)::int as n from audit_log
             where key_id = ${release.keyId} and action = 'key.lease.release' and at > now() - ${LEASE_WINDOW}
               and detail::json ->> 'leaseId' = ${release.leaseId}`,
      );
      if ((row?.n ?? 0) > 1) throw new AlreadyReleased();
    });
    return true;
  } catch (e) {
    if (e instanceof AlreadyReleased) return false;
    throw e;
  }
}

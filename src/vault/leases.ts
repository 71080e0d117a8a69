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
import type { AuditEvent, AuditLog, AuditTip } from './audit.js';

export interface LeaseRequest {
  readonly keyId: string;
  readonly subjectHash: Uint8Array;
  readonly leaseId: string;
  readonly expiresAt: Date;
  readonly actor: string;
}

/** ok: recorded; fenced: an erasure holds the key; gone: no live key with this id. */
export type LeaseOutcome = 'ok' | 'fenced' | 'gone';

interface Pending {
  readonly request: LeaseRequest;
  readonly resolve: (outcome: LeaseOutcome) => void;
  readonly reject: (error: unknown) => void;
}

const MAX_BATCH = 512;
/** Compare-and-set attempts before a batch falls back to locking the audit head. */
const CAS_ATTEMPTS = 4;

export class LeaseRecorder {
  readonly #db: Database;
  readonly #audit: AuditLog;
  #queue: Pending[] = [];
  #running = false;
  /** Where this process believes the audit chain ends; refreshed when it is wrong. */
  #tip: AuditTip | undefined;

  constructor(db: Database, audit: AuditLog) {
    this.#db = db;
    this.#audit = audit;
  }

  record(request: LeaseRequest): Promise<LeaseOutcome> {
    return new Promise<LeaseOutcome>((resolve, reject) => {
      this.#queue.push({ request, resolve, reject });
      this.#kick();
    });
  }

  #kick(): void {
    if (this.#running || this.#queue.length === 0) return;
    this.#running = true;
    const batch = this.#queue.splice(0, MAX_BATCH);
    this.#commit(batch)
      .then(
        (outcomes) => batch.forEach((p) => p.resolve(outcomes.get(p)!)),
        (error: unknown) => {
          this.#tip = undefined;
          batch.forEach((p) => p.reject(error));
        },
      )
      .finally(() => {
        this.#running = false;
        this.#kick();
      });
  }

  /**
   * Records a batch in one statement: shared locks on its keys, a check that every
   * key is still active, and the audit rows chained onto the head this process
   * expects (compare-and-set). Keys that are no longer active leave the batch; a head
   * moved by another writer is re-read. After a few lost races the batch takes the
   * head's lock in a transaction instead, so it always finishes.
   */
  async #commit(batch: readonly Pending[]): Promise<Map<Pending, LeaseOutcome>> {
    const outcomes = new Map<Pending, LeaseOutcome>();
    let pending = [...batch];
    for (let attempt = 0; attempt < CAS_ATTEMPTS && pending.length > 0; attempt++) {
      this.#tip ??= await this.#audit.tip(this.#db); // head MAC checked: a moved head is refused, not extended
      const keyIds = [...new Set(pending.map((p) => p.request.keyId))];
      const result = await this.#audit.appendIfHead(this.#db, pending.map(leaseEvent), this.#tip, {
        lockFirst: lockKeys(keyIds),
        guard: sql`(select count(*) from locked where state = 'active') = ${keyIds.length}`,
      });
      if (result.appended) {
        this.#tip = result.tip;
        for (const p of pending) outcomes.set(p, 'ok');
        return outcomes;
      }
      const states = new Map(((result.locked ?? []) as Array<{ key_id: string; state: string }>).map((r) => [r.key_id, r.state]));
      const inactive = pending.filter((p) => states.get(p.request.keyId) !== 'active');
      if (inactive.length === 0) {
        this.#tip = undefined; // another writer moved the head
        continue;
      }
      for (const p of inactive) outcomes.set(p, states.get(p.request.keyId) === 'fenced' ? 'fenced' : 'gone');
      pending = pending.filter((p) => states.get(p.request.keyId) === 'active');
    }
    if (pending.length === 0) return outcomes;
    // Contended head: lock it, like every other audited change.
    this.#tip = undefined;
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

/** The keys' rows under shared locks: a destruction (FOR UPDATE) waits for them. */
function lockKeys(keyIds: readonly string[]): SQL {
  return sql`select key_id, state from subject_keys
              where key_id in (select json_array_elements_text(${JSON.stringify(keyIds)}::json))
              for key share`;
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

/**
 * The latest expiry of the leases handed out for a key, from its audit rows. Leases
 * live at most a day (the configuration's bound on LETHE_LEASE_TTL_SECONDS), so only
 * the last day of the key's history is read.
 */
export async function leasedUntil(exec: Parameters<typeof queryRows>[0], keyId: string): Promise<Date | null> {
  const [row] = await queryRows<{ until: string | Date | null }>(
    exec,
    sql`select max((detail::json ->> 'expiresAt')::timestamptz) as until
          from audit_log
         where key_id = ${keyId} and action = 'key.lease' and at > now() - interval '1 day'`,
  );
  return row?.until ? new Date(row.until) : null;
}

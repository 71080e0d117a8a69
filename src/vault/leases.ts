/**
 * Group commit for key leases. A lease must be durable (its expiry recorded on the
 * key, its audit row written) before the DEK leaves the service, but one transaction
 * per lease would serialize every lease on the audit chain's lock. Instead, leases
 * that arrive while a batch is committing wait for the next batch: one transaction
 * records them all. At low load a batch is a single lease and adds no latency.
 *
 * The batch transaction is also the authority on key state: a key is leased only if
 * its row is still `active` at commit, whatever the DEK cache believed.
 */
import { sql } from 'drizzle-orm';
import { type Db, queryRows } from '../db/client.js';
import type { AuditLog } from './audit.js';

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

export class LeaseRecorder {
  readonly #db: Db;
  readonly #audit: AuditLog;
  #queue: Pending[] = [];
  #running = false;

  constructor(db: Db, audit: AuditLog) {
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
        (outcomes) => batch.forEach((p, i) => p.resolve(outcomes[i]!)),
        (error: unknown) => batch.forEach((p) => p.reject(error)),
      )
      .finally(() => {
        this.#running = false;
        this.#kick();
      });
  }

  async #commit(batch: readonly Pending[]): Promise<LeaseOutcome[]> {
    const until = new Map<string, Date>();
    for (const { request } of batch) {
      const prev = until.get(request.keyId);
      if (!prev || prev < request.expiresAt) until.set(request.keyId, request.expiresAt);
    }
    const values = JSON.stringify([...until].map(([key_id, exp]) => ({ key_id, exp: exp.toISOString() })));
    return this.#db.db.transaction(async (tx) => {
      const leased = await queryRows<{ key_id: string }>(
        tx,
        sql`update subject_keys as sk
              set leased_until = greatest(sk.leased_until, v.exp)
             from json_to_recordset(${values}::json) as v(key_id text, exp timestamptz)
            where sk.key_id = v.key_id and sk.state = 'active'
        returning sk.key_id`,
      );
      const ok = new Set(leased.map((r) => r.key_id));
      const missing = [...until.keys()].filter((k) => !ok.has(k));
      const fenced = new Set<string>();
      if (missing.length > 0) {
        const rows = await queryRows<{ key_id: string }>(
          tx,
          sql`select key_id from subject_keys
               where key_id in (select json_array_elements_text(${JSON.stringify(missing)}::json)) and state = 'fenced'`,
        );
        for (const r of rows) fenced.add(r.key_id);
      }
      await this.#audit.append(
        tx,
        batch
          .filter((p) => ok.has(p.request.keyId))
          .map(({ request }) => ({
            actor: request.actor,
            action: 'key.lease' as const,
            keyId: request.keyId,
            subjectHash: request.subjectHash,
            detail: { leaseId: request.leaseId, expiresAt: request.expiresAt.toISOString() },
          })),
      );
      return batch.map(({ request }) => (ok.has(request.keyId) ? 'ok' : fenced.has(request.keyId) ? 'fenced' : 'gone'));
    });
  }
}

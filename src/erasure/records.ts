/**
 * The erasure module's tables: `erasures` (one row per request, the durable state
 * machine) and `erasure_transitions` (one row per transition: the timeline and the
 * events stream). Reads and the writes every part of the engine shares; the worker's
 * claim-guarded commits are in worker.ts. Every write of a running erasure's row is
 * guarded by `claimed_by = <the claim's token>`: a claim that was lost or given up writes nothing.
 */
import { and, asc, eq, gt, inArray, type SQL, sql } from 'drizzle-orm';
import { type Database, EVENTS_CHANNEL, queryRows, type Transaction } from '../db/client.js';
import { afterPosition, type KeysetPage, type KeysetPosition, positionOrder, positionTime } from '../db/keyset.js';
import { type ErasureRow, erasures, erasureTransitions } from '../db/schema.js';
import { LetheError } from '../errors.js';
import { isId } from '../ids.js';
import { notify } from '../vault/events.js';
import { assertStatusTransition, type ErasureStatus, OPEN_STATUSES, type StepName } from './machine.js';
import type { ErasureState } from './state.js';
import type { ErasureTransition } from './view.js';

export class ErasureRecords {
  readonly #db: Database;
  /** This replica's name in claims and transition rows. */
  readonly replica: string;

  constructor(db: Database, replica: string) {
    this.#db = db;
    this.replica = replica;
  }

  get db(): Database {
    return this.#db;
  }

  /** The erasure's row; not_found for an id that is not one (any length) or unknown. */
  async row(erasureId: string): Promise<ErasureRow> {
    if (!isId('ers', erasureId)) throw new LetheError('not_found', 'no such erasure');
    const [row] = await this.#db.select().from(erasures).where(eq(erasures.erasureId, erasureId));
    if (!row) throw new LetheError('not_found', 'no such erasure');
    return row;
  }

  /**
   * A page of erasures, oldest first (keyset on (created_at, erasure id): src/db/keyset.ts),
   * each row with its position; only the subject's when `subjectHash` is given. One query.
   */
  async page(page: KeysetPage & { subjectHash?: Uint8Array | undefined }): Promise<Array<{ row: ErasureRow; position: KeysetPosition }>> {
    const query = this.#db
      .select({ row: erasures, time: positionTime(erasures.createdAt) })
      .from(erasures)
      .where(and(page.subjectHash ? eq(erasures.subjectHash, page.subjectHash) : undefined, afterPosition(erasures.createdAt, erasures.erasureId, page.after)))
      .orderBy(...positionOrder(erasures.createdAt, erasures.erasureId));
    const rows = await (page.limit === undefined ? query : query.limit(page.limit));
    return rows.map(({ row, time }) => ({ row, position: { createdAt: time, id: row.erasureId } }));
  }

  /** The erasure's status alone (what a follower polls). */
  async status(erasureId: string): Promise<ErasureStatus> {
    if (!isId('ers', erasureId)) throw new LetheError('not_found', 'no such erasure');
    const [row] = await this.#db.select({ status: erasures.status }).from(erasures).where(eq(erasures.erasureId, erasureId));
    if (!row) throw new LetheError('not_found', 'no such erasure');
    return row.status;
  }

  /** The subject's open erasure of the whole subject, if any (there is at most one; records-scope erasures are not counted). */
  async openFor(subjectHash: Uint8Array): Promise<{ erasureId: string; status: ErasureStatus } | undefined> {
    const [row] = await this.#db
      .select({ erasureId: erasures.erasureId, status: erasures.status })
      .from(erasures)
      .where(and(eq(erasures.subjectHash, subjectHash), inArray(erasures.status, [...OPEN_STATUSES]), eq(erasures.scope, 'subject')))
      .limit(1);
    return row;
  }

  /**
   * Of `erasureIds`, the open forgets by where they are: `fingerprinted` — fingerprints
   * taken, next step the fence or the destroy: a forget's re-key may take their entries
   * along (their destroy then finds the key destroyed and goes on from there); `coming`
   * — not fingerprinted yet (classify, fingerprint): what a re-key may wait a moment for.
   */
  async openForgets(erasureIds: readonly string[]): Promise<{ fingerprinted: Set<string>; coming: Set<string> }> {
    const out = { fingerprinted: new Set<string>(), coming: new Set<string>() };
    if (erasureIds.length === 0) return out;
    const rows = await this.#db
      .select({ erasureId: erasures.erasureId, step: erasures.step })
      .from(erasures)
      .where(and(inArray(erasures.erasureId, [...erasureIds]), inArray(erasures.status, [...OPEN_STATUSES]), eq(erasures.scope, 'records')));
    for (const r of rows) {
      if (r.step === 'fence' || r.step === 'destroy') out.fingerprinted.add(r.erasureId);
      else if (r.step === 'classify' || r.step === 'fingerprint') out.coming.add(r.erasureId);
    }
    return out;
  }

  /**
   * Inserts a new erasure with its first transition row and that row's notification,
   * in one statement (a request's transaction is on every forget's path), unless the
   * subject already has an open one (false then, and nothing written).
   */
  async insert(tx: Transaction, row: typeof erasures.$inferInsert & { step: string }, detail: string): Promise<boolean> {
    const insert = tx.insert(erasures).values(row).onConflictDoNothing().returning({ erasureId: erasures.erasureId });
    const rows = await queryRows<{ erasure_id: string }>(
      tx,
      sql`with ins as (${insert.getSQL()}),
               tr as (insert into erasure_transitions (erasure_id, from_step, to_step, status, at, replica, detail)
                      select erasure_id, null, ${row.step}, ${row.status}, now(), ${this.replica}, ${detail} from ins)
          select erasure_id, pg_notify(${EVENTS_CHANNEL}, ${JSON.stringify({ t: 'erasure', erasureId: row.erasureId })}) from ins`,
    );
    return rows.length > 0;
  }

  /**
   * Transitions after `afterId`, oldest first (at most 500: the events stream pages);
   * not_found for no such erasure, unless the caller `checked` it already.
   */
  async transitions(erasureId: string, afterId = 0, options: { checked?: boolean } = {}): Promise<ErasureTransition[]> {
    if (!options.checked) await this.status(erasureId);
    const rows = await this.#db
      .select()
      .from(erasureTransitions)
      .where(and(eq(erasureTransitions.erasureId, erasureId), gt(erasureTransitions.id, afterId)))
      .orderBy(asc(erasureTransitions.id))
      .limit(500);
    return rows.map((r) => ({ id: r.id, fromStep: r.fromStep, toStep: r.toStep, status: r.status, at: r.at.toISOString(), detail: r.detail }));
  }

  /**
   * One row of the timeline, in the caller's transaction, and its notification
   * (`{ t: 'erasure', erasureId }` on the replica channel), delivered when the
   * transaction commits: every replica's events streams on the erasure wake on it.
   */
  async transition(exec: Database | Transaction, erasureId: string, from: string | null, to: string | null, status: string, detail: string): Promise<void> {
    await exec.insert(erasureTransitions).values({ erasureId, fromStep: from, toStep: to, status, at: new Date(), replica: this.replica, detail });
    await notify(exec, { t: 'erasure', erasureId });
  }

  /**
   * Moves an erasure, in the caller's transaction: checks the status move (machine.ts),
   * updates its row where `guard` still holds, and writes the transition row with its
   * notification. The updated row, or undefined when the guard no longer held (nothing written).
   */
  async move(tx: Transaction, m: Move): Promise<ErasureRow | undefined> {
    assertStatusTransition(m.from.status, m.to.status);
    const [row] = await tx
      .update(erasures)
      .set({ ...m.set, status: m.to.status, step: m.to.step, updatedAt: new Date() })
      .where(and(eq(erasures.erasureId, m.erasureId), m.guard))
      .returning();
    if (row) await this.transition(tx, m.erasureId, m.from.step, m.to.step, m.to.status, m.detail);
    return row;
  }

  /** Saves a running step's progress (only while `claim`, the token the worker claimed the row with, still holds it). */
  async checkpoint(erasureId: string, state: ErasureState, claim: string): Promise<void> {
    await this.#db
      .update(erasures)
      .set({ state, updatedAt: new Date() })
      .where(and(eq(erasures.erasureId, erasureId), eq(erasures.claimedBy, claim)));
  }

  /** Stores the sealed probe fingerprints (only while `claim` still holds the row). */
  async saveFingerprints(erasureId: string, sealed: Uint8Array, claim: string): Promise<void> {
    await this.#db
      .update(erasures)
      .set({ sealedFingerprints: sealed })
      .where(and(eq(erasures.erasureId, erasureId), eq(erasures.claimedBy, claim)));
  }

  /**
   * Makes the subject's open erasure parked at `step` runnable now (`not_before` =
   * now), unless a replica holds it (a live claim): `running` then — that run may still
   * park on what it read before, so the caller wakes it again once it has; `woken`
   * otherwise (also when it was runnable already); `none` when no open erasure of the
   * subject waits at `step`.
   */
  async wake(subjectHash: Uint8Array, step: StepName): Promise<'woken' | 'running' | 'none'> {
    const [row] = await queryRows<{ held: boolean | null }>(
      this.#db,
      sql`with target as (select erasure_id, (claimed_by is not null and claimed_until >= now()) as held
                            from erasures
                           where subject_hash = ${subjectHash} and status in ('pending', 'running') and step = ${step}),
               woken as (update erasures e set not_before = now(), updated_at = now()
                           from target t
                          where e.erasure_id = t.erasure_id and not t.held and e.not_before > now()
                      returning 1)
          select (select bool_or(held) from target) as held, (select count(*) from woken) as woken`,
    );
    if (row?.held === null || row?.held === undefined) return 'none';
    return row.held ? 'running' : 'woken';
  }

  /** Whether the subject has an open erasure of the whole subject, inside the caller's transaction (the key-creation guard). */
  async isOpen(tx: Transaction, subjectHash: Uint8Array): Promise<boolean> {
    const [row] = await queryRows<{ one: number }>(
      tx,
      sql`select 1 as one from erasures where subject_hash = ${subjectHash} and status in ('pending', 'running') and scope = 'subject' limit 1`,
    );
    return row !== undefined;
  }
}

/** An erasure's move (records.move): from where to where, what else changes, and what must still hold. */
export interface Move {
  readonly erasureId: string;
  /** The row's status as read, and the step the timeline names as left (null: none). */
  readonly from: { readonly status: ErasureStatus; readonly step: StepName | null };
  readonly to: { readonly status: ErasureStatus; readonly step: StepName | null };
  readonly set?: Omit<Partial<typeof erasures.$inferInsert>, 'status' | 'step' | 'updatedAt'>;
  /** What must still hold for the move (the worker's claim and step); none under a row lock. */
  readonly guard?: SQL | undefined;
  readonly detail: string;
}

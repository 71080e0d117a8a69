/**
 * Key destruction: how it is recorded, and the one event that tells everyone else.
 *
 * Every destruction — a subject key, an artifact-version key, an erasure's own key —
 * is recorded by `record` inside a transaction opened by `transaction`: the ledger
 * row, the audit row, the `within` work of the modules that hold rows sealed under
 * the key (their rows go in the same transaction), and a notification that other
 * replicas hear on commit. Once the transaction commits, the destroyed key ids are
 * published to subscribers on this replica; another replica publishes them when it
 * hears the notification and finds the key gone. A destruction recorded outside
 * `transaction` is a programming error (it would never be published) and throws.
 *
 * A replica publishes each destruction once: its own notification of a key it is
 * destroying is not published again. Subscribers (the vector index, backup
 * propagation) must still be idempotent: a destruction heard from a replica before
 * this one committed its own of the same key is published twice.
 */
import { and, inArray, isNull, sql } from 'drizzle-orm';
import { type Database, queryRows, type Transaction } from '../db/client.js';
import { destructionLedger, type LedgerRow } from '../db/schema.js';
import { LetheError } from '../errors.js';
import type { AuditEvent, AuditLog } from './audit.js';
import { notify } from './events.js';

/** Where a published destruction was committed: here, or on another replica. */
export type DestructionOrigin = 'local' | 'replica';

export type DestructionListener = (keyIds: readonly string[], origin: DestructionOrigin) => void;

/** Work that must commit together with a destruction (rows sealed under the destroyed keys). */
export type WithinDestruction = (tx: Transaction, keyIds: readonly string[]) => Promise<void>;

export interface DestructionRecord {
  readonly keyId: string;
  readonly keyKind: LedgerRow['keyKind'];
  /** The subject a subject key belonged to; null for artifact-version keys. */
  readonly subjectHash: Uint8Array | null;
  readonly wrappedEpoch: number;
  readonly reason: string;
  readonly destroyedAt: Date;
  /** Leases handed out before the destruction stay usable by their holders until then. */
  readonly leasedUntil: Date | null;
}

/** How many destroyed key ids a replica remembers having published (a late notification is not published twice). */
const PUBLISHED_MEMORY = 10_000;

export class KeyDestructions {
  readonly #db: Database;
  readonly #audit: AuditLog;
  readonly #within: WithinDestruction[] = [];
  readonly #listeners = new Set<DestructionListener>();
  readonly #open = new WeakMap<Transaction, string[]>();
  /** Keys destroyed by a transaction of this replica still committing: its own notification must not publish them first. */
  readonly #committing = new Set<string>();
  readonly #published = new Set<string>();

  constructor(deps: { db: Database; audit: AuditLog }) {
    this.#db = deps.db;
    this.#audit = deps.audit;
  }

  /** Registers work that commits with every destruction (a module dropping its rows sealed under the key). */
  within(work: WithinDestruction): void {
    this.#within.push(work);
  }

  /** Told once a destruction committed on this replica, or was heard of from another one. */
  subscribe(listener: DestructionListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Runs `fn` in one transaction; the keys it destroys are published once it commits. */
  async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    let destroyed: string[] = [];
    try {
      const result = await this.#db.transaction(async (tx) => {
        destroyed = [];
        this.#open.set(tx, destroyed);
        return fn(tx);
      });
      if (destroyed.length > 0) this.#publish(destroyed, 'local');
      return result;
    } finally {
      for (const k of destroyed) this.#committing.delete(k);
    }
  }

  /**
   * Records a destruction in `tx` (opened by `transaction`): the ledger row, the
   * audit row, the work registered with `within`, and the replicas' notification.
   * The caller has already removed the wrapped key. A key already in the ledger is
   * left as it was (its first destruction stands).
   */
  async record(tx: Transaction, record: DestructionRecord, audit: AuditEvent): Promise<void> {
    const pending = this.#open.get(tx);
    if (!pending) throw new LetheError('internal', 'a key destruction was recorded outside KeyDestructions.transaction');
    const row = tx.insert(destructionLedger).values(record);
    // a subject key meeting its own ledger row while still live is an invariant broken: abort;
    // a version key's destruction recorded twice is idempotent
    await (record.keyKind === 'subject' ? row : row.onConflictDoNothing());
    for (const work of this.#within) await work(tx, [record.keyId]);
    await this.#audit.append(tx, [audit]);
    await notify(tx, { t: 'key', keyId: record.keyId });
    pending.push(record.keyId);
    this.#committing.add(record.keyId);
  }

  /**
   * A destruction already in the ledger, met again inside `tx` (a destroy call found
   * the key gone): published after `tx` commits unless this replica already
   * published it — another replica's destruction whose notification has not arrived
   * here yet reaches this replica's subscribers now.
   */
  confirm(tx: Transaction, keyId: string): void {
    const pending = this.#open.get(tx);
    if (!pending) throw new LetheError('internal', 'a key destruction was confirmed outside KeyDestructions.transaction');
    if (!this.#published.has(keyId)) pending.push(keyId);
  }

  /**
   * Another replica changed a key (fenced, unfenced, re-wrapped or destroyed it):
   * published here when the key is gone. Checked even when nothing here holds the
   * key: a load may be decrypting it right now.
   */
  async heard(keyId: string): Promise<void> {
    if (this.#published.has(keyId) || this.#committing.has(keyId)) return;
    const rows = await queryRows<{ one: number }>(
      this.#db,
      sql`select 1 as one from subject_keys where key_id = ${keyId} union all select 1 from artifact_keys where key_id = ${keyId}`,
    );
    // published by this replica's own commit while we looked: not again
    if (rows.length === 0 && !this.#published.has(keyId)) this.#publish([keyId], 'replica');
  }

  /**
   * Destructions read from the ledger by this replica's cursor (src/vault/catch-up.ts):
   * those not yet published here (their notification was missed) are published now.
   * Answers how many were.
   */
  caughtUp(keyIds: readonly string[]): number {
    const missed = [...new Set(keyIds)].filter((k) => !this.#published.has(k) && !this.#committing.has(k));
    if (missed.length > 0) this.#publish(missed, 'replica');
    return missed.length;
  }

  /**
   * Marks destructions durable: their record is stored in the backup bucket's ledger
   * chain (called by the backups module inside the transaction that confirms it).
   */
  async markDurable(tx: Transaction, keyIds: readonly string[]): Promise<void> {
    const unique = [...new Set(keyIds)];
    for (let i = 0; i < unique.length; i += 1000) {
      await tx
        .update(destructionLedger)
        .set({ durableAt: new Date() })
        .where(and(inArray(destructionLedger.keyId, unique.slice(i, i + 1000)), isNull(destructionLedger.durableAt)));
    }
  }

  /**
   * A restore's database: only what the bucket's ledger chain holds is durable there
   * (rows the backup carried as durable but the chain lacks — a forced restore — are
   * written into the chain again).
   */
  async resetDurable(tx: Transaction): Promise<void> {
    await tx.update(destructionLedger).set({ durableAt: null });
  }

  /** Those of `keyIds` destroyed but not yet durable in the backup bucket's ledger chain (pending). */
  async pendingDurable(keyIds: readonly string[]): Promise<string[]> {
    const unique = [...new Set(keyIds)];
    if (unique.length === 0) return [];
    const rows = await this.#db
      .select({ keyId: destructionLedger.keyId })
      .from(destructionLedger)
      .where(and(inArray(destructionLedger.keyId, unique), isNull(destructionLedger.durableAt)));
    return rows.map((r) => r.keyId);
  }

  /** How many destructions are not yet durable in the ledger chain, and since when the oldest waits. */
  async pendingSummary(): Promise<{ pending: number; oldest: Date | null }> {
    const [row] = await queryRows<{ n: number | string; oldest: Date | string | null }>(
      this.#db,
      sql`select count(*) as n, min(destroyed_at) as oldest from destruction_ledger where durable_at is null`,
    );
    return { pending: Number(row?.n ?? 0), oldest: row?.oldest ? new Date(row.oldest) : null };
  }

  /** The ledger rows of the destroyed keys among `keyIds`. */
  async ledger(keyIds: readonly string[]): Promise<LedgerRow[]> {
    const unique = [...new Set(keyIds)];
    if (unique.length === 0) return [];
    return this.#db.select().from(destructionLedger).where(inArray(destructionLedger.keyId, unique));
  }

  /** The ledger row of one key, if it was destroyed. */
  async get(keyId: string): Promise<LedgerRow | undefined> {
    return (await this.ledger([keyId]))[0];
  }

  #publish(keyIds: readonly string[], origin: DestructionOrigin): void {
    for (const k of keyIds) {
      this.#published.add(k);
      if (this.#published.size > PUBLISHED_MEMORY) this.#published.delete(this.#published.values().next().value!);
    }
    for (const listener of this.#listeners) listener(keyIds, origin);
  }
}

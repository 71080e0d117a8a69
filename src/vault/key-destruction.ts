/**
 * Destroying a subject key, and replacing one (a re-key): the wrapped DEK's row is
 * deleted — not flagged — under FOR UPDATE, which waits for every lease batch holding
 * the row, so the latest lease expiry is known and recorded; the destruction is
 * recorded (ledger, audit, notification, rows sealed under the key) in the same
 * transaction. KeyService calls these and drops its cached DEK afterwards.
 */
import { eq } from 'drizzle-orm';
import type { Database, Transaction } from '../db/client.js';
import { destructionLedger, type KeyReplacement, subjectKeys, type SubjectKeyRow } from '../db/schema.js';
import { LetheError } from '../errors.js';
import type { KeyProvider } from '../keyprovider/provider.js';
import type { AuditLog } from './audit.js';
import type { KeyDestructions } from './destructions.js';
import { leasedUntil } from './leases.js';
import { assertKeyTransition } from './lifecycle.js';
import { wrapUnderActive } from './wrapping.js';

export interface Destruction {
  readonly keyId: string;
  readonly destroyedAt: Date;
  readonly wrappedEpoch: number;
  readonly leasedUntil: Date | null;
  /** False when the key had already been destroyed (the call is idempotent). */
  readonly destroyedNow: boolean;
}

export interface Replacement {
  readonly reason: string;
  readonly actor: string;
  readonly newKeyId: string;
  readonly newDek: Uint8Array;
  /** The new key's state: fenced when an erasure of the subject holds the old one (default active). */
  readonly newState?: 'active' | 'fenced';
  /**
   * Asked under the old key's row lock, in the replacing transaction, when the new key
   * would be active: true refuses the replacement (conflict, retryable) and changes
   * nothing (KeyService: a creation guard refuses the subject a key now — an erasure of
   * it was requested while the caller held the old key fenced, and counts on that key).
   */
  readonly refuseIf?: (tx: Transaction, subjectHash: Uint8Array) => Promise<boolean>;
  /** Moves the caller's records onto the new key, inside the same transaction. */
  readonly migrate: (tx: Transaction) => Promise<void>;
  /**
   * The records moved, as a restore replays them (`destruction_ledger.replaced_by`):
   * [entry id, its record key wrapped under the new key (hex)], and those that cannot be.
   */
  readonly carried?: { readonly records: ReadonlyArray<readonly [string, string]>; readonly lost: readonly string[] };
  /** Shard keys made alongside the new key (never heads), and the records each carries, as `carried` (key-shards.ts). */
  readonly shards?: ReadonlyArray<{ readonly keyId: string; readonly dek: Uint8Array; readonly records: ReadonlyArray<readonly [string, string]> }>;
}

interface Deps {
  readonly db: Database;
  readonly provider: KeyProvider;
  readonly audit: AuditLog;
  readonly destructions: KeyDestructions;
  readonly now?: (() => Date) | undefined;
}

/** Destroys a subject key; a key already destroyed answers its original destruction. */
export function destroySubjectKey(d: Deps, keyId: string, options: { reason: string; actor: string }): Promise<Destruction> {
  return d.destructions.transaction(async (tx) => {
    const [row] = await tx.select().from(subjectKeys).where(eq(subjectKeys.keyId, keyId)).for('update');
    if (!row) {
      const [prior] = await tx.select().from(destructionLedger).where(eq(destructionLedger.keyId, keyId));
      if (!prior) throw new LetheError('not_found', 'no such key');
      d.destructions.confirm(tx, keyId);
      return { keyId, destroyedAt: prior.destroyedAt, wrappedEpoch: prior.wrappedEpoch, leasedUntil: prior.leasedUntil, destroyedNow: false };
    }
    return destroyLocked(d, tx, row, options);
  });
}

/** Destroys `oldKeyId` and makes `newKeyId` the subject's live key, in one transaction. */
export function replaceSubjectKey(d: Deps, oldKeyId: string, options: Replacement): Promise<Destruction> {
  return d.destructions.transaction(async (tx) => {
    const [row] = await tx.select().from(subjectKeys).where(eq(subjectKeys.keyId, oldKeyId)).for('update');
    if (!row) throw new LetheError('key_destroyed', 'the key to replace no longer exists');
    const state = options.newState ?? 'active';
    if (state === 'active' && (await options.refuseIf?.(tx, row.subjectHash))) {
      throw new LetheError('conflict', "an erasure of the subject was requested during the re-key: it takes the subject's key over, nothing was replaced", {
        retryable: true,
      });
    }
    const { epoch, wrappedDek } = await wrapUnderActive(tx, d.provider, options.newKeyId, options.newDek, 'subject');
    const shards = [];
    for (const s of options.shards ?? []) shards.push({ ...s, ...(await wrapUnderActive(tx, d.provider, s.keyId, s.dek, 'subject')) });
    const destruction = await destroyLocked(d, tx, row, options);
    const now = (d.now ?? (() => new Date()))();
    // the replacement keeps the old key's place (head or shard); a head's count starts again (key-shards.ts)
    const common = { subjectHash: row.subjectHash, state, createdAt: now, updatedAt: now, nextSeq: row.nextSeq, baseSeq: row.nextSeq };
    await tx
      .insert(subjectKeys)
      .values([
        { ...common, keyId: options.newKeyId, epoch, wrappedDek, head: row.head },
        ...shards.map((s) => ({ ...common, keyId: s.keyId, epoch: s.epoch, wrappedDek: s.wrappedDek, head: false })),
      ]);
    await d.audit.append(tx, [
      { actor: options.actor, action: 'key.create', keyId: options.newKeyId, subjectHash: row.subjectHash, epoch, detail: { replaces: oldKeyId } },
      ...shards.map((s) => ({
        actor: options.actor,
        action: 'key.create' as const,
        keyId: s.keyId,
        subjectHash: row.subjectHash,
        epoch: s.epoch,
        detail: { replaces: oldKeyId, shard: true },
      })),
    ]);
    await options.migrate(tx);
    if (options.carried) {
      const replacedBy: KeyReplacement = {
        keyId: options.newKeyId,
        epoch,
        wrappedDek: Buffer.from(wrappedDek).toString('hex'),
        records: options.carried.records,
        lost: options.carried.lost,
        ...(shards.length > 0
          ? { shards: shards.map((s) => ({ keyId: s.keyId, epoch: s.epoch, wrappedDek: Buffer.from(s.wrappedDek).toString('hex'), records: s.records })) }
          : {}),
      };
      await tx.update(destructionLedger).set({ replacedBy }).where(eq(destructionLedger.keyId, oldKeyId));
    }
    return destruction;
  });
}

/** Destroys a key whose row `tx` holds FOR UPDATE. */
async function destroyLocked(d: Deps, tx: Transaction, row: SubjectKeyRow, options: { reason: string; actor: string }): Promise<Destruction> {
  const keyId = row.keyId;
  assertKeyTransition(row.state, 'destroyed');
  // FOR UPDATE waited for every lease batch holding the row: all its leases are visible
  const until = await leasedUntil(tx, keyId);
  const destroyedAt = (d.now ?? (() => new Date()))();
  await tx.delete(subjectKeys).where(eq(subjectKeys.keyId, keyId));
  await d.destructions.record(
    tx,
    { keyId, keyKind: 'subject', subjectHash: row.subjectHash, destroyedAt, reason: options.reason, wrappedEpoch: row.epoch, leasedUntil: until },
    {
      actor: options.actor,
      action: 'key.destroy',
      keyId,
      subjectHash: row.subjectHash,
      epoch: row.epoch,
      detail: { reason: options.reason, leasedUntil: until?.toISOString() ?? null },
    },
  );
  return { keyId, destroyedAt, wrappedEpoch: row.epoch, leasedUntil: until, destroyedNow: true };
}

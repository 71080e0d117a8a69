/**
 * Subject tombstones (`subject_tombstones`, owned here): no re-learning after an
 * erasure. A subject-scope erasure marks its subject in the transaction of its request
 * (engine.ts `request()`, a resume too); from its key's destruction on, no key is
 * created for the subject again — so no lease, service append or reservation either —
 * (the engine's key-creation guard reads the mark in the transaction that would insert
 * the key), and a registration of a destroyed key's entries says `subject_erased`. Only
 * an admin lifts the mark (`POST /v1/subjects/{subject}/reinstate`): the row is deleted
 * and an audit row written in one transaction, never while an erasure of the subject
 * is open.
 */
import { eq } from 'drizzle-orm';
import type { Executor, Transaction } from '../db/client.js';
import { subjectTombstones } from '../db/schema.js';
import { LetheError } from '../errors.js';
import type { ErasureResources } from './resources.js';

export interface Tombstone {
  /** The (latest) erasure that marked the subject. */
  readonly erasureId: string;
  readonly erasedAt: Date;
}

/** The table's reads and writes; reinstatement (its transaction) is `reinstateSubject` below. */
export class SubjectTombstones {
  /**
   * Marks the subject erased by `erasureId`, in the caller's transaction. Upsert: a
   * second erasure of a marked subject keeps the mark, naming the newer erasure.
   */
  async mark(tx: Transaction, subjectHash: Uint8Array, erasureId: string, at: Date): Promise<void> {
    await tx
      .insert(subjectTombstones)
      .values({ subjectHash, erasureId, erasedAt: at })
      .onConflictDoUpdate({ target: subjectTombstones.subjectHash, set: { erasureId, erasedAt: at } });
  }

  /** The subject's mark, if any, read by `exec` (the key-creation guard reads it in the transaction that would insert a key). */
  async find(exec: Executor, subjectHash: Uint8Array): Promise<Tombstone | undefined> {
    const [row] = await exec
      .select({ erasureId: subjectTombstones.erasureId, erasedAt: subjectTombstones.erasedAt })
      .from(subjectTombstones)
      .where(eq(subjectTombstones.subjectHash, subjectHash))
      .limit(1);
    return row;
  }

  /** The subject's mark, locked until `tx` ends (a concurrent erasure request's upsert waits for it). */
  async lock(tx: Transaction, subjectHash: Uint8Array): Promise<Tombstone | undefined> {
    const [row] = await tx
      .select({ erasureId: subjectTombstones.erasureId, erasedAt: subjectTombstones.erasedAt })
      .from(subjectTombstones)
      .where(eq(subjectTombstones.subjectHash, subjectHash))
      .for('update');
    return row;
  }

  /** Lifts the mark, in the caller's transaction. */
  async remove(tx: Transaction, subjectHash: Uint8Array): Promise<void> {
    await tx.delete(subjectTombstones).where(eq(subjectTombstones.subjectHash, subjectHash));
  }
}

/**
 * `POST /v1/subjects/{subject}/reinstate`: lifts the subject's mark so a new key (and
 * leases, appends) may be made for it, with an audit row (`subject.reinstate`: the
 * subject's keyed hash, the erasure that marked it and the admin's reason — never the
 * subject id) in the same transaction. The mark is locked first, then the open
 * erasures are read: an erasure request racing this either commits first (and this
 * answers erasure_in_progress) or marks the subject again once this commits.
 * 409 conflict when the subject is not marked; 409 erasure_in_progress while an
 * erasure of the subject is open; 400 for a reason quoting the subject id (the audit
 * log holds the reason in the clear).
 */
export async function reinstateSubject(res: ErasureResources, subject: string, reason: string, actor: string): Promise<Tombstone> {
  if (reason.includes(subject)) {
    throw new LetheError('validation_failed', 'body.reason: must not quote the subject id (the reason is kept in the clear in the audit log)');
  }
  const subjectHash = res.keys.subjectHash(subject);
  return res.records.db.transaction(async (tx) => {
    const tombstone = await res.tombstones.lock(tx, subjectHash);
    if (!tombstone) throw new LetheError('conflict', 'the subject is not erased: there is no tombstone to lift');
    if (await res.records.isOpen(tx, subjectHash)) {
      throw new LetheError('erasure_in_progress', 'an erasure of the subject is open; reinstate it once the erasure has ended');
    }
    await res.tombstones.remove(tx, subjectHash);
    await res.audit.append(tx, [
      { actor, action: 'subject.reinstate', subjectHash, detail: { erasureId: tombstone.erasureId, erasedAt: tombstone.erasedAt.toISOString(), reason } },
    ]);
    return tombstone;
  });
}

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

export interface Tombstone {
  /** The (latest) erasure that marked the subject. */
  readonly erasureId: string;
  readonly erasedAt: Date;
}

/** The table's reads and writes; reinstatement (its transaction) is reinstate.ts. */
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

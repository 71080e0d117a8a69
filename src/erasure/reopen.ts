/**
 * Re-opening a finished erasure (a redaction order, an approved or revoked dismissal):
 * under the row's lock, a completed or incomplete erasure goes back to running at
 * `step`, the steps it will run again are reset to pending, and a transition row says
 * who asked. `amendFinished` records a change that re-opens nothing (a dismissal
 * proposed or rejected) under the same lock. Either writes its audit row in the same
 * transaction. The caller has checked what it can without the lock; what changed
 * meanwhile is a 409.
 */
import { eq } from 'drizzle-orm';
import { erasures } from '../db/schema.js';
import { isLetheError, LetheError } from '../errors.js';
import type { StepName } from './machine.js';
import type { AuditEvent } from '../vault/audit.js';
import type { ErasureResources } from './resources.js';
import { type ErasureState, parseState } from './state.js';

/** Refuses a re-open of an erasure that is running, failed, or lost its fingerprints. */
export function assertReopenable(row: { status: string; sealKeyId: string | null }, what: string): void {
  if (row.status === 'pending' || row.status === 'running')
    throw new LetheError('conflict', `the erasure is still running; order the ${what} once it has finished`);
  if (row.status === 'failed') throw new LetheError('conflict', 'the erasure failed; request a new erasure of the subject first');
  if (!row.sealKeyId)
    throw new LetheError(
      'conflict',
      'the probe fingerprints were destroyed when the erasure finished with no match left; request a new erasure to probe again',
    );
}

export async function reopenErasure(
  res: ErasureResources,
  erasureId: string,
  order: { step: StepName; run: readonly StepName[]; update: (state: ErasureState) => void; detail: string; audit?: AuditEvent },
): Promise<void> {
  await res.records.db.transaction(async (tx) => {
    const [locked] = await tx.select().from(erasures).where(eq(erasures.erasureId, erasureId)).for('update');
    if (!locked || (locked.status !== 'completed' && locked.status !== 'incomplete'))
      throw new LetheError('conflict', 'the erasure changed meanwhile; try again');
    if (!locked.sealKeyId) throw new LetheError('conflict', 'the probe fingerprints were destroyed meanwhile; request a new erasure to probe again');
    const state = parseState(locked.state);
    order.update(state);
    for (const s of order.run) state.steps[s] = { status: 'pending' };
    try {
      await res.records.move(tx, {
        erasureId,
        from: { status: locked.status, step: null },
        to: { status: 'running', step: order.step },
        set: { state, finishedAt: null, notBefore: new Date(), claimedBy: null, claimedUntil: null, attempts: 0 },
        detail: order.detail,
      });
    } catch (e) {
      if (isUniqueViolation(e)) throw new LetheError('conflict', 'another erasure of this subject is open');
      throw e;
    }
    if (order.audit) await res.audit.append(tx, [order.audit]);
  });
}

/** Changes a finished erasure's state without re-opening it (it stays completed or incomplete), audited. */
export async function amendFinished(res: ErasureResources, erasureId: string, update: (state: ErasureState) => void, audit: AuditEvent): Promise<void> {
  await res.records.db.transaction(async (tx) => {
    const [locked] = await tx.select().from(erasures).where(eq(erasures.erasureId, erasureId)).for('update');
    if (!locked || (locked.status !== 'completed' && locked.status !== 'incomplete'))
      throw new LetheError('conflict', 'the erasure changed meanwhile; try again');
    const state = parseState(locked.state);
    update(state);
    await tx.update(erasures).set({ state, updatedAt: new Date() }).where(eq(erasures.erasureId, erasureId));
    await res.audit.append(tx, [audit]);
  });
}

function isUniqueViolation(e: unknown): boolean {
  return !isLetheError(e) && String((e as { code?: string }).code) === '23505';
}

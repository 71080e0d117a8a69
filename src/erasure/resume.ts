/**
 * Resuming a failed erasure (`POST /v1/erasures/{id}/resume`): under the row's lock a
 * failed erasure goes back to running at the step that failed, its attempts (and the
 * probe's bounded waits) reset, and a transition row says who resumed it and from where. Refused (409) for an
 * erasure that is not failed, and once a newer erasure of the same subject exists
 * (open, or finished: that one has taken the subject over). A subject-scope erasure
 * tombstones its subject again as it resumes (tombstones.ts).
 */
import { and, eq, gt, ne } from 'drizzle-orm';
import { erasures } from '../db/schema.js';
import { isLetheError, LetheError } from '../errors.js';
import { FIRST_RUN, parseStep, type StepName } from './machine.js';
import type { ErasureResources } from './resources.js';
import { type ErasureState, parseState } from './state.js';
import { freshProbeWaits } from './steps/probe.js';

/** The step a failed erasure failed at: the one its state marks failed, else the first of its run not done. */
export function failedStep(state: ErasureState): StepName {
  for (const [name, record] of Object.entries(state.steps)) {
    if (record?.status === 'failed') return parseStep(name) ?? 'classify';
  }
  return FIRST_RUN.find((s) => state.steps[s]?.status !== 'done' && state.steps[s]?.status !== 'skipped') ?? 'certify';
}

export async function resumeErasure(res: ErasureResources, erasureId: string, actor: string): Promise<StepName> {
  const row = await res.records.row(erasureId); // not_found first
  try {
    return await res.records.db.transaction(async (tx) => {
      const [locked] = await tx.select().from(erasures).where(eq(erasures.erasureId, row.erasureId)).for('update');
      if (!locked) throw new LetheError('not_found', 'no such erasure');
      if (locked.status !== 'failed') throw new LetheError('conflict', `the erasure is ${locked.status}; only a failed erasure can be resumed`);
      const [newer] = await tx
        .select({ erasureId: erasures.erasureId, status: erasures.status })
        .from(erasures)
        .where(
          and(
            eq(erasures.subjectHash, locked.subjectHash),
            ne(erasures.erasureId, locked.erasureId),
            gt(erasures.createdAt, locked.createdAt),
            // forgetting other entries of the subject takes nothing over (a failed forget is taken over by nothing but itself)
            eq(erasures.scope, 'subject'),
          ),
        )
        .limit(1);
      if (newer) {
        throw new LetheError(
          'conflict',
          `a newer erasure of the same subject (${newer.erasureId}, ${newer.status}) has taken it over; follow that one instead`,
        );
      }
      const state = parseState(locked.state);
      const step = failedStep(state);
      state.steps[step] = { status: 'pending' };
      freshProbeWaits(state);
      const cause = locked.lastError ? ` (it had failed: ${locked.lastError})` : '';
      await res.records.move(tx, {
        erasureId: locked.erasureId,
        from: { status: locked.status, step: null },
        to: { status: 'running', step },
        set: { state, finishedAt: null, notBefore: new Date(), claimedBy: null, claimedUntil: null, attempts: 0, lastError: null },
        detail: `resumed at ${step} by ${actor}${cause}`,
      });
      // a subject-scope erasure tombstones its subject again (an admin may have reinstated it while the erasure was failed)
      if (locked.scope === 'subject') await res.tombstones.mark(tx, locked.subjectHash, locked.erasureId, locked.createdAt);
      return step;
    });
  } catch (e) {
    // the subject's open-erasure index: another erasure of the subject opened meanwhile
    if (!isLetheError(e) && [e, (e as { cause?: unknown }).cause].some((x) => String((x as { code?: string } | undefined)?.code) === '23505'))
      throw new LetheError('conflict', 'another erasure of this subject is open');
    throw e;
  }
}

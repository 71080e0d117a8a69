/**
 * Ordering a redaction (POST /v1/erasures/{id}/redactions): the named records are
 * other subjects' readable log entries that still carry the erased content (the
 * probe named them). The order re-opens a finished erasure at `redact`, which then
 * runs propagate, probe and certify again. Refused while the erasure runs, after it
 * failed, once its fingerprints were destroyed, and for anything but another
 * subject's readable entry.
 */
import { eq } from 'drizzle-orm';
import { erasures } from '../db/schema.js';
import { isLetheError, LetheError } from '../errors.js';
import { isId } from '../ids.js';
import { assertStatusTransition, REDACTION_RUN } from './machine.js';
import { MAX_REDACTION_IDS } from './request.js';
import type { ErasureResources } from './resources.js';
import { parseState } from './state.js';

export async function orderRedaction(res: ErasureResources, erasureId: string, ids: readonly string[], actor: string): Promise<void> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) throw new LetheError('validation_failed', 'ids: name at least one entry');
  if (unique.length > MAX_REDACTION_IDS) throw new LetheError('validation_failed', `ids: at most ${MAX_REDACTION_IDS} entries per redaction`);
  const row = await res.records.row(erasureId);
  if (row.status === 'pending' || row.status === 'running') throw new LetheError('conflict', 'the erasure is still running; order the redaction once it has finished');
  if (row.status === 'failed') throw new LetheError('conflict', 'the erasure failed; request a new erasure of the subject first');
  if (!row.sealKeyId) throw new LetheError('conflict', 'the probe fingerprints were destroyed when the erasure finished with no match left; request a new erasure to probe again');
  const notEntries = unique.filter((id) => !isId('entry', id));
  if (notEntries.length > 0) {
    throw new LetheError('validation_failed', `ids: ${notEntries.length} id(s) are not log entries (derived artifacts are regenerated from their sources: redact the sources)`);
  }
  const located = await res.log.locate(unique);
  if (located.length !== unique.length) throw new LetheError('validation_failed', `ids: ${unique.length - located.length} id(s) are not entries lethe holds`);
  const own = located.filter((e) => Buffer.from(e.subjectHash).equals(Buffer.from(row.subjectHash)));
  if (own.length > 0) throw new LetheError('validation_failed', `ids: ${own.length} id(s) are the erased subject's own entries (already unreadable)`);
  const live = await res.keys.states(located.map((e) => e.keyId));
  const dead = located.filter((e) => !live.has(e.keyId));
  if (dead.length > 0) throw new LetheError('validation_failed', `ids: ${dead.length} id(s) are already unreadable (their key was destroyed)`);
  await res.records.db.transaction(async (tx) => {
    const [locked] = await tx.select().from(erasures).where(eq(erasures.erasureId, erasureId)).for('update');
    if (!locked || (locked.status !== 'completed' && locked.status !== 'incomplete')) throw new LetheError('conflict', 'the erasure changed meanwhile; try again');
    assertStatusTransition(locked.status, 'running');
    const state = parseState(locked.state);
    state.pendingRedaction = unique;
    state.redactions = [...(state.redactions ?? []), { ids: unique, orderedAt: new Date().toISOString() }];
    for (const s of REDACTION_RUN) state.steps[s] = { status: 'pending' };
    try {
      await tx
        .update(erasures)
        .set({ status: 'running', step: 'redact', state, finishedAt: null, notBefore: new Date(), claimedBy: null, claimedUntil: null, attempts: 0, updatedAt: new Date() })
        .where(eq(erasures.erasureId, erasureId));
    } catch (e) {
      if (isUniqueViolation(e)) throw new LetheError('conflict', 'another erasure of this subject is open');
      throw e;
    }
    await res.records.transition(tx, erasureId, null, 'redact', 'running', `redaction of ${unique.length} record(s) ordered by ${actor}`);
  });
}

function isUniqueViolation(e: unknown): boolean {
  return !isLetheError(e) && String((e as { code?: string }).code) === '23505';
}

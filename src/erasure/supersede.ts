/**
 * Superseding an entry: the update of a memory (`POST /v1/subjects/{subject}/entries/{entryId}/supersede`,
 * the LangGraph store's `put` of an existing key). The successor is appended and the
 * old entry forgotten in one transaction — never two live versions, never a successor
 * stored while the caller is told it failed. The old version's bytes then go as in a
 * forget (forget.ts: a records-scope erasure), but its successor — the same person's
 * current data, not a copy — is not counted by the probe (nor are the successors of
 * that successor), and the erasure's record names it (`supersededBy`).
 */
import { zeroize } from '../crypto/index.js';
import { isLetheError, LetheError } from '../errors.js';
import { newId } from '../ids.js';
import type { AppendInput } from '../log/service.js';
import { checkForgettable } from './forget.js';
import type { ErasureStatus } from './machine.js';
import { openErasure } from './opening.js';
import { type Actor, actorOf } from './request.js';
import type { ErasureResources } from './resources.js';

export interface SupersedeRequest {
  readonly subject: string;
  readonly entryId: string;
  /** The successor. */
  readonly entry: AppendInput;
}

export interface Superseded {
  /** The successor, appended. */
  readonly entry: { readonly entryId: string; readonly keyId: string; readonly seq: number };
  /** The records-scope erasure forgetting the old version. */
  readonly erasureId: string;
  readonly status: ErasureStatus;
}

/**
 * Appends `entry` as the successor of `entryId` (an entry of `subject`) and forgets the
 * old one, atomically. An entry already forgotten or superseded is a `conflict` (naming
 * the erasure that took it): the caller reads the current version and supersedes that.
 */
export async function requestSupersede(res: ErasureResources, input: SupersedeRequest, caller: string | Actor): Promise<Superseded> {
  const actor = actorOf(caller);
  const subjectHash = res.keys.subjectHash(input.subject);
  const earlier = await checkForgettable(res, subjectHash, [input.entryId], actor);
  if (earlier) throw new LetheError('conflict', `the entry was already forgotten or superseded (erasure ${earlier.erasureId}): supersede its current version`);
  for (let attempt = 0; ; attempt++) {
    try {
      return await supersedeOnce(res, input, actor, subjectHash);
    } catch (e) {
      // a forget's re-key replaced the subject's key between the sealing and the commit: seal again under the new one
      if (attempt >= 2 || !(e instanceof KeyChanged)) throw e;
      await res.keys.awaitRekey(subjectHash);
    }
  }
}

/** The subject's key was replaced under the supersession (nothing was recorded). */
class KeyChanged extends LetheError {
  constructor() {
    super('erasure_in_progress', "the subject's key changed during the supersession; nothing was recorded");
  }
}

async function supersedeOnce(res: ErasureResources, input: SupersedeRequest, actor: Actor, subjectHash: Uint8Array): Promise<Superseded> {
  const { log } = res;
  const prepared = await log.prepareEntry(input.subject, input.entry, actor.role);
  const erasureId = newId('ers');
  try {
    const opening = {
      erasureId,
      subjectHash,
      scope: 'records' as const,
      entryIds: [input.entryId],
      successorId: prepared.appended.entryId,
      legalBasis: null,
      requestContext: null,
      unlearning: null,
      reason: null,
      publicAttributes: [],
      requestedBy: actor.principal,
    };
    await openErasure(res, opening, `requested by ${actor.role}: supersede 1 entry`, async (tx) => {
      // the key row's share lock first, then the old entry's row: the order a re-key takes them in (no deadlock)
      if (!(await log.insertEntry(tx, prepared, { writtenBy: actor.principal, supersedes: input.entryId }))) throw new KeyChanged();
      // a concurrent supersession or forget of the same entry makes one of the two refuse (conflict, nothing written)
      await log.markForgotten(tx, erasureId, subjectHash, [input.entryId]);
    });
  } catch (e) {
    // our refusals roll the transaction back: the frame is indexed by nothing. Anything else may have committed: it stays
    if (isLetheError(e)) await log.discardEntry(prepared);
    else zeroize(prepared.dek);
    throw e;
  }
  return { entry: log.settleEntry(prepared), erasureId, status: 'pending' };
}

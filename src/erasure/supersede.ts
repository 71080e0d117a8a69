/**
 * Superseding entries: the update of a memory (`POST /v1/subjects/{subject}/entries/{entryId}/supersede`;
 * `POST /v1/subjects/{subject}/supersede` for several at once, the LangGraph store's `put`
 * of an existing key with one entry per field). The successors are appended and the
 * old entries forgotten in one transaction — never two live versions, never a successor
 * stored while the caller is told it failed. The old version's bytes then go as in a
 * forget (forget.ts: a records-scope erasure), but its successor — the same person's
 * current data, not a copy — is not counted by the probe (nor are the successors of
 * that successor), and the erasure's record names it (`supersededBy`).
 */
import { zeroize } from '../crypto/index.js';
import { errorCodes, isLetheError, LetheError } from '../errors.js';
import { newId } from '../ids.js';
import type { PreparedEntry } from '../log/append.js';
import type { AppendInput } from '../log/service.js';
import { checkForgettable } from './forget.js';
import type { ErasureStatus } from './machine.js';
import { commitOpening, dropOpening, type PreparedOpening, prepareOpening } from './opening.js';
import { type Actor, actorOf } from './request.js';
import type { ErasureResources } from './resources.js';

export interface SupersedeRequest {
  readonly subject: string;
  /** The versions replaced (one or more: an item's entries, one per indexed field). */
  readonly entryIds: readonly string[];
  /** Their successors (one or more). */
  readonly entries: readonly AppendInput[];
}

/** At most this many entries replaced, and this many successors, in one supersession. */
export const MAX_SUPERSEDED = 64;

export interface Superseded {
  /** The successors, appended, in the order given. */
  readonly entries: ReadonlyArray<{ readonly entryId: string; readonly keyId: string; readonly seq: number }>;
  /** The records-scope erasure forgetting the old versions. */
  readonly erasureId: string;
  readonly status: ErasureStatus;
}

/**
 * Appends `entries` as the successors of `entryIds` (entries of `subject`) and forgets
 * the old ones, atomically: all or nothing. An entry already forgotten or superseded is
 * a `conflict` (naming the erasure that took it): the caller reads the current version
 * and supersedes that. The checks, the successors' sealing and storing and the
 * erasure's key run side by side: a supersession costs about an append and one
 * transaction.
 */
export async function requestSupersede(res: ErasureResources, input: SupersedeRequest, caller: string | Actor): Promise<Superseded> {
  const actor = actorOf(caller);
  const ids = [...new Set(input.entryIds)];
  if (ids.length === 0 || ids.length > MAX_SUPERSEDED || input.entries.length === 0 || input.entries.length > MAX_SUPERSEDED) {
    throw new LetheError('validation_failed', `a supersession replaces 1 to ${MAX_SUPERSEDED} entries with 1 to ${MAX_SUPERSEDED} successors`);
  }
  const subjectHash = res.keys.subjectHash(input.subject);
  const opening = prepareOpening(res, {
    erasureId: newId('ers'),
    subjectHash,
    scope: 'records' as const,
    entryIds: ids,
    legalBasis: null,
    requestContext: null,
    unlearning: null,
    reason: null,
    publicAttributes: [],
    requestedBy: actor.principal,
  });
  const [checked, entries, key] = await Promise.allSettled([checkForgettable(res, subjectHash, ids, actor), prepareAll(res, input, actor), opening]);
  const prepared = entries.status === 'fulfilled' ? entries.value : undefined;
  const ready = key.status === 'fulfilled' ? key.value : undefined;
  const earlier = checked.status === 'fulfilled' ? checked.value : undefined;
  if (!prepared || !ready || checked.status === 'rejected' || earlier) {
    if (prepared) await discardAll(res, prepared);
    if (ready) dropOpening(ready);
    for (const r of [checked, entries, key]) if (r.status === 'rejected') throw r.reason;
    throw new LetheError('conflict', `the entry was already forgotten or superseded (erasure ${earlier?.erasureId}): supersede its current version`);
  }
  let successors: PreparedEntry[] = prepared;
  let opened: PreparedOpening = ready;
  for (let attempt = 0; ; attempt++) {
    try {
      // published here once committed: the successors' own notifications load nothing meanwhile
      const current = successors;
      return await res.log.publishingEntries(current, () => supersedeOnce(res, input.subject, ids, actor, opened, current));
    } catch (e) {
      // a forget's re-key replaced the subject's key between the sealing and the commit: seal again under the new one
      if (attempt >= 2 || !(e instanceof KeyChanged)) throw e;
      await res.keys.awaitRekey(subjectHash);
      const [again, key] = await Promise.allSettled([prepareAll(res, input, actor), prepareOpening(res, opened.opening)]);
      if (again.status === 'rejected' || key.status === 'rejected') {
        if (again.status === 'fulfilled') await discardAll(res, again.value);
        if (key.status === 'fulfilled') dropOpening(key.value);
        throw again.status === 'rejected' ? again.reason : (key as PromiseRejectedResult).reason;
      }
      successors = again.value;
      opened = key.value;
    }
  }
}

/** The successors sealed and their frames stored, one after another (their sequence numbers in the order given); none kept when one fails. */
async function prepareAll(res: ErasureResources, input: SupersedeRequest, actor: Actor): Promise<PreparedEntry[]> {
  const prepared: PreparedEntry[] = [];
  try {
    for (const entry of input.entries) prepared.push(await res.log.prepareEntry(input.subject, entry, actor.role));
    return prepared;
  } catch (e) {
    await discardAll(res, prepared);
    throw e;
  }
}

async function discardAll(res: ErasureResources, prepared: readonly PreparedEntry[]): Promise<void> {
  await Promise.all(prepared.map((p) => res.log.discardEntry(p)));
}

/** The subject's key was replaced under the supersession (nothing was recorded). */
class KeyChanged extends LetheError {
  constructor() {
    super('erasure_in_progress', "the subject's key changed during the supersession; nothing was recorded");
  }
}

async function supersedeOnce(
  res: ErasureResources,
  subject: string,
  olds: readonly string[],
  actor: Actor,
  opening: PreparedOpening,
  prepared: readonly PreparedEntry[],
): Promise<Superseded> {
  const { log } = res;
  const erasureId = opening.opening.erasureId;
  const subjectHash = res.keys.subjectHash(subject);
  try {
    const ready = { ...opening, opening: { ...opening.opening, successorId: prepared[0]!.appended.entryId } };
    const opened = await commitOpening(
      res,
      ready,
      `requested by ${actor.role}: supersede ${olds.length} entr${olds.length === 1 ? 'y' : 'ies'}`,
      async (tx) => {
        // several old entries: locked in one order (their successors' keys first, as the inserts below take them)
        if (olds.length > 1) await log.lockSuperseded(tx, [...new Set(prepared.map((p) => p.appended.keyId))], olds);
        for (const [i, p] of prepared.entries()) {
          // successor i replaces old version i (the extra successors of fewer old ones, the last): the probe counts none of them
          const origin = { writtenBy: actor.principal, supersedes: olds[Math.min(i, olds.length - 1)]! };
          if (i >= olds.length) {
            if (!(await log.insertEntry(tx, p, origin))) throw new KeyChanged();
            continue;
          }
          // one statement: the key row's share lock, then the old entry's row (the order a re-key takes them in: no deadlock)
          const { inserted, forgot } = await log.insertSuccessor(tx, p, origin, erasureId);
          if (!inserted) throw new KeyChanged();
          // a concurrent supersession or forget of the same entry took it first: one of the two refuses (conflict, nothing written)
          if (!forgot)
            throw new LetheError('conflict', 'the entry changed meanwhile (another erasure is forgetting it); nothing was recorded', { retryable: true });
        }
        // the old versions no successor replaces one to one (fewer successors): forgotten by the same erasure
        if (olds.length > prepared.length) await log.markForgotten(tx, erasureId, subjectHash, olds.slice(prepared.length));
      },
    ).catch((e: unknown) => {
      // a deadlock or serialization failure rolled everything back (not a lost connection: that may have committed)
      if ([...errorCodes(e)].some((code) => code === '40P01' || code === '40001'))
        throw new LetheError('conflict', 'the supersession met a concurrent change and was rolled back; nothing was recorded', { retryable: true });
      throw e;
    });
    if (!opened) throw new LetheError('conflict', 'the erasure could not be opened; nothing was recorded', { retryable: true });
  } catch (e) {
    // our refusals roll the transaction back: the frames are indexed by nothing. Anything else may have committed: they stay
    if (isLetheError(e)) await discardAll(res, prepared);
    else for (const p of prepared) zeroize(p.dek);
    throw e;
  }
  return { entries: prepared.map((p) => log.settleEntry(p)), erasureId, status: 'pending' };
}

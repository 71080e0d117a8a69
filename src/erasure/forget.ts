/**
 * Forgetting entries of a living subject: a records-scope erasure (`DELETE
 * /v1/entries/{id}`, `POST /v1/erasures` with `entryIds`, `lethe log rekey
 * --exclude`). The request marks the entries forgotten in the transaction that
 * inserts the erasure — from its commit on no one reads them but this erasure's
 * fingerprint step — and does not fence the subject: it keeps writing. The steps are
 * the subject erasure's, scoped to the entries (src/erasable.ts: the `records` target): their
 * fingerprints, a re-key of the subject without them (destroy: their record keys were
 * wrapped under the old subject key alone, which is destroyed, ledgered and propagated
 * to backups like any key), the artifacts that cite them regenerated, their vectors
 * and postings gone with the old key, the probe for their content, a certificate.
 */
import { LetheError } from '../errors.js';
import { newId } from '../ids.js';
import type { ErasureStatus } from './machine.js';
import { type Actor, actorOf, type LegalBasis, type RequestContext } from './request.js';
import { openErasure } from './opening.js';
import type { ErasureResources } from './resources.js';

export interface ForgetRequest {
  readonly subjectHash: Uint8Array;
  readonly entryIds: readonly string[];
  readonly reason?: string | null | undefined;
  readonly legalBasis?: LegalBasis | null | undefined;
  readonly requestContext?: RequestContext | null | undefined;
}

/**
 * A records-scope erasure of `entryIds`, all of them entries of the subject under its
 * live key. Asking again for entries one erasure is already forgetting answers that
 * erasure (`created: false`); entries of another subject, unknown or already erased
 * are refused, and so is a request while the whole subject is being erased.
 */
export async function requestForget(
  res: ErasureResources,
  input: ForgetRequest,
  caller: string | Actor,
): Promise<{ erasureId: string; status: ErasureStatus; created: boolean }> {
  const actor = actorOf(caller);
  const ids = [...new Set(input.entryIds)];
  const earlier = await checkForgettable(res, input.subjectHash, ids, actor);
  if (earlier) return { ...earlier, created: false };
  const erasureId = newId('ers');
  const opening = {
    erasureId,
    subjectHash: input.subjectHash,
    scope: 'records' as const,
    entryIds: ids,
    legalBasis: input.legalBasis ?? null,
    requestContext: input.requestContext ?? null,
    unlearning: null,
    reason: input.reason ?? null,
    publicAttributes: [],
    requestedBy: actor.principal,
  };
  const detail = `requested by ${actor.role}: forget ${ids.length} entr${ids.length === 1 ? 'y' : 'ies'}`;
  // unreadable from this commit on; a concurrent forget of the same entry makes one of the two refuse
  if (!(await openErasure(res, opening, detail, (tx) => res.log.markForgotten(tx, erasureId, input.subjectHash, ids))))
    throw new LetheError('conflict', 'the erasure could not be opened; nothing was marked', { retryable: true });
  return { erasureId, status: 'pending', created: true };
}

/**
 * What forgetting `ids` of the subject needs: every one an entry of the subject under
 * a live key, none forgotten by another erasure, no erasure of the whole subject open,
 * and — for a writer — every one written by the caller's own token (a writer forgets
 * or supersedes only what it wrote). Entries one erasure is already forgetting answer
 * that erasure.
 */
export async function checkForgettable(
  res: ErasureResources,
  subjectHash: Uint8Array,
  ids: readonly string[],
  actor: Actor,
): Promise<{ erasureId: string; status: ErasureStatus } | undefined> {
  const { log, records } = res;
  const subjectHex = Buffer.from(subjectHash).toString('hex');
  const located = (await log.locate(ids)).filter((e) => Buffer.from(e.subjectHash).toString('hex') === subjectHex);
  if (located.length !== ids.length) {
    throw new LetheError(
      'not_found',
      `${ids.length - located.length} of the ${ids.length} entr${ids.length === 1 ? 'y is not an entry' : 'ies are not entries'} of this subject`,
    );
  }
  if (actor.role === 'writer') {
    const others = located.filter((e) => e.writtenBy === null || e.writtenBy !== actor.principal).length;
    if (others > 0) throw new LetheError('forbidden', `a writer forgets only the entries its own token wrote: ${others} of them it did not write`);
  }
  const by = new Set(located.map((e) => e.forgottenBy));
  if (by.size === 1 && !by.has(null)) {
    // every one of them is being forgotten (or was) by one erasure already: that one answers
    const erasureId = [...by][0]!;
    return { erasureId, status: await records.status(erasureId) };
  }
  const taken = located.filter((e) => e.forgottenBy !== null);
  if (taken.length > 0) {
    throw new LetheError('conflict', `${taken.length} of the entries are already being forgotten by erasure ${taken[0]!.forgottenBy}: name the others alone`);
  }
  if (!(await underLiveKeys(res, located))) throw new LetheError('key_destroyed', 'an entry of the request is already erased (its key was destroyed)');
  const open = await records.openFor(subjectHash);
  if (open) throw new LetheError('erasure_in_progress', `the whole subject is being erased (erasure ${open.erasureId}): its entries go with it`);
  return undefined;
}

/** True when every entry is under a live key — looked at again when one's key went: a re-key of a shard-mate moves the entries it keeps. */
async function underLiveKeys(res: ErasureResources, located: ReadonlyArray<{ entryId: string; keyId: string }>): Promise<boolean> {
  for (let look = 0, entries = located; ; look++) {
    const states = await res.keys.states([...new Set(entries.map((e) => e.keyId))]);
    const gone = entries.filter((e) => !states.has(e.keyId));
    if (gone.length === 0) return true;
    const again = await res.log.locate(gone.map((e) => e.entryId));
    // still under the key that went: erased with it (or forgotten by the re-key that destroyed it)
    if (look >= 3 || again.length < gone.length || again.every((a) => gone.some((g) => g.entryId === a.entryId && g.keyId === a.keyId))) return false;
    entries = again;
  }
}

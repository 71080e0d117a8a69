/**
 * Requesting the erasure of a whole subject (POST /v1/erasures without `entryIds`):
 * the subject's open erasure if it has one; otherwise the erasure opened, its key
 * fenced and the subject tombstoned in one commit. Many at once (POST
 * /v1/erasures/batch): each subject's answer or refusal in its own item.
 */
import { mapLimit } from '../concurrency.js';
import { LetheError } from '../errors.js';
import { newId } from '../ids.js';
import type { ErasureStatus } from './machine.js';
import { openErasure } from './opening.js';
import type { Actor, BulkErasureRequest, ErasureRequest } from './request.js';
import type { ErasureResources } from './resources.js';

/** How many of a bulk request's subjects are requested at once (each its own transaction). */
const BULK_LANES = 8;

export type Requested = { erasureId: string; status: ErasureStatus; created: boolean };

/** One subject of POST /v1/erasures/batch: its erasure, or why it was refused. Never the subject id: the index in the request names it. */
export type BulkErasureItem =
  | { readonly index: number; readonly erasureId: string; readonly status: ErasureStatus; readonly created: boolean }
  | { readonly index: number; readonly error: { readonly code: string; readonly detail: string } };

/** A new erasure of the subject, or its open one. From here on the subject is fenced; the caller drops its cached DEK (`fenced`). */
export async function requestSubjectErasure(res: ErasureResources, input: ErasureRequest, actor: Actor): Promise<Requested & { fenced?: string }> {
  const { keys, log, records, tombstones } = res;
  const status = await keys.subjectStatus(input.subject);
  const subjectHash = status.subjectHash;
  const open = await records.openFor(subjectHash);
  if (open) return { ...open, created: false };
  if (!status.key && !status.erased && !(await log.hasEntries(subjectHash))) throw new LetheError('not_found', 'lethe has never seen this subject');
  const erasureId = newId('ers');
  let fenced: string | undefined;
  const opening = {
    erasureId,
    subjectHash,
    scope: 'subject' as const,
    legalBasis: input.legalBasis ?? null,
    requestContext: input.request ?? null,
    unlearning: input.unlearning ?? null,
    reason: input.reason ?? null,
    publicAttributes: input.publicAttributes ?? [],
    requestedBy: actor.principal,
  };
  const inserted = await openErasure(res, opening, `requested by ${actor.role}`, async (tx, now) => {
    // leases stop from the request on, in the same commit: an erasure is never open with its key leasable
    fenced = await keys.fenceSubjectWithin(tx, subjectHash, 'erasure');
    // and the subject is tombstoned in the same commit: once its key is destroyed no key is made for it again until an admin reinstates it
    await tombstones.mark(tx, subjectHash, erasureId, now);
  });
  if (!inserted) {
    // another request for the subject won the race: answer with its erasure
    const winner = await records.openFor(subjectHash);
    if (!winner) throw new LetheError('unavailable', "the subject's erasure changed during the request; try again", { retryable: true });
    return { ...winner, created: false };
  }
  return { erasureId, status: 'pending', created: true, ...(fenced ? { fenced } : {}) };
}

/**
 * Each subject's erasure requested as `request` would, a few at a time; one subject's
 * refusal (never seen, an erasure in progress of its entries…) is answered in its own
 * item and stops no other. Destructions waiting for the ledger at the same moment share
 * one flush and its chain record (group commit in BackupService.awaitDurable).
 */
export function requestEach(request: (input: ErasureRequest) => Promise<Requested>, input: BulkErasureRequest): Promise<BulkErasureItem[]> {
  const { subjects, ...shared } = input;
  return mapLimit(subjects, BULK_LANES, async (subject, index): Promise<BulkErasureItem> => {
    try {
      return { index, ...(await request({ subject, ...shared })) };
    } catch (e) {
      // a refusal about this subject is its item's answer; the database or the store failing is the request's
      if (!(e instanceof LetheError) || e.code === 'internal' || e.code === 'unavailable') throw e;
      return { index, error: { code: e.code, detail: e.message } };
    }
  });
}

/**
 * Dismissing probe matches: a ruling that a record the probe named does not carry the
 * erased subject's content. Two people own it:
 *
 * - `POST …/dismissals` (eraser) proposes: the ruling — record id, role, principal,
 *   time, reason — is kept in the erasure's state as `proposed`, audited, and changes
 *   nothing: the erasure stays as it was.
 * - `POST …/dismissals/{dismissalId}/approve` (approver or admin) by a second principal —
 *   never the proposer's token, nor the token that requested the erasure — makes it
 *   take effect: audited, the erasure re-opened at `probe`, which scores again leaving
 *   the record out of `recovered`. In-process callers (no principal) cannot approve.
 * - `POST …/dismissals/{dismissalId}/revoke` rejects a proposal, or revokes an approved
 *   ruling (the erasure re-opens at `probe` and counts the record again): audited.
 *
 * A near copy (a verbatim run of the erased content, or a score of 0.9 or more) is
 * never dismissed: 422 `near_copy` — order its redaction. Refused (409) while the
 * erasure runs, after it failed, once its fingerprints are gone, for a record the last
 * probe did not name, and for the erased subject's own records (forgetting entries: for
 * those entries; the subject's other, readable entries may be ruled on).
 */
import { LetheError } from '../errors.js';
import { isId, newId } from '../ids.js';
import { forgottenEntries } from './state.js';
import { DISMISSAL_RUN } from './machine.js';
import { amendFinished, assertReopenable, reopenErasure } from './reopen.js';
import type { Actor, DismissalRequest } from './request.js';
import type { ErasureResources } from './resources.js';
import { type ErasureState, parseState } from './state.js';
import { inEffect, type ProbeDismissal, type ProbeMatch } from './view.js';

/** The roles that may approve a proposed dismissal (besides being a second principal). */
export const APPROVER_ROLES: readonly string[] = ['approver', 'admin'];

/** The named matches of the last probe, by id; refuses any id it did not name, named only as an indexed vector, or named a near copy. */
function assertNamed(state: ErasureState, ids: Iterable<string>): Map<string, ProbeMatch> {
  const named = new Map((state.probe?.matches ?? []).map((m) => [m.id, m]));
  const list = [...ids];
  const unnamed = list.filter((id) => !named.has(id));
  if (unnamed.length > 0) throw new LetheError('conflict', `matches: ${unnamed.length} id(s) were not named as matches by the erasure's last probe`);
  const stale = list.filter((id) => named.get(id)!.tier === 'vector-index');
  if (stale.length > 0) {
    throw new LetheError(
      'conflict',
      `matches: ${stale.length} id(s) are vectors still indexed after their key went (an index fault, not a judgement about content); they cannot be dismissed`,
    );
  }
  const near = list.filter((id) => named.get(id)!.nearCopy);
  if (near.length > 0) {
    throw new LetheError(
      'near_copy',
      `matches: ${near.join(', ')} ${near.length === 1 ? 'is a near copy' : 'are near copies'} of the erased content (a verbatim run, or a score of 0.9 or more): a near copy cannot be dismissed; order its redaction (POST /v1/erasures/{id}/redactions)`,
    );
  }
  return named;
}

/** The proposal's rulings in the state; not_found when it has none. */
function rulingsOf(state: ErasureState, dismissalId: string): ProbeDismissal[] {
  const rulings = (state.dismissals ?? []).filter((d) => d.dismissalId === dismissalId);
  if (rulings.length === 0) throw new LetheError('not_found', `the erasure has no dismissal ${dismissalId}`);
  return rulings;
}

/** POST …/dismissals: records a proposal (it changes nothing until a second principal approves it); its id. */
export async function proposeDismissal(res: ErasureResources, erasureId: string, request: DismissalRequest, actor: Actor): Promise<string> {
  const byId = new Map<string, string>();
  for (const m of request.matches) {
    if (byId.has(m.id)) throw new LetheError('validation_failed', `matches: ${m.id} is named twice`);
    byId.set(m.id, m.reason);
  }
  const row = await res.records.row(erasureId);
  assertReopenable(row, 'dismissal');
  const entries = [...byId.keys()].filter((id) => isId('entry', id));
  // forgetting entries, the subject lives on: its own records are those entries alone, its others are readable records like anyone's
  const forgotten = forgottenEntries(row);
  const own = forgotten
    ? entries.filter((id) => forgotten.includes(id))
    : (await res.log.locate(entries)).filter((e) => Buffer.from(e.subjectHash).equals(Buffer.from(row.subjectHash)));
  if (own.length > 0) throw new LetheError('conflict', `matches: ${own.length} id(s) are the erased subject's own records; they cannot be dismissed`);
  assertNamed(parseState(row.state), byId.keys());
  const dismissalId = newId('dsm');
  const at = new Date().toISOString();
  // the key each record is stored under now (a sharded replica's index holds only its own shards' records)
  const storedKeys = await res.vectors.storedKeys([...byId.keys()]);
  await amendFinished(
    res,
    erasureId,
    (locked) => {
      // the probe may have run again since (a redaction): a proposal stands only on matches it still names
      const named = assertNamed(locked, byId.keys());
      const pending = (locked.dismissals ?? []).filter((d) => byId.has(d.id) && (d.status === 'proposed' || inEffect(d)));
      if (pending.length > 0) {
        throw new LetheError(
          'conflict',
          `matches: ${pending.length} id(s) already have a proposed or approved dismissal (${pending[0]!.dismissalId ?? 'an earlier ruling'}): approve or revoke it, then propose again if need be`,
        );
      }
      locked.dismissals = [
        ...(locked.dismissals ?? []),
        ...[...byId].map(([id, reason]): ProbeDismissal => {
          const keyId = storedKeys.get(id) ?? res.vectors.lexical.keyOf(id);
          return {
            id,
            dismissalId,
            status: 'proposed',
            role: actor.role,
            ...(actor.principal ? { proposedBy: actor.principal } : {}),
            at,
            reason,
            ruledScore: named.get(id)!.score,
            ...(keyId ? { keyId } : {}),
          };
        }),
      ];
    },
    {
      actor: actor.role,
      action: 'erasure.dismissal.propose',
      detail: { erasureId, dismissalId, records: byId.size, ...(actor.principal ? { principal: actor.principal } : {}) },
    },
  );
  return dismissalId;
}

/**
 * POST …/dismissals/{id}/approve: a second principal makes the proposal take effect and
 * the probe runs again without its records. Forbidden to a role that may not approve,
 * to a caller without a principal, to the proposer and to the erasure's requester.
 */
export async function approveDismissal(res: ErasureResources, erasureId: string, dismissalId: string, actor: Actor): Promise<void> {
  if (!APPROVER_ROLES.includes(actor.role)) throw new LetheError('forbidden', `the ${actor.role} role may not approve a dismissal (approver or admin)`);
  const principal = actor.principal;
  if (!principal) throw new LetheError('forbidden', 'an approval needs a principal: approve over the API with your own token');
  const row = await res.records.row(erasureId);
  assertReopenable(row, 'approval');
  const check = (state: ErasureState): ProbeDismissal[] => {
    const rulings = rulingsOf(state, dismissalId);
    if (rulings.some((d) => d.status !== 'proposed'))
      throw new LetheError('conflict', `dismissal ${dismissalId} is ${rulings[0]!.status ?? 'approved'}, not proposed`);
    if (rulings.some((d) => d.proposedBy === principal))
      throw new LetheError('forbidden', 'the principal that proposed a dismissal cannot approve it: a second person must');
    if (state.requestedBy === principal)
      throw new LetheError('forbidden', 'the principal that requested the erasure cannot approve a dismissal of it: a second person must');
    return rulings;
  };
  check(parseState(row.state));
  const at = new Date().toISOString();
  await reopenErasure(res, erasureId, {
    step: 'probe',
    run: DISMISSAL_RUN,
    update: (locked) => {
      const ids = check(locked).map((d) => d.id);
      // the probe may have run again since the proposal: the ruling is made on the score it has now, and never on a near copy
      const named = assertNamed(locked, ids);
      locked.dismissals = (locked.dismissals ?? []).map((d) =>
        d.dismissalId === dismissalId
          ? { ...d, status: 'approved' as const, ruledScore: named.get(d.id)!.score, approval: { role: actor.role, principal, at } }
          : d,
      );
    },
    detail: `dismissal ${dismissalId} approved by ${actor.role}`,
    audit: { actor: actor.role, action: 'erasure.dismissal.approve', detail: { erasureId, dismissalId, principal } },
  });
}

/**
 * POST …/dismissals/{id}/revoke: a proposal is rejected (nothing re-runs), an approved
 * ruling revoked (the erasure re-opens at `probe` and counts the record again). Whether
 * the erasure re-opened.
 */
export async function revokeDismissal(res: ErasureResources, erasureId: string, dismissalId: string, actor: Actor, reason?: string): Promise<boolean> {
  const row = await res.records.row(erasureId);
  if (row.status === 'pending' || row.status === 'running')
    throw new LetheError('conflict', 'the erasure is still running; revoke the dismissal once it has finished');
  if (row.status === 'failed') throw new LetheError('conflict', 'the erasure failed; request a new erasure of the subject first');
  const rulings = rulingsOf(parseState(row.state), dismissalId);
  const act = { role: actor.role, ...(actor.principal ? { principal: actor.principal } : {}), at: new Date().toISOString(), ...(reason ? { reason } : {}) };
  const audit = {
    actor: actor.role,
    action: 'erasure.dismissal.revoke' as const,
    detail: { erasureId, dismissalId, ...(actor.principal ? { principal: actor.principal } : {}) },
  };
  const settle = (locked: ErasureState, from: 'proposed' | 'approved', to: 'rejected' | 'revoked') => {
    const now = rulingsOf(locked, dismissalId);
    if (now.some((d) => (d.status ?? 'approved') !== from)) throw new LetheError('conflict', 'the dismissal changed meanwhile; try again');
    locked.dismissals = (locked.dismissals ?? []).map((d) => (d.dismissalId === dismissalId ? { ...d, status: to, revocation: act } : d));
  };
  const status = rulings[0]!.status ?? 'approved';
  if (status === 'proposed') {
    await amendFinished(res, erasureId, (locked) => settle(locked, 'proposed', 'rejected'), audit);
    return false;
  }
  if (status !== 'approved') throw new LetheError('conflict', `dismissal ${dismissalId} is already ${status}`);
  // the ruling goes: the probe runs again on the kept fingerprints and names the record if it still carries the content
  assertReopenable(row, 'revocation');
  await reopenErasure(res, erasureId, {
    step: 'probe',
    run: DISMISSAL_RUN,
    update: (locked) => settle(locked, 'approved', 'revoked'),
    detail: `dismissal ${dismissalId} revoked by ${actor.role}`,
    audit,
  });
  return true;
}

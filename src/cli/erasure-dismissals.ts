/**
 * `lethe erasure dismissals propose | approve | revoke`: dismissals two people own — one
 * proposes with the eraser role, a second person approves with the approver role
 * (LETHE_APPROVER_TOKEN; never the proposer's or the requester's token).
 */
import type { Command } from 'commander';
import { DismissalRequestSchema, DismissalRevocationSchema } from '../erasure/request.js';
import type { DismissalAccepted } from '../erasure/view.js';
import { checkDismissalId, checked, checkErasureId, ERASE_EXIT } from './erasure-args.js';
import { out, serviceCall, serviceClient } from './shared.js';

/** Adds `dismissals` and its commands to `lethe erasure`. */
export function addDismissals(erasure: Command): void {
  const dismissals = erasure
    .command('dismissals')
    .description(
      'Dismissals two people own: one proposes (eraser role, LETHE_ERASER_TOKEN) that a record the probe named does not carry the erased content; ' +
        "a second person approves (approver role, LETHE_APPROVER_TOKEN; never the proposer's or the requester's token). Each prints the answer as JSON; " +
        `exit ${ERASE_EXIT.input} for bad input or an error answer (the service's problem detail on stderr: near_copy, forbidden, conflict…).`,
    );
  dismissals
    .command('propose')
    .description(
      'Propose a dismissal of one record (POST /v1/erasures/{id}/dismissals): it changes nothing until approved. A near copy cannot be dismissed, only redacted.',
    )
    .argument('<erasureId>', 'the erasure (ers_…)')
    .argument('<recordId>', 'the record the probe named (entry_… or art_…)')
    .requiredOption('--reason <text>', "the judgement (signed into the certificate: never the subject's content)")
    .action(async (erasureId: string, recordId: string, opts: { reason: string }) => {
      const body = checked(DismissalRequestSchema, { matches: [{ id: recordId, reason: opts.reason }] }, '--reason');
      const path = `/v1/erasures/${checkErasureId(erasureId)}/dismissals`;
      out(await serviceCall(serviceClient('eraser').json<DismissalAccepted>('POST', path, { body }), ERASE_EXIT.input));
    });
  dismissals
    .command('approve')
    .description(
      'Approve a proposed dismissal as a second person (POST /v1/erasures/{id}/dismissals/{dismissalId}/approve, LETHE_APPROVER_TOKEN): the probe runs again without its records.',
    )
    .argument('<erasureId>', 'the erasure (ers_…)')
    .argument('<dismissalId>', 'the proposal (dsm_…)')
    .action(async (erasureId: string, dismissalId: string) => {
      const path = `/v1/erasures/${checkErasureId(erasureId)}/dismissals/${checkDismissalId(dismissalId)}/approve`;
      out(await serviceCall(serviceClient('approver').json<DismissalAccepted>('POST', path), ERASE_EXIT.input));
    });
  dismissals
    .command('revoke')
    .description('Reject a proposed dismissal, or revoke an approved ruling (the probe runs again and counts its records), with LETHE_APPROVER_TOKEN.')
    .argument('<erasureId>', 'the erasure (ers_…)')
    .argument('<dismissalId>', 'the proposal (dsm_…)')
    .option('--reason <text>', 'why (audited)')
    .action(async (erasureId: string, dismissalId: string, opts: { reason?: string }) => {
      const body = checked(DismissalRevocationSchema, opts.reason === undefined ? {} : { reason: opts.reason }, '--reason');
      const path = `/v1/erasures/${checkErasureId(erasureId)}/dismissals/${checkDismissalId(dismissalId)}/revoke`;
      out(await serviceCall(serviceClient('approver').json<DismissalAccepted>('POST', path, { body }), ERASE_EXIT.input));
    });
}

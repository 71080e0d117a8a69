/**
 * `lethe erasure dismissals propose | approve | revoke` (and `lethe erasure dismiss`, the
 * proposal): dismissals two people own — one
 * proposes with the eraser role, a second person approves with the approver role
 * (the approver token of LETHE_TOKENS; never the proposer's or the requester's token).
 */
import type { Command } from 'commander';
import { DismissalRequestSchema, DismissalRevocationSchema } from '../erasure/request.js';
import type { DismissalAccepted } from '../erasure/view.js';
import { checkDismissalId, checked, checkErasureId, ERASE_EXIT } from './erasure-args.js';
import { out, serviceCall, serviceClient } from './shared.js';

/** Adds `dismissals` and its commands to `lethe erasure`. */
export function addDismissals(erasure: Command): void {
  // `lethe erasure dismiss` is `lethe erasure dismissals propose`: the step an eraser takes
  for (const command of [
    erasure.command('dismiss').description('Propose dismissing one record the probe named (as dismissals propose).'),
    erasure
      .command('dismissals')
      .description('Dismissals: one person proposes (eraser), a second approves or revokes (approver).')
      .command('propose')
      .description('Propose dismissing one record the probe named.'),
  ]) {
    command
      .argument('<erasureId>', 'the erasure (ers_…)')
      .argument('<recordId>', 'the record the probe named (entry_… or art_…)')
      .requiredOption('--reason <text>', "the judgement (signed into the certificate: never the subject's content)")
      .action(async (erasureId: string, recordId: string, opts: { reason: string }) => {
        const body = checked(DismissalRequestSchema, { matches: [{ id: recordId, reason: opts.reason }] }, '--reason');
        const path = `/v1/erasures/${checkErasureId(erasureId)}/dismissals`;
        out(await serviceCall(serviceClient('eraser').json<DismissalAccepted>('POST', path, { body }), ERASE_EXIT.input));
      });
  }
  const dismissals = erasure.commands.find((c) => c.name() === 'dismissals')!;
  dismissals
    .command('approve')
    .description('Approve a proposed dismissal (approver role).')
    .argument('<erasureId>', 'the erasure (ers_…)')
    .argument('<dismissalId>', 'the proposal (dsm_…)')
    .action(async (erasureId: string, dismissalId: string) => {
      const path = `/v1/erasures/${checkErasureId(erasureId)}/dismissals/${checkDismissalId(dismissalId)}/approve`;
      out(await serviceCall(serviceClient('approver').json<DismissalAccepted>('POST', path), ERASE_EXIT.input));
    });
  dismissals
    .command('revoke')
    .description('Reject a proposal or revoke an approved dismissal (approver role).')
    .argument('<erasureId>', 'the erasure (ers_…)')
    .argument('<dismissalId>', 'the proposal (dsm_…)')
    .option('--reason <text>', 'why (audited)')
    .action(async (erasureId: string, dismissalId: string, opts: { reason?: string }) => {
      const body = checked(DismissalRevocationSchema, opts.reason === undefined ? {} : { reason: opts.reason }, '--reason');
      const path = `/v1/erasures/${checkErasureId(erasureId)}/dismissals/${checkDismissalId(dismissalId)}/revoke`;
      out(await serviceCall(serviceClient('approver').json<DismissalAccepted>('POST', path, { body }), ERASE_EXIT.input));
    });
}

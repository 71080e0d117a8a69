/**
 * `lethe subject reinstate <subject> --reason …`: a client of the running service with
 * the admin role (LETHE_URL and the admin token of LETHE_TOKENS). It lifts an erased subject's
 * tombstone, so keys, leases and appends are accepted for it again. `--reason` is
 * checked with the service's own schema before any request.
 */
import type { Command } from 'commander';
import { ServiceError } from '../client/http.js';
import { ReinstateRequestSchema } from '../erasure/reinstatement.js';
import { SUBJECT_ID_PATTERN, SUBJECT_ID_RULE } from '../ids.js';
import { ExitError, out, serviceClient, serviceExit } from './shared.js';

export function addSubject(program: Command): void {
  const subject = program.command('subject').description('Subjects through the running service (admin role).');
  subject
    .command('reinstate')
    .description("Lift an erased subject's tombstone so it is accepted again, under a new key (audited).")
    .argument('<subject>', 'the subject id')
    .requiredOption('--reason <text>', 'why, kept in the clear in the audit log (1–500 characters)')
    .action(async (id: string, opts: { reason: string }) => {
      if (!SUBJECT_ID_PATTERN.test(id)) throw new ExitError(`the ${SUBJECT_ID_RULE}`, 2);
      const parsed = ReinstateRequestSchema.safeParse({ reason: opts.reason });
      if (!parsed.success) throw new ExitError(`--reason: ${parsed.error.issues[0]!.message}`, 2);
      const client = serviceClient('admin');
      try {
        out(await client.json('POST', `/v1/subjects/${encodeURIComponent(id)}/reinstate`, { body: parsed.data }));
      } catch (e) {
        throw serviceExit(e, e instanceof ServiceError ? 2 : 1);
      }
    });
}

/**
 * `lethe subject reinstate <subject> --reason …`: a client of the running service with
 * the admin role (LETHE_URL and LETHE_ADMIN_TOKEN). It lifts an erased subject's
 * tombstone, so keys, leases and appends are accepted for it again. `--reason` is
 * checked with the service's own schema before any request.
 */
import type { Command } from 'commander';
import { ServiceError } from '../client/http.js';
import { ReinstateRequestSchema } from '../erasure/reinstatement.js';
import { SUBJECT_ID_PATTERN, SUBJECT_ID_RULE } from '../ids.js';
import { ExitError, out, serviceClient, serviceExit } from './shared.js';

export function addSubject(program: Command): void {
  const subject = program.command('subject').description('Subjects through the running service (admin role: LETHE_URL and LETHE_ADMIN_TOKEN).');
  subject
    .command('reinstate')
    .description(
      'Reinstate an erased subject (POST /v1/subjects/{subject}/reinstate, admin role; audited): after its erasure nothing is accepted for it ' +
        '(410 subject_erased) until this lifts its tombstone; its next key is a new one. Prints {subject, reinstated}. Exit 2 for bad input, ' +
        "a subject that is not erased, or an erasure of it still open (the service's problem on stderr); 1 when the service does not answer.",
    )
    .argument('<subject>', 'the subject id')
    .requiredOption('--reason <text>', 'why (1–500 characters, kept in the clear in the audit log: never quote the subject)')
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

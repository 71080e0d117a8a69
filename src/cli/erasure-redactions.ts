/**
 * `lethe erasure redact <erasureId> <recordId…>`: redact the erased subject's content from
 * other subjects' records the erasure's last probe named (POST /v1/erasures/{id}/redactions,
 * the eraser role; `--override` the admin role), then, with `--watch`, follow the erasure's
 * new run to its end with `lethe erase`'s exit codes. Dismissals are `lethe erasure dismissals`.
 */
import type { Command } from 'commander';
import { RedactionRequestSchema } from '../erasure/request.js';
import type { ErasureAccepted } from '../erasure/view.js';
import { ID_PATTERNS, idRule } from '../ids.js';
import { checked, checkErasureId, ERASE_EXIT } from './erasure-args.js';
import { watchErasure } from './erasure-watch.js';
import { ExitError, serviceCall, serviceClient } from './shared.js';

/** A record to redact: another subject's log entry (entry_…; an artifact is regenerated, never redacted); exit 2 otherwise. */
function checkRecordId(recordId: string): string {
  if (!ID_PATTERNS.entry.test(recordId)) throw new ExitError(`a record id is ${idRule('entry')}`, ERASE_EXIT.input);
  return recordId;
}

interface RedactOptions {
  override?: string;
  watch?: boolean;
  json?: boolean;
}

/** Adds `redact` to `lethe erasure`. */
export function addRedact(erasure: Command): void {
  erasure
    .command('redact')
    .description("Redact the erased subject's content from records the erasure's last probe named.")
    .argument('<erasureId>', 'the erasure (ers_…)')
    .argument('<recordId...>', 'the records the probe named (entry_…)')
    .option('--override <reason>', 'admin role (the admin token): also records the probe did not name; the reason is audited')
    .option('--watch', 'follow the erasure to its end (exit codes as erase)')
    .option('--json', 'the answer as JSON; with --watch, JSON lines')
    .action(async (erasureId: string, recordIds: string[], opts: RedactOptions) => {
      const id = checkErasureId(erasureId);
      const ids = recordIds.map(checkRecordId);
      const body = checked(RedactionRequestSchema, { ids, ...(opts.override !== undefined ? { override: { reason: opts.override } } : {}) }, '--override');
      const client = serviceClient(opts.override !== undefined ? 'admin' : 'eraser');
      const accepted = await serviceCall(client.json<ErasureAccepted>('POST', `/v1/erasures/${id}/redactions`, { body }), ERASE_EXIT.input);
      if (opts.json) process.stdout.write(`${JSON.stringify(accepted)}\n`);
      else process.stdout.write(`erasure ${accepted.erasureId}: ${ids.length} record(s) to redact, ${accepted.status}\n`);
      if (opts.watch) await watchErasure(client, id, opts.json ?? false);
    });
}

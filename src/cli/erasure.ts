/**
 * `lethe erase` and `lethe erasure show | list | watch | resume | redact | certificate | report | dismissals`: clients of the
 * running service with the eraser role (LETHE_URL and the eraser token of LETHE_TOKENS; a dismissal's approval with the approver
 * role's token, a second person's). `erase` checks its
 * request with the service's own schema before sending it, then follows the
 * erasure's event stream and prints a summary; the exit code says how it ended.
 * Redactions are in erasure-redactions.ts, dismissals in erasure-dismissals.ts, the certificate and the report in
 * erasure-documents.ts, what they share in erasure-args.ts.
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import {
  type BulkErasureRequest,
  BulkErasureRequestSchema,
  type ErasureRequest,
  ErasureRequestSchema,
  LEGAL_BASES,
  MAX_BULK_SUBJECTS,
  MAX_PUBLIC_ATTRIBUTES,
} from '../erasure/request.js';
import type { ErasureAccepted, ErasureView } from '../erasure/view.js';
import type { BulkErasureAccepted } from '../wire/erasures.js';
import { checkErasureId, ERASE_EXIT } from './erasure-args.js';
import { addDismissals } from './erasure-dismissals.js';
import { addErasureDocuments } from './erasure-documents.js';
import { addRedact } from './erasure-redactions.js';
import { ExitError, out, serviceCall, serviceClient } from './shared.js';
import { watchErasure } from './erasure-watch.js';

interface EraseOptions {
  reason?: string;
  legalBasis?: string;
  publicAttribute?: string[];
  unlearningMethod?: string;
  unlearningBound?: string;
  reasonCategory?: string;
  controller?: string;
  reference?: string;
  wait: boolean;
  json?: boolean;
  subjectsFile?: string;
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** Where each field of the erasure request comes from on the command line. */
const FLAGS: Readonly<Record<string, string>> = {
  subject: 'the subject',
  reason: '--reason',
  legalBasis: '--legal-basis',
  publicAttributes: '--public-attribute',
  'unlearning.method': '--unlearning-method',
  'unlearning.bound': '--unlearning-bound',
  'request.reasonCategory': '--reason-category',
  'request.legalBasis': '--legal-basis',
  'request.controller': '--controller',
  'request.reference': '--reference',
};

/** The request context's flags: all four, or none (--legal-basis alone is one of LEGAL_BASES). */
const CONTEXT_FLAGS = ['--reason-category', '--legal-basis', '--controller', '--reference'] as const;

/**
 * The POST /v1/erasures body, checked with the service's own schema (exit 2 before
 * any request), so the CLI's limits are the service's. The first issue is named by
 * its flag: `--legal-basis must be one of …` (a message that says what the field
 * must be, or names the field itself, reads after the flag's name), `--reason: at
 * most 2000 characters` (a limit follows a colon); a number the CLI converted also
 * says what it was given.
 */
function erasureRequestBody(subject: string, options: EraseOptions): ErasureRequest {
  const o = { ...options, publicAttribute: options.publicAttribute ?? [] };
  const paired = o.unlearningMethod !== undefined && o.unlearningBound !== undefined;
  // one --legal-basis: alone, one of LEGAL_BASES; with the request's context, its legal provision in words too
  const context = [o.reasonCategory, o.legalBasis, o.controller, o.reference];
  const contextGiven = [o.reasonCategory, o.controller, o.reference].filter((v) => v !== undefined).length;
  if (contextGiven > 0 && context.some((v) => v === undefined)) {
    throw new ExitError(`${CONTEXT_FLAGS.join(', ')} go together (the request's context: none of it personal data)`, ERASE_EXIT.input);
  }
  const body = {
    subject,
    ...(o.reason !== undefined ? { reason: o.reason } : {}),
    ...(o.legalBasis !== undefined && (!contextGiven || (LEGAL_BASES as readonly string[]).includes(o.legalBasis)) ? { legalBasis: o.legalBasis } : {}),
    ...(o.publicAttribute.length ? { publicAttributes: o.publicAttribute } : {}),
    ...(paired ? { unlearning: { method: o.unlearningMethod, bound: o.unlearningBound!.trim() === '' ? Number.NaN : Number(o.unlearningBound) } } : {}),
    ...(contextGiven ? { request: { reasonCategory: o.reasonCategory, legalBasis: o.legalBasis, controller: o.controller, reference: o.reference } } : {}),
  };
  const given: Readonly<Record<string, string | undefined>> = { 'unlearning.bound': o.unlearningBound };
  const parsed = ErasureRequestSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.filter((p) => typeof p === 'string').join('.');
    const flag = FLAGS[field] ?? field;
    const message = issue.message.startsWith(`${field} `) ? issue.message.slice(field.length + 1) : issue.message;
    const value = given[field];
    throw new ExitError(
      `${flag}${/^must\b/.test(message) ? ' ' : ': '}${message}${value !== undefined ? `, not ${JSON.stringify(value)}` : ''}`,
      ERASE_EXIT.input,
    );
  }
  if (!paired && (o.unlearningMethod !== undefined || o.unlearningBound !== undefined)) {
    throw new ExitError('--unlearning-method and --unlearning-bound go together', ERASE_EXIT.input);
  }
  return parsed.data;
}

/** A well-formed subject id that stands in while the shared flags of --subjects-file are checked. */
const FLAGS_ONLY_SUBJECT = 'lethe:flags-check';

/** One subject per line; blank lines and lines starting with # are skipped. */
async function subjectsFrom(file: string): Promise<Array<{ line: number; subject: string }>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new ExitError(`--subjects-file: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? 'unreadable'})`, ERASE_EXIT.input);
  }
  const out: Array<{ line: number; subject: string }> = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const subject = raw.trim();
    if (subject !== '' && !subject.startsWith('#')) out.push({ line: i + 1, subject });
  });
  if (out.length === 0) throw new ExitError(`--subjects-file: ${file} names no subject (one per line)`, ERASE_EXIT.input);
  return out;
}

/**
 * `lethe erase --subjects-file F`: every subject of the file, checked whole with the
 * service's schema first (exit 2 naming the line, before any request), then
 * POST /v1/erasures/batch in chunks of MAX_BULK_SUBJECTS; one line per subject, named
 * by its line in the file (never by its id); unless --no-wait, every erasure followed to its
 * end and the worst outcome is the exit code.
 */
async function eraseMany(file: string, opts: EraseOptions): Promise<void> {
  const subjects = await subjectsFrom(file);
  // the shared flags, checked on their own (each subject is checked below, named by its line)
  const shared = erasureRequestBody(FLAGS_ONLY_SUBJECT, opts);
  if (shared.publicAttributes || shared.entryIds)
    throw new ExitError('--public-attribute is about one person: erase that subject on its own, not with --subjects-file', ERASE_EXIT.input);
  const { subject: _first, ...rest } = shared;
  const chunks: BulkErasureRequest[] = [];
  for (let i = 0; i < subjects.length; i += MAX_BULK_SUBJECTS) {
    const body = { ...rest, subjects: subjects.slice(i, i + MAX_BULK_SUBJECTS).map((s) => s.subject) };
    const parsed = BulkErasureRequestSchema.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const at = issue.path[0] === 'subjects' && typeof issue.path[1] === 'number' ? subjects[i + issue.path[1]]!.line : undefined;
      throw new ExitError(`--subjects-file${at !== undefined ? ` line ${at}` : ''}: ${issue.message}`, ERASE_EXIT.input);
    }
    chunks.push(parsed.data);
  }
  const client = serviceClient('eraser');
  const accepted: Array<{ line: number; erasureId: string }> = [];
  let refused = 0;
  let offset = 0;
  for (const chunk of chunks) {
    const answer = await serviceCall(client.json<BulkErasureAccepted>('POST', '/v1/erasures/batch', { body: chunk }), ERASE_EXIT.input);
    for (const item of answer.erasures) {
      const line = subjects[offset + item.index]!.line;
      if ('erasureId' in item) {
        accepted.push({ line, erasureId: item.erasureId });
        process.stdout.write(
          opts.json
            ? `${JSON.stringify({ line, erasureId: item.erasureId, status: item.status, created: item.created })}\n`
            : `line ${line}: ${item.erasureId} ${item.created ? 'accepted' : 'already open'}\n`,
        );
      } else {
        refused++;
        process.stdout.write(
          opts.json ? `${JSON.stringify({ line, error: item.error })}\n` : `line ${line}: refused (${item.error?.code}: ${item.error?.detail})\n`,
        );
      }
    }
    offset += chunk.subjects.length;
  }
  if (!opts.wait) {
    if (refused > 0) throw new ExitError(`${refused} of ${subjects.length} subject(s) refused`, ERASE_EXIT.input);
    return;
  }
  // follow every erasure to its end: a few at a time, each polled until it settles
  const ended = new Map<string, string>();
  let pending = [...accepted];
  while (pending.length > 0) {
    const still: typeof pending = [];
    for (let i = 0; i < pending.length; i += 8) {
      const views = await Promise.all(
        pending
          .slice(i, i + 8)
          .map(async (p) => ({ p, view: await serviceCall(client.json<ErasureView>('GET', `/v1/erasures/${p.erasureId}`), ERASE_EXIT.input) })),
      );
      for (const { p, view } of views) {
        if (view.status === 'pending' || view.status === 'running') still.push(p);
        else {
          ended.set(p.erasureId, view.status);
          process.stdout.write(
            opts.json ? `${JSON.stringify({ line: p.line, erasureId: p.erasureId, ended: view.status })}\n` : `line ${p.line}: ${p.erasureId} ${view.status}\n`,
          );
        }
      }
    }
    pending = still;
    if (pending.length > 0) await new Promise((r) => setTimeout(r, 500));
  }
  const count = (status: string) => [...ended.values()].filter((s) => s === status).length;
  const summary = `${count('completed')} completed, ${count('incomplete')} incomplete, ${count('failed')} failed, ${refused} refused (of ${subjects.length})`;
  if (!opts.json) process.stdout.write(`${summary}\n`);
  if (count('failed') > 0) throw new ExitError(summary, ERASE_EXIT.failed);
  if (count('incomplete') > 0) throw new ExitError(summary, ERASE_EXIT.incomplete);
  if (refused > 0) throw new ExitError(summary, ERASE_EXIT.input);
}

/** `lethe erase <subject>`, or `lethe erase --subjects-file F`. */
export function addErase(program: Command): void {
  program
    .command('erase')
    .description('Erase a subject (or --subjects-file) through the running service and follow it to its end.')
    .argument('[subject]', 'the subject id (A-Z a-z 0-9 . _ : @ + -, at most 200)')
    .option('--subjects-file <file>', `one subject per line, ${MAX_BULK_SUBJECTS} per request; the worst outcome is the exit code`)
    .option('--reason <text>', 'why (sealed with the request)')
    .option('--legal-basis <basis>', `${LEGAL_BASES.join(', ')}; with --reason-category, the provision in words`)
    .option('--public-attribute <text>', `public text about the subject the probe also looks for (repeatable, at most ${MAX_PUBLIC_ATTRIBUTES})`, collect)
    .option('--unlearning-method <text>', 'class C: how the model unlearned the subject (with --unlearning-bound)')
    .option('--unlearning-bound <number>', 'class C: the bound that method gives, >= 0')
    .option('--reason-category <category>', 'why, in a category (`--reason-category x` lists them); with --legal-basis, --controller, --reference')
    .option('--controller <name>', 'the organisation that asked')
    .option('--reference <id>', "the controller's reference (its ticket id)")
    .option('--no-wait', 'print the erasure id once accepted, and exit 0')
    .option('--json', 'JSON lines: one per step, the erasure last')
    .action(async (subject: string | undefined, opts: EraseOptions) => {
      if (opts.subjectsFile !== undefined) {
        if (subject !== undefined) throw new ExitError('name a subject or --subjects-file, not both', ERASE_EXIT.input);
        return eraseMany(opts.subjectsFile, opts);
      }
      if (subject === undefined) throw new ExitError('name the subject to erase (or --subjects-file <file>)', ERASE_EXIT.input);
      const body = erasureRequestBody(subject, opts);
      const client = serviceClient('eraser');
      const res = await serviceCall(client.request('POST', '/v1/erasures', { body }), ERASE_EXIT.input);
      const accepted = (await res.json()) as ErasureAccepted;
      if (!opts.wait) {
        process.stdout.write(opts.json ? `${JSON.stringify(accepted)}\n` : `${accepted.erasureId}\n`);
        return;
      }
      if (!opts.json) {
        process.stdout.write(
          res.status === 202
            ? `erasure ${accepted.erasureId} accepted (${accepted.status})\n`
            : `erasure ${accepted.erasureId} was already open for this subject (${accepted.status}): following it\n`,
        );
      }
      await watchErasure(client, accepted.erasureId, opts.json ?? false);
    });
}

/** `lethe erasure show | list | watch | resume | redact | dismissals | certificate | report`. */
export function addErasure(program: Command): void {
  const erasure = program.command('erasure').description('Erasures through the running service (eraser role).');
  erasure
    .command('show')
    .description('An erasure as JSON.')
    .argument('<erasureId>', 'the erasure (ers_…)')
    .action(async (erasureId: string) => {
      const path = `/v1/erasures/${checkErasureId(erasureId)}`;
      out(await serviceCall(serviceClient('eraser').json('GET', path), ERASE_EXIT.input));
    });
  erasure
    .command('list')
    .description('A page of erasures as JSON.')
    .option('--subject <subject>', "only this subject's erasures")
    .option('--limit <n>', 'erasures per page, 1 to 1000 (default 100)')
    .option('--cursor <cursor>', 'the nextCursor of the previous page')
    .action(async (opts: { subject?: string; limit?: string; cursor?: string }) => {
      const query = new URLSearchParams();
      if (opts.subject !== undefined) query.set('subject', opts.subject);
      if (opts.limit !== undefined) query.set('limit', opts.limit);
      if (opts.cursor !== undefined) query.set('cursor', opts.cursor);
      const qs = query.toString();
      const path = `/v1/erasures${qs ? `?${qs}` : ''}`;
      out(await serviceCall(serviceClient('eraser').json('GET', path), ERASE_EXIT.input));
    });
  erasure
    .command('watch')
    .description('Follow an erasure to its end (exit codes as erase).')
    .argument('<erasureId>', 'the erasure (ers_…)')
    .option('--json', 'JSON lines on stdout: {"step": …} per transition, the erasure last')
    .action(async (erasureId: string, opts: { json?: boolean }) => {
      await watchErasure(serviceClient('eraser'), checkErasureId(erasureId), opts.json ?? false);
    });
  erasure
    .command('resume')
    .description('Take a failed erasure up again from the step that failed.')
    .argument('<erasureId>', 'the erasure (ers_…)')
    .option('--watch', 'follow the resumed erasure to its end')
    .option('--json', 'with --watch: JSON lines on stdout')
    .action(async (erasureId: string, opts: { watch?: boolean; json?: boolean }) => {
      const client = serviceClient('eraser');
      const path = `/v1/erasures/${checkErasureId(erasureId)}/resume`;
      const view = await serviceCall(client.json<ErasureView>('POST', path), ERASE_EXIT.input);
      if (!opts.watch) {
        out(view);
        return;
      }
      if (!opts.json)
        process.stdout.write(`erasure ${erasureId} resumed at ${view.steps.find((s) => s.status === 'pending' || s.status === 'running')?.name ?? '?'}\n`);
      await watchErasure(client, erasureId, opts.json ?? false);
    });
  addRedact(erasure);
  addDismissals(erasure);
  addErasureDocuments(erasure);
}

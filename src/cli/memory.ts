/**
 * `lethe memory add | search | list | forget`: an agent's memory from the command line,
 * a client of the running service (LETHE_URL, the role's token from LETHE_TOKENS). add,
 * search and list use the writer role; forget the eraser role, and follows the erasure
 * that forgets the entry to its end like `lethe erase` (watchErasure: the same exit codes).
 *
 * Every argument is checked before any request (exit 2 naming it). add, search and list
 * exit 2 on an error answer and 1 when the service did not answer; forget exits as
 * `erase` does. People get one line (an id) or a small table; `--json` prints the
 * service's answer as JSON. Only light modules load up front: the entry's limits
 * (src/log/payload.ts, pure) load on first use, so the command starts without the service.
 */
import type { Command } from 'commander';
import { ServiceError } from '../client/http.js';
import type { ErasureAccepted } from '../erasure/view.js';
import { ID_PATTERNS, idRule, SUBJECT_ID_PATTERN, SUBJECT_ID_RULE } from '../ids.js';
import type { SearchHit, SearchResult } from '../wire/artifacts.js';
import type { AppendedEntry, Entry } from '../wire/log.js';
import { ERASE_EXIT } from './erasure-args.js';
import { watchErasure } from './erasure-watch.js';
import { ExitError, serviceCall, serviceClient, serviceExit } from './shared.js';

/** The service's bounds, checked here before a request (test/cli/memory.test.ts holds them to the service's own). */
export const MEMORY_LIMITS = {
  /** POST /v1/search's `k` (MAX_SEARCH_K) and its subjects (MAX_SEARCH_SUBJECTS). */
  searchK: 100,
  searchSubjects: 100,
  /** A page of GET /v1/subjects/{subject}/entries (PAGE_LIMIT_MAX). */
  pageLimit: 1000,
} as const;

/** How many characters of a memory's text a table shows (on one line). */
const CLIPPED = 60;

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** A subject id, or exit 2 naming where it came from (`the subject`, `--subject`): never echoing it. */
function checkSubject(subject: string, where: string): string {
  if (!SUBJECT_ID_PATTERN.test(subject)) throw new ExitError(`${where} ${SUBJECT_ID_RULE.replace(/^subject /, '')}`, 2);
  return subject;
}

/** A whole number in [1, max] given as `flag`, or exit 2. */
function checkCount(value: string | undefined, flag: string, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = /^\d+$/.test(value.trim()) ? Number(value) : Number.NaN;
  if (!Number.isInteger(n) || n < 1 || n > max) throw new ExitError(`${flag} must be a whole number from 1 to ${max}, not ${JSON.stringify(value)}`, 2);
  return n;
}

/** The failure of a writer's call: an error answer exits 2, no answer 1. */
async function writerCall<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (e) {
    throw serviceExit(e, e instanceof ServiceError ? 2 : 1);
  }
}

/** All of stdin as text (`lethe memory add <subject> -`). */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/** A memory's text: non-empty, within the service's size, no NUL or unpaired surrogate; exit 2 otherwise. */
async function checkText(given: string): Promise<string> {
  const { badCharacter, MAX_ENTRY_TEXT_BYTES } = await import('../log/payload.js');
  // from stdin, the final newline is the file's, not the memory's
  const text = given === '-' ? (await readStdin()).replace(/\r?\n$/, '') : given;
  const where = given === '-' ? 'the text (stdin)' : 'the text';
  if (text.trim() === '') throw new ExitError(`${where} is empty: give the memory to store`, 2);
  if (Buffer.byteLength(text, 'utf8') > MAX_ENTRY_TEXT_BYTES) throw new ExitError(`${where}: at most ${MAX_ENTRY_TEXT_BYTES} bytes of UTF-8`, 2);
  const bad = badCharacter(text);
  if (bad) throw new ExitError(`${where} ${bad}`, 2);
  return text;
}

/** A memory's text on one line, clipped. */
function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > CLIPPED ? `${flat.slice(0, CLIPPED - 1)}…` : flat;
}

/** Rows under a header, each column as wide as its widest cell (the last one left ragged). */
function table(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return `${[header, ...rows].map(line).join('\n')}\n`;
}

function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function addMemory(program: Command): void {
  const memory = program.command('memory').description("An agent's memories through the running service: add, search, list, forget.");

  memory
    .command('add')
    .description("Append a memory to a subject's log (writer role); prints its entry id.")
    .argument('<subject>', 'the subject id (A-Z a-z 0-9 . _ : @ + -, at most 200)')
    .argument('<text>', 'the memory, or - to read it from stdin')
    .option('--json', 'print the answer as JSON: { entryId, keyId, seq }')
    .action(async (subject: string, given: string, opts: { json?: boolean }) => {
      checkSubject(subject, 'the subject');
      const text = await checkText(given);
      const client = serviceClient('writer');
      const appended = await writerCall(client.json<AppendedEntry>('POST', `/v1/subjects/${encodeURIComponent(subject)}/entries`, { body: { text } }));
      if (opts.json) printJson(appended);
      else process.stdout.write(`${appended.entryId}\n`);
    });

  memory
    .command('search')
    .description("Search the named subjects' memories (writer role): the nearest first.")
    .argument('<query>', 'what to look for')
    .option('--subject <subject>', `a subject whose memories to search (repeatable, at most ${MEMORY_LIMITS.searchSubjects}; at least one)`, collect)
    .option('--limit <n>', `how many hits, 1 to ${MEMORY_LIMITS.searchK} (default 10)`)
    .option('--json', 'print the answer as JSON: { hits, readFence }')
    .action(async (query: string, opts: { subject?: string[]; limit?: string; json?: boolean }) => {
      if (query.trim() === '') throw new ExitError('the query is empty: say what to look for', 2);
      const subjects = opts.subject ?? [];
      if (subjects.length === 0) throw new ExitError('name the subject(s) to search: --subject <subject> (repeatable)', 2);
      if (subjects.length > MEMORY_LIMITS.searchSubjects) throw new ExitError(`--subject: at most ${MEMORY_LIMITS.searchSubjects} subjects`, 2);
      for (const s of subjects) checkSubject(s, '--subject');
      const k = checkCount(opts.limit, '--limit', MEMORY_LIMITS.searchK);
      const body = { query, ...(subjects.length === 1 ? { subject: subjects[0] } : { subjects }), ...(k !== undefined ? { k } : {}) };
      const result = await writerCall(serviceClient('writer').json<SearchResult>('POST', '/v1/search', { body }));
      if (opts.json) return printJson(result);
      if (result.hits.length === 0) return void process.stdout.write('no memories found\n');
      const row = (h: SearchHit) => [h.score.toFixed(3), h.id, h.subject ?? '-', oneLine(h.text)];
      process.stdout.write(table(['score', 'id', 'subject', 'text'], result.hits.map(row)));
    });

  memory
    .command('list')
    .description("A page of a subject's memories in the order they were added (writer role).")
    .argument('<subject>', 'the subject id')
    .option('--limit <n>', `memories per page, 1 to ${MEMORY_LIMITS.pageLimit} (default 100)`)
    .option('--cursor <cursor>', 'the next page: the cursor the previous page printed')
    .option('--json', 'print the answer as JSON: { entries, readFence, nextCursor }')
    .action(async (subject: string, opts: { limit?: string; cursor?: string; json?: boolean }) => {
      checkSubject(subject, 'the subject');
      const limit = checkCount(opts.limit, '--limit', MEMORY_LIMITS.pageLimit);
      if (opts.cursor !== undefined && !/^[A-Za-z0-9_-]{1,512}$/.test(opts.cursor))
        throw new ExitError('--cursor must be the cursor a previous page printed', 2);
      const query = new URLSearchParams();
      if (limit !== undefined) query.set('limit', String(limit));
      if (opts.cursor !== undefined) query.set('cursor', opts.cursor);
      const qs = query.toString();
      const path = `/v1/subjects/${encodeURIComponent(subject)}/entries${qs ? `?${qs}` : ''}`;
      const page = await writerCall(serviceClient('writer').json<{ entries: Entry[]; readFence: string; nextCursor: string | null }>('GET', path));
      if (opts.json) return printJson(page);
      if (page.entries.length === 0) process.stdout.write('no memories\n');
      else
        process.stdout.write(
          table(
            ['seq', 'id', 'added', 'text'],
            page.entries.map((e) => [String(e.seq), e.entryId, e.createdAt, oneLine(e.text)]),
          ),
        );
      if (page.nextCursor) process.stdout.write(`more: --cursor ${page.nextCursor}\n`);
    });

  memory
    .command('forget')
    .description('Forget one memory (eraser role) and follow its erasure to its end (exit codes as erase).')
    .argument('<entryId>', 'the memory (entry_…)')
    .option('--no-wait', 'print the erasure id once accepted, and exit 0')
    .option('--json', 'JSON lines: the answer, then one per step and the erasure last')
    .action(async (entryId: string, opts: { wait: boolean; json?: boolean }) => {
      if (!ID_PATTERNS.entry.test(entryId)) throw new ExitError(`an entry id is ${idRule('entry')}`, ERASE_EXIT.input);
      const client = serviceClient('eraser');
      const res = await serviceCall(client.request('DELETE', `/v1/entries/${entryId}`), ERASE_EXIT.input);
      const accepted = (await res.json()) as ErasureAccepted;
      if (opts.json) process.stdout.write(`${JSON.stringify(accepted)}\n`);
      if (!opts.wait) {
        if (!opts.json) process.stdout.write(`${accepted.erasureId}\n`);
        return;
      }
      if (!opts.json) {
        process.stdout.write(
          res.status === 202
            ? `erasure ${accepted.erasureId} accepted (${accepted.status})\n`
            : `erasure ${accepted.erasureId} was already forgetting this memory (${accepted.status}): following it\n`,
        );
      }
      await watchErasure(client, accepted.erasureId, opts.json ?? false);
    });
}

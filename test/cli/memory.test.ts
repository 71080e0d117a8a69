/**
 * `lethe memory add | search | list | forget` as child processes against the real service,
 * itself a child process (`lethe serve` on PostgreSQL): a memory added (from an argument and
 * from stdin), found by a scoped search, listed page by page, forgotten with its erasure
 * followed to `completed` (exit 0), then neither found nor listed; `--json` answers parse.
 * Bad input exits 2 naming the argument before any request (a stand-in service counts
 * them); a missing token exits 2 naming LETHE_TOKENS; an error answer exits 2, no answer 1.
 * search, list and forget start without the service's modules (as test/cli/loading.test.ts).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { type Recorder, startRecorder } from '../support/recorder.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MEMORY_LIMITS } from '../../src/cli/memory.js';
import { PAGE_LIMIT_MAX } from '../../src/http/cursor.js';
import { MAX_SEARCH_K, MAX_SEARCH_SUBJECTS } from '../../src/search/service.js';
import { CLI, type CliRun, type RunningService, runCli } from '../support/process.js';
import { type Served, serveOnPostgres } from '../support/served.js';
import { TOKENS } from '../support/vault.js';

const TIMEOUT = 60_000;
const tag = () => randomBytes(5).toString('hex');
const ENTRY_ID = /^entry_[A-Za-z0-9_-]{22}$/;

let served: Served;
let service: RunningService;
/** The CLI's environment: the service's URL and the writer's and eraser's tokens. */
let env: Record<string, string>;
/** A stand-in service that counts the requests it gets (to prove none was made). */
let recorder: Recorder;

beforeAll(async () => {
  served = await serveOnPostgres();
  service = served.service;
  env = { LETHE_URL: service.url, LETHE_TOKENS: `writer=${TOKENS.writer},eraser=${TOKENS.eraser}` };
  recorder = await startRecorder();
}, 120_000);

afterAll(async () => {
  await served?.close();
  await recorder?.close();
});

const memory = (args: string[], extra: Record<string, string> = {}) => runCli(['memory', ...args], { ...env, ...extra });

/** `lethe memory …` with `input` on its stdin. */
async function memoryWithStdin(args: string[], input: string): Promise<CliRun> {
  const child = spawn(process.execPath, [...CLI, 'memory', ...args], {
    cwd: process.cwd(),
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin.end(input);
  // 'close', not 'exit': the pipes read whole (test/support/process.ts)
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, stdout, stderr };
}

function noStackTrace(run: CliRun): void {
  expect(run.stderr).not.toMatch(/^\s+at .+:\d+:\d+\)?$/m);
}

describe('lethe memory', () => {
  it('add → search finds it → list shows it → forget completes (exit 0) → search and list no longer have it', { timeout: 3 * TIMEOUT }, async () => {
    const s = `user:mem-${tag()}`;
    const added = await memory(['add', s, 'Bob moved to 3 Elm Road in Leeds']);
    expect(added.code, added.stderr).toBe(0);
    const entryId = added.stdout.trim();
    expect(entryId).toMatch(ENTRY_ID);

    const piped = await memoryWithStdin(['add', s, '-', '--json'], 'Bob likes green tea\n');
    expect(piped.code, piped.stderr).toBe(0);
    const second = JSON.parse(piped.stdout) as { entryId: string; keyId: string; seq: number };
    expect(second).toMatchObject({ entryId: expect.stringMatching(ENTRY_ID), keyId: expect.any(String), seq: expect.any(Number) });

    // a person's table: a header, then one line per hit (the address first)
    const found = await memory(['search', 'Elm Road in Leeds', '--subject', s]);
    expect(found.code, found.stderr).toBe(0);
    const lines = found.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^score\s+id\s+subject\s+text$/);
    expect(lines[1]).toMatch(new RegExp(`^\\d\\.\\d{3}\\s+${entryId}\\s+${s}\\s+Bob moved to 3 Elm Road in Leeds$`));
    const foundJson = await memory(['search', 'Elm Road in Leeds', '--subject', s, '--limit', '1', '--json']);
    expect(foundJson.code, foundJson.stderr).toBe(0);
    const result = JSON.parse(foundJson.stdout) as { hits: Array<{ id: string; subject: string; text: string }>; readFence: string };
    expect(result.hits).toHaveLength(1);
    expect(result.hits[0]).toMatchObject({ id: entryId, subject: s, text: 'Bob moved to 3 Elm Road in Leeds' });

    const listed = await memory(['list', s]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/^seq\s+id\s+added\s+text$/m);
    expect(listed.stdout).toContain(entryId);
    expect(listed.stdout).toContain(second.entryId);
    expect(listed.stdout).toContain('Bob likes green tea');
    expect(listed.stdout).not.toContain('more:');
    // one page at a time: the first names the cursor of the next
    const first = await memory(['list', s, '--limit', '1']);
    expect(first.code, first.stderr).toBe(0);
    const cursor = /^more: --cursor (\S+)$/m.exec(first.stdout)?.[1];
    expect(cursor, first.stdout).toBeDefined();
    const next = await memory(['list', s, '--limit', '1', '--cursor', cursor!, '--json']);
    expect(next.code, next.stderr).toBe(0);
    const page = JSON.parse(next.stdout) as { entries: Array<{ entryId: string; text: string }>; nextCursor: string | null };
    expect(page.entries.map((e) => e.entryId)).toEqual([second.entryId]);
    expect(page.entries[0]!.text).toBe('Bob likes green tea');

    const forgot = await memory(['forget', entryId]);
    expect(forgot.code, forgot.stderr).toBe(0);
    const erasureId = /^erasure (ers_[A-Za-z0-9_-]{22}) accepted \(pending\)$/m.exec(forgot.stdout)?.[1];
    expect(erasureId, forgot.stdout).toBeDefined();
    expect(forgot.stdout).toContain(`erasure ${erasureId}: completed`);
    noStackTrace(forgot);

    const after = await memory(['search', 'Elm Road in Leeds', '--subject', s, '--json']);
    expect(after.code, after.stderr).toBe(0);
    const ids = (JSON.parse(after.stdout) as { hits: Array<{ id: string }> }).hits.map((h) => h.id);
    expect(ids).not.toContain(entryId);
    expect(ids).toContain(second.entryId);
    const listedAfter = await memory(['list', s, '--json']);
    expect((JSON.parse(listedAfter.stdout) as { entries: Array<{ entryId: string }> }).entries.map((e) => e.entryId)).toEqual([second.entryId]);
  });

  it('forget --no-wait prints the erasure id alone; --json prints the answer as a JSON line', { timeout: TIMEOUT }, async () => {
    const s = `user:mem-nowait-${tag()}`;
    const a = JSON.parse((await memory(['add', s, 'Nora walks to work', '--json'])).stdout) as { entryId: string };
    const b = JSON.parse((await memory(['add', s, 'Nora reads at night', '--json'])).stdout) as { entryId: string };
    const nowait = await memory(['forget', a.entryId, '--no-wait']);
    expect(nowait.code, nowait.stderr).toBe(0);
    expect(nowait.stdout.trim()).toMatch(/^ers_[A-Za-z0-9_-]{22}$/);
    const watched = await runCli(['erasure', 'watch', nowait.stdout.trim()], env);
    expect(watched.code, watched.stderr).toBe(0);

    const json = await memory(['forget', b.entryId, '--json']);
    expect(json.code, json.stderr).toBe(0);
    const lines = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({ erasureId: expect.stringMatching(/^ers_/), status: expect.any(String) });
    expect(lines.at(-1)).toMatchObject({ erasureId: lines[0]!.erasureId, status: 'completed' });
  });

  it('bad input exits 2 naming the argument, before any request', { timeout: TIMEOUT }, async () => {
    const before = recorder.count;
    const at = { LETHE_URL: recorder.url };
    const cases: Array<[string[], RegExp]> = [
      [['add', 'user:1', ''], /^lethe: the text is empty/],
      [['add', 'user:1', '   '], /^lethe: the text is empty/],
      [['add', 'not a subject', 'hello'], /^lethe: the subject must be 1 to 200 characters/],
      [['add', 'x'.repeat(201), 'hello'], /^lethe: the subject must be 1 to 200 characters/],
      [['add', 'user:1', 'x'.repeat(64 * 1024 + 1)], /^lethe: the text: at most 65536 bytes/],
      [['search', 'tea'], /^lethe: name the subject\(s\) to search: --subject/],
      [['search', ' ', '--subject', 'user:1'], /^lethe: the query is empty/],
      [['search', 'tea', '--subject', 'user 1'], /^lethe: --subject must be 1 to 200 characters/],
      [['search', 'tea', '--subject', 'user:1', '--limit', '101'], /^lethe: --limit must be a whole number from 1 to 100, not "101"/],
      [['search', 'tea', '--subject', 'user:1', '--limit', 'ten'], /^lethe: --limit must be a whole number/],
      [['list', 'user/1'], /^lethe: the subject must be/],
      [['list', 'user:1', '--limit', '0'], /^lethe: --limit must be a whole number from 1 to 1000/],
      [['list', 'user:1', '--cursor', 'not a cursor'], /^lethe: --cursor must be the cursor a previous page printed/],
      [['forget', 'ers_AAAAAAAAAAAAAAAAAAAAAA'], /^lethe: an entry id is entry_ followed by 22 characters/],
    ];
    const runs = await Promise.all(cases.map(([args]) => memory(args, at)));
    runs.forEach((run, i) => {
      expect(run.code, `${cases[i]![0].join(' ')}: ${run.stderr}`).toBe(2);
      expect(run.stderr).toMatch(cases[i]![1]);
      expect(run.stdout).toBe('');
      noStackTrace(run);
    });
    const fromStdin = await memoryWithStdin(['add', 'user:1', '-'], '\n');
    expect(fromStdin.code).toBe(2);
    expect(fromStdin.stderr).toMatch(/^lethe: the text \(stdin\) is empty/);
    expect(recorder.count).toBe(before);
  });

  it('a missing role token exits 2 naming LETHE_TOKENS and the role, before any request; it never prints a token', { timeout: TIMEOUT }, async () => {
    const before = recorder.count;
    const [add, forget, none] = await Promise.all([
      memory(['add', 'user:1', 'hello'], { LETHE_URL: recorder.url, LETHE_TOKENS: `eraser=${TOKENS.eraser}` }),
      memory(['forget', `entry_${'A'.repeat(22)}`], { LETHE_URL: recorder.url, LETHE_TOKENS: `writer=${TOKENS.writer}` }),
      memory(['search', 'tea', '--subject', 'user:1'], { LETHE_URL: recorder.url, LETHE_TOKENS: '' }),
    ]);
    expect(add.code).toBe(2);
    expect(add.stderr).toMatch(/^lethe: LETHE_TOKENS has no writer token/);
    expect(forget.code).toBe(2);
    expect(forget.stderr).toMatch(/^lethe: LETHE_TOKENS has no eraser token/);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^lethe: LETHE_TOKENS/);
    for (const run of [add, forget, none]) for (const token of Object.values(TOKENS)) expect(run.stderr).not.toContain(token);
    expect(recorder.count).toBe(before);
  });

  it('an error answer exits 2 with the service’s words; no answer exits 1', { timeout: TIMEOUT }, async () => {
    const [unknown, down] = await Promise.all([
      memory(['list', `user:never-${tag()}`]),
      memory(['add', 'user:1', 'hello'], { LETHE_URL: 'http://127.0.0.1:9' }),
    ]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^lethe: the service answered 404 not_found/);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^lethe: the service at http:\/\/127\.0\.0\.1:9 did not answer/);
    noStackTrace(down);
  });

  it('search, list and forget load the client, not the app, the database client or the service', { timeout: TIMEOUT }, async () => {
    const SERVICE_SIDE = /^src\/(app|db|http|vault|log|artifacts|search|vectors|backups|storage|keyprovider\/local)\b|^src\/erasure\/(engine|service)/;
    const traced = (args: string[]) =>
      new Promise<string[]>((resolve) => {
        const child = spawn(process.execPath, ['--import', './test/support/load-trace.mjs', ...CLI, 'memory', ...args], {
          cwd: process.cwd(),
          env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', LETHE_URL: 'http://127.0.0.1:9', LETHE_TOKENS: env.LETHE_TOKENS! },
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        child.on('close', () => resolve(stderr.split('\n').flatMap((l) => (l.startsWith('lethe-loaded ') ? [l.slice('lethe-loaded '.length)] : []))));
      });
    for (const args of [
      ['search', 'tea', '--subject', 'user:1'],
      ['list', 'user:1'],
      ['forget', `entry_${'A'.repeat(22)}`],
    ]) {
      const files = await traced(args);
      expect(files, args.join(' ')).toContain('src/client/http.ts');
      expect(
        files.filter((f) => SERVICE_SIDE.test(f)),
        args.join(' '),
      ).toEqual([]);
    }
  });

  it("the CLI's limits are the service's", () => {
    expect(MEMORY_LIMITS).toEqual({ searchK: MAX_SEARCH_K, searchSubjects: MAX_SEARCH_SUBJECTS, pageLimit: PAGE_LIMIT_MAX });
  });
});

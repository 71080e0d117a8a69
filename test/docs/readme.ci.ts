/**
 * The README followed literally in a fresh clone (issue 33): its fenced code blocks, in
 * order, as a person copies them into two terminals — `npm start` with the README's exact
 * environment, the quickstart, the CLI flow and each agent snippet with the documented
 * tokens. A command that exits non-zero, answers a problem document (curl), or prints a
 * stack trace (`    at f (file:1:2)`, `node:internal`, a Python traceback) fails it.
 *
 * The convention: every fenced block of README.md has, on the line before it (blank lines
 * between allowed), an HTML comment `<!-- readme-test: MODE -->`; a block without one
 * fails the first test, so a new snippet must say whether it runs. MODE is
 *
 * - `run`: run it. `sh` with `bash -e -o pipefail` in the clone, after the Quickstart's
 *   shared lines (its `export LETHE_TOKENS=…`); `ts` with the clone's tsx, from a file in
 *   an empty project with `@lethe/client` installed as clients/typescript/README.md says
 *   (`npm pack ./clients/typescript`, the tarball and `@langchain/langgraph-checkpoint`
 *   installed); `python` with python3 and `PYTHONPATH=clients/python`, as
 *   clients/python/README.md says ("no install at all").
 * - `continues`: the block goes on from the previous block of its language (the LangGraph
 *   snippet uses the TypeScript snippet's `lethe`): both run as one program.
 * - `terminals`: the Quickstart's block. A line ending `# terminal N` runs in terminal N,
 *   the others (the export) in every terminal: terminal 1 (`npm start`) in the background
 *   until `http://127.0.0.1:8787/healthz` answers — the README's address, which every
 *   snippet calls — terminal 2 in the foreground. The later `run` blocks are terminal 2's.
 * - `skip …`: not run, with the reason (the two commands: `npm start` runs in the
 *   Quickstart's block; `npm test` is not run here, CI runs the suite as a step of its own).
 *
 * The clone is test/support/clone.ts's copy of the working tree; npm ci and the client's
 * install use npm's cache. The service's own output is held to the same "no stack trace".
 * Each step's time is printed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyOfWorkingTree, REPOSITORY } from '../support/clone.js';
import { NPM_FLAGS, npm } from '../support/npm.js';

/** Where the README's snippets find the service. */
const SERVICE_URL = 'http://127.0.0.1:8787';
const MODES = ['run', 'continues', 'terminals', 'skip'] as const;
type Mode = (typeof MODES)[number];

interface Block {
  /** The fence's line (1-based) in README.md. */
  readonly line: number;
  readonly lang: string;
  readonly mode: Mode | undefined;
  readonly code: string;
}

/** README.md's fenced blocks in order, each with the mode its marker gives. */
function readmeBlocks(text: string): Block[] {
  const lines = text.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    let end = i + 1;
    while (end < lines.length && !/^```\s*$/.test(lines[end]!)) end++;
    let before = i - 1;
    while (before >= 0 && lines[before]!.trim() === '') before--;
    const marker = /^<!-- readme-test: (\w+)\b/.exec(lines[before] ?? '')?.[1];
    blocks.push({
      line: i + 1,
      lang: open[1]!,
      mode: MODES.find((m) => m === marker),
      code: lines.slice(i + 1, end).join('\n'),
    });
    i = end;
  }
  return blocks;
}

/** A line of a stack trace: Node's frames and internals, or Python's traceback. */
const STACK_TRACE = [/^\s+at .+\(.+:\d+:\d+\)$/m, /^\s+at .+:\d+:\d+$/m, /node:internal/, /Traceback \(most recent call last\)/];

function stackTraceIn(output: string): string | undefined {
  for (const pattern of STACK_TRACE) {
    const m = pattern.exec(output);
    if (m) return m[0];
  }
  return undefined;
}

/** An error answer curl printed: an RFC 9457 problem document (`"status": 404`). */
const PROBLEM = /"status"\s*:\s*[45]\d\d\b/;

/**
 * The environment of a person's shell: this process's, without lethe's configuration and
 * what npm and vitest add (npm needs the rest, e.g. NODE_EXTRA_CA_CERTS behind a proxy).
 */
const USER_ENV = Object.fromEntries(
  Object.entries(process.env).filter(
    (e): e is [string, string] =>
      e[1] !== undefined && !/^(LETHE_|DATABASE_URL|S3_|PORT$|HOST$|npm_|NODE_ENV$|NODE_OPTIONS$|VITEST|TEST$|PYTHONPATH$)/.test(e[0]),
  ),
);

interface Run {
  readonly code: number | null;
  readonly output: string;
  readonly seconds: number;
}

interface Shell {
  readonly child: ChildProcess;
  output(): string;
  readonly exited: Promise<number | null>;
}

/** `command args` in `cwd` (its own process group), stdout and stderr interleaved as a terminal shows them. */
function spawnIn(cwd: string, command: string, args: string[], env: Record<string, string> = {}): Shell {
  const child = spawn(command, args, { cwd, env: { ...USER_ENV, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

async function runIn(cwd: string, command: string, args: string[], env: Record<string, string> = {}, timeoutMs = 300_000): Promise<Run> {
  const started = Date.now();
  const shell = spawnIn(cwd, command, args, env);
  const timer = setTimeout(() => signalGroup(shell.child, 'SIGKILL'), timeoutMs);
  const code = await shell.exited;
  clearTimeout(timer);
  return { code, output: shell.output(), seconds: Math.round((Date.now() - started) / 100) / 10 };
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // already gone
  }
}

/** The script bash runs for a terminal's lines: stop at the first command that fails. */
const script = (lines: string) => `set -e -o pipefail\n${lines}\n`;

/** What each step printed, shown once the file ends (CI's log of what a reader would see). */
const outputs: string[] = [];

/** What a step must not print, and the exit code it must end with. */
function expectClean(what: string, run: Run, options: { curl?: boolean } = {}): void {
  outputs.push(`── ${what} (exit ${run.code}, ${run.seconds} s)\n${run.output.trimEnd()}`);
  expect(run.code, `${what} exited ${run.code}:\n${run.output}`).toBe(0);
  const trace = stackTraceIn(run.output);
  expect(trace, `${what} printed a stack trace (${trace}):\n${run.output}`).toBeUndefined();
  if (options.curl) expect(run.output, `${what} answered a problem:\n${run.output}`).not.toMatch(PROBLEM);
}

const readme = readFileSync(path.join(REPOSITORY, 'README.md'), 'utf8');
const blocks = readmeBlocks(readme);

describe('README.md marks each code block', () => {
  it('every fenced block has a readme-test marker; one is the Quickstart’s terminals', () => {
    expect(blocks.filter((b) => b.mode === undefined).map((b) => `README.md:${b.line}`)).toEqual([]);
    expect(blocks.filter((b) => b.mode === 'terminals')).toHaveLength(1);
    for (const b of blocks.filter((b) => b.mode === 'run' || b.mode === 'continues')) expect(['sh', 'ts', 'python'], `README.md:${b.line}`).toContain(b.lang);
    // the CLI flow of issue 33 is among the blocks run
    const run = blocks.filter((b) => b.mode === 'run').map((b) => b.code);
    for (const step of [
      'npx lethe memory add',
      'npx lethe memory search',
      'npx lethe erase',
      'npx lethe erasure watch',
      'npx lethe erasure certificate',
      'npx lethe certificate verify',
    ])
      expect(
        run.some((code) => code.includes(step)),
        step,
      ).toBe(true);
  });
});

describe('README.md followed in a fresh clone', () => {
  const terminals = blocks.find((b) => b.mode === 'terminals')!;
  const lines = terminals.code.split('\n').filter((l) => l.trim() !== '');
  const terminal = (n: number) => lines.filter((l) => new RegExp(`#\\s*terminal ${n}\\b`).test(l)).join('\n');
  /** What every terminal runs first: the lines for no terminal in particular (the export). */
  const shared = lines.filter((l) => !/#\s*terminal \d+\b/.test(l)).join('\n');

  /** The run blocks as programs: a `continues` block joins the previous program of its language. */
  const programs: Array<{ lang: string; lines: number[]; code: string }> = [];
  for (const b of blocks) {
    if (b.mode === 'run') programs.push({ lang: b.lang, lines: [b.line], code: b.code });
    if (b.mode === 'continues') {
      const last = programs.findLast((p) => p.lang === b.lang);
      if (!last) throw new Error(`README.md:${b.line}: continues no ${b.lang} block`);
      last.lines.push(b.line);
      last.code += `\n${b.code}`;
    }
  }

  const clone = copyOfWorkingTree();
  const app = mkdtempSync(path.join(tmpdir(), 'lethe-readme-app-'));
  let service: Shell | undefined;
  const timings: string[] = [];

  beforeAll(async () => {
    // the snippets call the README's address: it must be this clone's service that answers there
    const before = await fetch(`${SERVICE_URL}/healthz`).catch(() => undefined);
    if (before) throw new Error(`${SERVICE_URL} already answers: stop what listens there, the README's snippets call that address`);
    const started = Date.now();
    service = spawnIn(clone, 'bash', ['-c', script(`${shared}\n${terminal(1)}`)]);
    const exited = service.exited.then((code) => {
      throw new Error(`terminal 1 exited ${code} before ${SERVICE_URL}/healthz answered:\n${service!.output()}`);
    });
    const healthy = (async () => {
      for (;;) {
        const res = await fetch(`${SERVICE_URL}/healthz`).catch(() => undefined);
        if (res?.status === 200) return;
        await new Promise((r) => setTimeout(r, 500));
      }
    })();
    await Promise.race([healthy, exited]);
    exited.catch(() => {});
    timings.push(`terminal 1 (${terminal(1).replace(/\s*#.*$/, '')}) to /healthz: ${Math.round((Date.now() - started) / 100) / 10} s`);
  }, 900_000);

  afterAll(async () => {
    if (service && service.child.exitCode === null) {
      signalGroup(service.child, 'SIGTERM');
      const killer = setTimeout(() => signalGroup(service!.child, 'SIGKILL'), 10_000);
      await service.exited;
      clearTimeout(killer);
    }
    // npm exits at once on the signal; the server (a process group of its own) shuts down after it, still writing its data
    for (
      let i = 0;
      i < 150 &&
      (await fetch(`${SERVICE_URL}/healthz`).then(
        () => true,
        () => false,
      ));
      i++
    )
      await new Promise((r) => setTimeout(r, 100));
    console.log(`${outputs.join('\n')}\n\nREADME followed in a fresh clone:\n  ${timings.join('\n  ')}`);
    rmSync(clone, { recursive: true, force: true, maxRetries: 20, retryDelay: 250 });
    rmSync(app, { recursive: true, force: true, maxRetries: 20, retryDelay: 250 });
  });

  it('terminal 2 of the Quickstart (npm run quickstart) exits 0 without a stack trace', async () => {
    const run = await runIn(clone, 'bash', ['-c', script(`${shared}\n${terminal(2)}`)]);
    timings.push(`terminal 2 (${terminal(2).replace(/\s*#.*$/, '')}): ${run.seconds} s`);
    expectClean('npm run quickstart', run);
  });

  /** @lethe/client installed as clients/typescript/README.md says, once, for the ts programs. */
  let clientInstalled: Promise<void> | undefined;
  const installClient = () =>
    (clientInstalled ??= (async () => {
      const started = Date.now();
      const out = await npm(['pack', './clients/typescript', '--json', '--pack-destination', app, '--loglevel=error'], clone);
      const [packed] = JSON.parse(out.slice(out.search(/^\[/m))) as Array<{ filename: string }>;
      mkdirSync(app, { recursive: true });
      writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'your-app', private: true, type: 'module' }));
      await npm(['install', path.join(app, packed!.filename), '@langchain/langgraph-checkpoint', ...NPM_FLAGS], app);
      timings.push(`@lethe/client packed and installed into an empty project: ${Math.round((Date.now() - started) / 100) / 10} s`);
    })());

  for (const [i, program] of programs.entries()) {
    const where = `README.md:${program.lines.join('+')} (${program.lang})`;
    it(`${where} exits 0 without a stack trace`, async () => {
      let run: Run;
      if (program.lang === 'sh') {
        run = await runIn(clone, 'bash', ['-c', script(`${shared}\n${program.code}`)]);
      } else if (program.lang === 'ts') {
        await installClient();
        const file = path.join(app, `readme-${i}.ts`);
        writeFileSync(file, `${program.code}\n`);
        run = await runIn(app, path.join(clone, 'node_modules', '.bin', 'tsx'), [file]);
      } else {
        const file = path.join(clone, `readme-${i}.py`);
        writeFileSync(file, `${program.code}\n`);
        run = await runIn(clone, 'python3', [file], { PYTHONPATH: 'clients/python' });
      }
      timings.push(`${where}: ${run.seconds} s`);
      expectClean(where, run, { curl: program.lang === 'sh' && program.code.includes('curl ') });
    });
  }

  it('the service printed no stack trace meanwhile', () => {
    const trace = stackTraceIn(service?.output() ?? '');
    expect(trace, `terminal 1 printed a stack trace (${trace}):\n${service?.output()}`).toBeUndefined();
  });
});

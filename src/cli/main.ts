#!/usr/bin/env node
/**
 * The lethe CLI. Every command reads the same environment configuration as the
 * service, prints results as JSON on stdout (logs go to stderr), and exits non-zero
 * with a plain message on bad input or failure. The client commands (`backup run`,
 * `backup list`, `erase`, `erasure …`, `memory …`, `subject reinstate`) call a running service instead, with a role's
 * token from LETHE_TOKENS (role=token,…); `erase` and `erasure watch` print lines a person
 * reads unless --json.
 *
 * This file builds the program from its parts (admin.ts: the local admin commands,
 * backup.ts, certificate.ts, erasure.ts and its erasure-*.ts, memory.ts; shared.ts: what they share), turns what ends a command into
 * its exit code, and runs when it is the entry point (bin.ts, the installed `lethe`, always runs it).
 */
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config/index.js';
import { closest } from '../config/closest.js';
import { isLetheError } from '../errors.js';
import { describeError } from '../observability/logger.js';
import { addAudit, addKek, addLog, addMigrate, addReindex, addServe, addToken } from './admin.js';
import { addBackup } from './backup.js';
import { addCertificate } from './certificate.js';
import { addErase, addErasure } from './erasure.js';
import { addMcp } from './mcp.js';
import { addMemory } from './memory.js';
import { addSubject } from './subject.js';
import { ExitError } from './shared.js';

/** The version in the package.json beside src/ or dist/ (`lethe --version`). */
export const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

export function buildProgram(): Command {
  const program = new Command()
    // before any subcommand is added: commander copies these settings into each one
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) })
    .name('lethe')
    .description('Crypto-shredding key vault for AI-agent memory.')
    .version(VERSION)
    .showHelpAfterError()
    .option('--data-dir <dir>', 'the local vault to open (as LETHE_DATA_DIR)')
    .addHelpText(
      'after',
      '\nThe running service: LETHE_URL and LETHE_TOKENS (role=token,…). Every variable: docs/reference/configuration.md; every command: docs/reference/cli.md.',
    )
    .hook('preAction', () => {
      const dataDir = program.opts<{ dataDir?: string }>().dataDir;
      if (dataDir !== undefined) process.env.LETHE_DATA_DIR = dataDir;
    });

  // in the order `lethe --help` lists them
  addServe(program);
  addMigrate(program);
  addReindex(program);
  addKek(program);
  addLog(program);
  addBackup(program);
  addCertificate(program);
  addErase(program);
  addErasure(program);
  addMemory(program);
  addMcp(program);
  addSubject(program);
  addAudit(program);
  addToken(program);
  return program;
}

/**
 * The first word of `args` naming no command where one is expected (`lethe vacuum`,
 * `lethe kek lsit`), with the command it was looked up under; undefined when all are known.
 * Commander would print the parent's help and exit 0 for `lethe vacuum --help`.
 */
function unknownCommand(program: Command, args: readonly string[]): { word: string; parent: Command } | undefined {
  let command = program;
  for (let i = 0; i < args.length && command.commands.length > 0; i++) {
    const a = args[i]!;
    if (a === '--data-dir') i++;
    if (a.startsWith('-')) continue;
    const next = command.commands.find((c) => c.name() === a || c.aliases().includes(a));
    if (!next) return a === 'help' ? undefined : { word: a, parent: command };
    command = next;
  }
  return undefined;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  const unknown = unknownCommand(program, argv.slice(2));
  if (unknown) {
    const names = unknown.parent.commands.map((c) => c.name());
    const near = closest(unknown.word, names);
    const path: string[] = [];
    for (let c: Command | null = unknown.parent; c; c = c.parent) path.unshift(c.name());
    process.stderr.write(`lethe: unknown command '${unknown.word}'${near ? ` (did you mean ${near}?)` : ''}; \`${path.join(' ')} --help\` lists them\n`);
    return 2;
  }
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) return e.code === 'commander.helpDisplayed' || e.code === 'commander.version' ? 0 : 2;
    if (e instanceof ExitError) {
      process.stderr.write(`lethe: ${e.message}\n`);
      return e.exitCode;
    }
    if (e instanceof ConfigError) {
      process.stderr.write(`lethe: ${e.message}\n`);
      return 2;
    }
    if (isLetheError(e)) {
      process.stderr.write(`lethe: ${e.code}: ${e.message}\n`);
      return e.code === 'validation_failed' ? 2 : 1;
    }
    process.stderr.write(`lethe: ${describeError(e).message}\n`);
    return 1;
  }
}

/**
 * Runs the CLI on this process's arguments and sets its exit code: what the installed `lethe`
 * (bin.ts) does, and this file when run directly. serve keeps running; everything else exits
 * with its code (a command that succeeded with a verdict of its own — incomplete, pending —
 * set process.exitCode: keep it).
 */
export async function runCli(argv: string[] = process.argv): Promise<void> {
  // output into a closed pipe (`lethe --help | head`) ends the command quietly
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
      throw e;
    });
  }
  const code = await main(argv);
  if (code !== 0) process.exitCode = code;
  else if (!argv.includes('serve')) process.exitCode ??= 0;
}

/** Whether this module is the script node was started with, through any symlink (`node dist/cli/main.js serve`, `tsx src/cli/main.ts`). */
function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint()) void runCli();

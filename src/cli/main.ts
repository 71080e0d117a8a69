#!/usr/bin/env node
/**
 * The lethe CLI. Every command reads the same environment configuration as the
 * service, prints results as JSON on stdout (logs go to stderr), and exits non-zero
 * with a plain message on bad input or failure. The client commands (`backup run`,
 * `backup list`, `erase`, `erasure …`) call a running service instead, with a role's
 * token from LETHE_<ROLE>_TOKEN; `erase` and `erasure watch` print lines a person
 * reads unless --json.
 */
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { Command, CommanderError } from 'commander';
import { CONFIG_VARIABLES, ConfigError, type Config, loadConfig, ROLES, type Role } from '../config/index.js';
import { deriveSubkey, toBase64Url, zeroize } from '../crypto/index.js';
import { certificatePublicKey, verifyCertificate } from '../crypto/certificate.js';
import { FIRST_RUN } from '../erasure/machine.js';
import { ERASURE_ID_PATTERN, LEGAL_BASES, MAX_PUBLIC_ATTRIBUTES } from '../erasure/request.js';
import type { ErasureTransition } from '../erasure/view.js';
import { isLetheError } from '../errors.js';
import { loadRootKey } from '../keyprovider/root-key.js';
import { createLogger, describeError, type Logger } from '../observability/logger.js';
import { SUBJECT_ID_PATTERN } from '../ids.js';
import type { App } from '../app/open.js';

// The service, the vault and the database client load on first use: the commands that
// are HTTP clients of a running service (backup run, erase, erasure …) start without them.
const openApp: typeof import('../app/open.js').openApp = async (...args) => (await import('../app/open.js')).openApp(...args);
const startServer: typeof import('../app/serve.js').startServer = async (...args) => (await import('../app/serve.js')).startServer(...args);
const fsck: typeof import('../log/maintenance.js').fsck = async (...args) => (await import('../log/maintenance.js')).fsck(...args);
const compact: typeof import('../log/maintenance.js').compact = async (...args) => (await import('../log/maintenance.js')).compact(...args);

function out(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

class ExitError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

function config(): Config {
  return loadConfig(process.env);
}

async function withVault<T>(fn: (vault: App, logger: Logger) => Promise<T>, options: { logLevel?: string } = {}): Promise<T> {
  const cfg = config();
  const logger = createLogger(options.logLevel ?? (cfg.logLevel === 'info' ? 'warn' : cfg.logLevel));
  const vault = await openApp(cfg, { logger, listen: false });
  try {
    return await fn(vault, logger);
  } finally {
    await vault.close();
  }
}

export function buildProgram(): Command {
  const program = new Command()
    // before any subcommand is added: commander copies these settings into each one
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) })
    .name('lethe')
    .description('Crypto-shredding key vault for AI-agent memory.')
    .showHelpAfterError()
    .addHelpText('after', `\nConfiguration comes from the environment: ${CONFIG_VARIABLES.join(', ')}.\nSee README.md.`);

  program
    .command('serve')
    .description('Run the HTTP service (embedded PGlite + local keyring unless DATABASE_URL is set).')
    .action(async () => {
      const cfg = config();
      const logger = createLogger(cfg.logLevel);
      const server = await startServer(cfg, logger);
      const stop = (signal: string) => {
        logger.info({ signal }, 'shutting down');
        server.close().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      };
      process.once('SIGINT', () => stop('SIGINT'));
      process.once('SIGTERM', () => stop('SIGTERM'));
    });

  program
    .command('migrate')
    .description('Apply database migrations from drizzle/ and make sure an active KEK epoch exists.')
    .action(async () => {
      await withVault(async (vault) => {
        const active = (await vault.epochs.list()).find((e) => e.state === 'active');
        out({ migrated: true, database: vault.db.kind, activeEpoch: active?.epoch ?? null });
      });
    });

  const kek = program.command('kek').description('Key-encryption-key epochs.');
  kek
    .command('rotate')
    .description('Create a new KEK epoch, re-wrap every live DEK under it, retire epochs nothing references. Safe to interrupt and re-run.')
    .option('--quiet', 'no progress on stderr')
    .action(async (opts: { quiet?: boolean }) => {
      const cfg = config();
      const logger = createLogger(cfg.logLevel === 'info' ? 'warn' : cfg.logLevel);
      const progress = !opts.quiet && process.stderr.isTTY;
      const vault = await openApp(cfg, {
        logger,
        listen: false,
        onRewrapBatch: (n) => {
          if (progress) process.stderr.write(`\rre-wrapped ${n} keys`);
        },
      });
      try {
        const result = await vault.epochs.rotate('cli');
        if (progress) process.stderr.write('\n');
        out(result);
      } finally {
        await vault.close();
      }
    });
  kek
    .command('list')
    .description('List KEK epochs with their state and how many live keys each wraps.')
    .action(async () => {
      await withVault(async (vault) => out({ epochs: await vault.epochs.list() }));
    });

  const log = program.command('log').description('The episodic log in the object store.');
  log
    .command('fsck')
    .description(
      'Check that the object store and the index agree: segments stored but not indexed (orphans), indexed but missing (lost). Exits 1 when anything indexed is missing or misplaced.',
    )
    .option('--repair', 'delete orphan segments older than the grace period (they hold nothing acknowledged)')
    .option('--grace-seconds <n>', 'orphans younger than this may belong to an append in flight', '3600')
    .option('--deep', 'also read every segment and check each indexed frame fits it')
    .action(async (opts: { repair?: boolean; graceSeconds: string; deep?: boolean }) => {
      const grace = Number(opts.graceSeconds);
      if (!Number.isSafeInteger(grace) || grace < 0) throw new ExitError('--grace-seconds must be a whole number of seconds', 2);
      const report = await withVault((vault) =>
        fsck({ db: vault.db.db, objects: vault.objects }, { repair: opts.repair ?? false, graceSeconds: grace, deep: opts.deep ?? false }),
      );
      out(report);
      if (!report.ok) throw new ExitError(`${report.missing.length} indexed segment(s) missing, ${report.badFrames.length} misplaced frame(s)`, 1);
    });
  log
    .command('rekey')
    .description(
      "Rewrite a subject's surviving entries under a new key and destroy the old one; --exclude erases those entries for real.",
    )
    .argument('<subject>', 'the subject id')
    .option('--exclude <entryId...>', 'entries to erase')
    .option('--reason <text>', 'recorded in the destruction ledger', 'rekey')
    .action(async (subject: string, opts: { exclude?: string[]; reason: string }) => {
      out(await withVault((vault) => vault.log.rekeySubject(subject, { exclude: opts.exclude ?? [], actor: 'cli', reason: opts.reason })));
    });
  log
    .command('compact')
    .description('Rewrite segments without the frames of destroyed keys (storage hygiene; erasure does not depend on it).')
    .action(async () => {
      out(await withVault((vault) => compact({ db: vault.db.db, objects: vault.objects })));
    });

  const backup = program.command('backup').description('Backups in the backup bucket (S3_BACKUP_BUCKET, or a folder of the local store).');
  backup
    .command('run')
    .description(
      'Ask the running service to take a backup (POST /v1/backups), as a client with the backup role: the job never holds a key. ' +
        'LETHE_URL (default http://127.0.0.1:8787) and LETHE_BACKUP_TOKEN name the service and the token. A progress bar on a terminal; ' +
        'otherwise JSON lines on stdout, the result last.',
    )
    .action(async () => {
      const result = await runBackupThroughService();
      // on a terminal the result as usual; otherwise the last of the JSON lines
      if (process.stderr.isTTY) out(result);
      else process.stdout.write(`${JSON.stringify(result)}\n`);
    });
  backup
    .command('list')
    .description('The backups taken (GET /v1/backups, backup role; LETHE_URL and LETHE_BACKUP_TOKEN).')
    .action(async () => {
      out(await callService('GET', '/v1/backups'));
    });
  backup
    .command('verify')
    .description(
      "Check a backup: every object's sha256, and per key whether its data still decrypts (live keys must, destroyed keys must not) " +
        'and whether the backup\'s wrapped copy of the key still unwraps. Exits 1 when anything fails.',
    )
    .argument('<backupId>', 'the backup')
    .action(async (backupId: string) => {
      const result = await withVault((vault) => vault.backups.verify(backupId));
      out(result);
      if (!result.ok) {
        const bad = result.keys.filter((k) => (k.state === 'active' ? k.data !== 'decrypts' : k.data !== 'unreadable'));
        throw new ExitError(`backup ${backupId} failed verification: ${result.corrupted.length} corrupted object(s)${result.corrupted.map((c) => ` ${c.key} (${c.reason})`).join(',')}, ${bad.length} key(s) in the wrong state`, 1);
      }
    });
  backup
    .command('restore')
    .description(
      "Restore a backup into this configuration's (empty) database and bucket. The destruction ledger copied into the backup bucket is " +
        'replayed first, so no destroyed key comes back; without it the restore refuses unless --force-without-ledger.',
    )
    .argument('<backupId>', 'the backup')
    .option('--force-without-ledger', 'proceed when the ledger copy cannot be read, and say what that leaves unguaranteed')
    .action(async (backupId: string, opts: { forceWithoutLedger?: boolean }) => {
      const result = await withVault((vault) => vault.backups.restore(backupId, { force: opts.forceWithoutLedger ?? false, actor: 'cli' }));
      for (const w of result.warnings) process.stderr.write(`lethe: WARNING: ${w}\n`);
      out(result);
    });
  backup
    .command('propagate')
    .description('Write new manifest versions for key destructions not yet marked in the backups that hold them (the service does this on its own too).')
    .action(async () => {
      out(await withVault((vault) => vault.backups.propagate()));
    });

  const certificate = program.command('certificate').description('Erasure certificates (Ed25519 over canonical JSON).');
  certificate
    .command('verify')
    .description('Check a certificate file offline: exit 0 when its signature holds over its payload, 1 when not, 2 when the file is unreadable.')
    .argument('<file>', 'a certificate as JSON: { payload, signature, publicKey, algorithm }')
    .option('--public-key <base64url>', "also require this signer (lethe's key: `lethe certificate public-key`)")
    .action(async (file: string, opts: { publicKey?: string }) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(await readFile(file, 'utf8'));
      } catch (e) {
        throw new ExitError(`cannot read a JSON certificate from ${file}: ${describeError(e).message}`, 2);
      }
      const result = verifyCertificate(parsed, opts.publicKey);
      out(result);
      if (!result.valid) throw new ExitError(`certificate does not verify: ${result.reason}`, 1);
    });
  certificate
    .command('public-key')
    .description("This vault's certificate-signing public key (derived from the root key), base64url.")
    .action(async () => {
      const cfg = config();
      const root = loadRootKey(cfg, (message) => process.stderr.write(`lethe: ${message}\n`));
      const secret = deriveSubkey(root.key, 'certificate-signing');
      try {
        out({ algorithm: 'Ed25519', publicKey: toBase64Url(certificatePublicKey(secret)) });
      } finally {
        zeroize(secret, root.key);
      }
    });

  program
    .command('erase')
    .description(
      "Erase a subject through the running service, as a client with the eraser role (LETHE_URL, default http://127.0.0.1:8787, and LETHE_ERASER_TOKEN): " +
        'POST /v1/erasures, then follow its steps live (one line per step transition) and print a summary: status, class, recovered/threshold, residuals and probe matches. ' +
        'Requesting a subject whose erasure is still open follows that erasure. The subject id is never printed. ' +
        `Exit codes: ${ERASE_EXIT.completed} completed; ${ERASE_EXIT.incomplete} incomplete (a residual is left: another subject's record still carries the content — order a redaction — ` +
        `or class C without an unlearning bound); ${ERASE_EXIT.failed} failed; ${ERASE_EXIT.input} bad input, missing LETHE_ERASER_TOKEN or a bad LETHE_URL, the service unreachable, ` +
        `or an error answer from the service (its problem detail on stderr); ${ERASE_EXIT.lost} accepted, but following it broke off (it goes on: \`lethe erasure watch <erasureId>\`).`,
    )
    .argument('<subject>', 'the subject id: 1 to 200 characters of A-Z a-z 0-9 . _ : @ + -')
    .option('--reason <text>', 'why the subject is erased (sealed with the request)')
    .option('--legal-basis <basis>', LEGAL_BASES.join(', '))
    .option('--public-attribute <text>', `something public about the subject that the probe also looks for (repeatable, at most ${MAX_PUBLIC_ATTRIBUTES})`, collect)
    .option('--unlearning-method <text>', 'class C: how the trained model was made to unlearn the subject (with --unlearning-bound)')
    .option('--unlearning-bound <number>', 'class C: the bound the method gives, a number >= 0 (with --unlearning-method)')
    .option('--no-wait', 'print the erasure id once the service accepted the request, and exit 0')
    .option('--json', 'JSON lines on stdout: {"step": …} per transition, the erasure (as GET /v1/erasures/{id}) last; with --no-wait, {erasureId, status}')
    .action(async (subject: string, opts: EraseOptions) => {
      const body = erasureRequestBody(subject, opts);
      const res = await serviceFetch('POST', '/v1/erasures', { role: 'eraser', body, failureExit: ERASE_EXIT.input });
      const accepted = (await res.json()) as { erasureId: string; status: string };
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
      await watchErasure(accepted.erasureId, opts.json ?? false);
    });

  const erasure = program.command('erasure').description('Erasures through the running service (eraser role: LETHE_URL and LETHE_ERASER_TOKEN).');
  erasure
    .command('show')
    .description('An erasure as JSON (GET /v1/erasures/{id}): status, class, steps, residuals, probe, certificate. Exit 2 for an unknown id.')
    .argument('<erasureId>', 'the erasure (ers_…)')
    .action(async (erasureId: string) => {
      out(await (await serviceFetch('GET', `/v1/erasures/${checkErasureId(erasureId)}`, { role: 'eraser', failureExit: ERASE_EXIT.input })).json());
    });
  erasure
    .command('watch')
    .description(`Follow an erasure's steps live until it ends, then print its summary; exit codes as \`lethe erase\` (${ERASE_EXIT.completed} completed, ${ERASE_EXIT.incomplete} incomplete, ${ERASE_EXIT.failed} failed, ${ERASE_EXIT.input} bad input or an error answer).`)
    .argument('<erasureId>', 'the erasure (ers_…)')
    .option('--json', 'JSON lines on stdout: {"step": …} per transition, the erasure last')
    .action(async (erasureId: string, opts: { json?: boolean }) => {
      await watchErasure(checkErasureId(erasureId), opts.json ?? false);
    });
  erasure
    .command('report')
    .description("The erasure's report for a data-protection officer (self-contained HTML with the provenance graph), to stdout or a file.")
    .argument('<erasureId>', 'the erasure (ers_…)')
    .option('-o, --output <file>', 'write the HTML to this file (and print {erasureId, report, bytes})')
    .action(async (erasureId: string, opts: { output?: string }) => {
      const res = await serviceFetch('GET', `/v1/erasures/${checkErasureId(erasureId)}/report`, { role: 'eraser', accept: 'text/html', failureExit: ERASE_EXIT.input });
      const html = await res.text();
      if (!opts.output) {
        process.stdout.write(html);
        return;
      }
      try {
        await writeFile(opts.output, html, { mode: 0o600 });
      } catch (e) {
        throw new ExitError(`cannot write ${opts.output}: ${describeError(e).message}`, ERASE_EXIT.input);
      }
      out({ erasureId, report: opts.output, bytes: Buffer.byteLength(html) });
    });

  const audit = program.command('audit').description('The MAC-chained audit log.');
  audit
    .command('verify')
    .description('Walk the audit chain and report the first edited, inserted or deleted row. Exits 1 when broken.')
    .action(async () => {
      const result = await withVault((vault) => vault.audit.verify(vault.db.db));
      out(result);
      if (!result.ok) throw new ExitError(`audit chain broken at row ${result.brokenAt}: ${result.problem}`, 1);
    });

  const token = program.command('token').description('API tokens.');
  token
    .command('new')
    .description('Generate a token for a role: prints the token and the line for LETHE_TOKENS_FILE.')
    .argument('<role>', `one of ${ROLES.join(', ')}`)
    .action(async (role: string) => {
      if (!(ROLES as readonly string[]).includes(role)) throw new ExitError(`role must be one of ${ROLES.join(', ')}`, 2);
      const { tokenDigest } = await import('../http/auth.js');
      const value = randomBytes(32).toString('base64url');
      out({ role: role as Role, token: value, tokensFileLine: `${role}=sha256:${tokenDigest(value).toString('hex')}` });
    });

  return program;
}

interface ServiceCall {
  readonly accept?: string;
  /** JSON request body. */
  readonly body?: unknown;
  /** The role whose token the call carries, from LETHE_<ROLE>_TOKEN (default backup). */
  readonly role?: 'backup' | 'eraser';
  /** Exit code when the service cannot be reached or answers an error (default 1). */
  readonly failureExit?: number;
  readonly headers?: Readonly<Record<string, string>>;
}

/** LETHE_URL (default http://127.0.0.1:8787) and the role's token from LETHE_<ROLE>_TOKEN; exit 2 when either is unusable. */
function serviceTarget(role: 'backup' | 'eraser'): { base: string; token: string } {
  const base = (process.env.LETHE_URL ?? 'http://127.0.0.1:8787').replace(/\/+$/, '');
  const variable = `LETHE_${role.toUpperCase()}_TOKEN`;
  const token = process.env[variable];
  if (!token) throw new ExitError(`set ${variable} to a token of the ${role} role`, 2);
  if (!/^https?:\/\/\S+$/.test(base)) throw new ExitError('LETHE_URL must be an http(s):// URL', 2);
  return { base, token };
}

/** The service could not be reached (the request may be retried). */
class Unreachable extends Error {}

/** A call to the running service with a role's token (never taken from the command line, where `ps` shows it). */
async function serviceFetch(method: 'GET' | 'POST', path: string, options: ServiceCall | string = {}): Promise<Response> {
  const o: ServiceCall = typeof options === 'string' ? { accept: options } : options;
  try {
    return await serviceResponse(method, path, o);
  } catch (e) {
    if (e instanceof Unreachable) throw new ExitError(e.message, o.failureExit ?? 1);
    throw e;
  }
}

/** As serviceFetch, but an unreachable service is an Unreachable error. */
async function serviceResponse(method: 'GET' | 'POST', path: string, o: ServiceCall): Promise<Response> {
  const { base, token } = serviceTarget(o.role ?? 'backup');
  const failure = o.failureExit ?? 1;
  const headers: Record<string, string> = { ...o.headers, authorization: `Bearer ${token}`, accept: o.accept ?? 'application/json' };
  if (o.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(`${base}${path}`, {
      method,
      headers,
      ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}),
      signal: AbortSignal.timeout(3_600_000),
    });
  } catch (e) {
    throw new Unreachable(`the service at ${base} did not answer: ${describeError(e).message}`);
  }
  if (!res.ok) {
    const body = (await res.json().catch(() => undefined)) as { detail?: string; code?: string } | undefined;
    throw new ExitError(`the service answered ${res.status}${body?.code ? ` ${body.code}` : ''}: ${body?.detail ?? 'no detail'}`, failure);
  }
  return res;
}

/** `lethe erase` and `lethe erasure watch` exit codes. */
const ERASE_EXIT = { completed: 0, lost: 1, input: 2, incomplete: 3, failed: 4 } as const;

interface EraseOptions {
  reason?: string;
  legalBasis?: string;
  publicAttribute?: string[];
  unlearningMethod?: string;
  unlearningBound?: string;
  wait: boolean;
  json?: boolean;
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

function checkErasureId(erasureId: string): string {
  if (!ERASURE_ID_PATTERN.test(erasureId)) throw new ExitError('an erasure id is ers_ followed by 22 characters of A-Z a-z 0-9 _ -', ERASE_EXIT.input);
  return erasureId;
}

/** The POST /v1/erasures body, checked here as the service would check it (exit 2 before any request). */
function erasureRequestBody(subject: string, options: EraseOptions): Record<string, unknown> {
  const o = { ...options, publicAttribute: options.publicAttribute ?? [] };
  const bad = (message: string) => new ExitError(message, ERASE_EXIT.input);
  if (!SUBJECT_ID_PATTERN.test(subject)) throw bad('the subject must be 1 to 200 characters of A-Z a-z 0-9 . _ : @ + -');
  if (o.reason !== undefined && o.reason.length > 2000) throw bad('--reason: at most 2000 characters');
  if (o.legalBasis !== undefined && !(LEGAL_BASES as readonly string[]).includes(o.legalBasis)) throw bad(`--legal-basis must be one of ${LEGAL_BASES.join(', ')}`);
  if (o.publicAttribute.length > MAX_PUBLIC_ATTRIBUTES) throw bad(`--public-attribute: at most ${MAX_PUBLIC_ATTRIBUTES}`);
  if (o.publicAttribute.some((a) => a.length < 1 || a.length > 1000)) throw bad('--public-attribute: each 1 to 1000 characters');
  let unlearning: { method: string; bound: number } | undefined;
  if (o.unlearningMethod !== undefined || o.unlearningBound !== undefined) {
    if (o.unlearningMethod === undefined || o.unlearningBound === undefined) throw bad('--unlearning-method and --unlearning-bound go together');
    if (o.unlearningMethod.length < 1 || o.unlearningMethod.length > 500) throw bad('--unlearning-method: 1 to 500 characters');
    const bound = o.unlearningBound.trim() === '' ? Number.NaN : Number(o.unlearningBound);
    if (!Number.isFinite(bound) || bound < 0) throw bad(`--unlearning-bound must be a number >= 0, not ${JSON.stringify(o.unlearningBound)}`);
    unlearning = { method: o.unlearningMethod, bound };
  }
  return {
    subject,
    ...(o.reason !== undefined ? { reason: o.reason } : {}),
    ...(o.legalBasis !== undefined ? { legalBasis: o.legalBasis } : {}),
    ...(o.publicAttribute.length ? { publicAttributes: o.publicAttribute } : {}),
    ...(unlearning ? { unlearning } : {}),
  };
}


interface ErasureSummary {
  erasureId: string;
  status: string;
  class?: string;
  steps: Array<{ name: string; status: string; detail?: string }>;
  residuals: Array<{ tier: string; kind: string; bound: number | string }>;
  probe: { recovered: number; threshold: number; matches: Array<{ id: string; tier: string; score: number }> };
  certificateState?: string;
}

/** One line a person reads for a transition: which step finished (or waits, or failed), and its detail. */
function transitionLine(t: ErasureTransition): string {
  const detail = t.detail ? `: ${t.detail}` : '';
  if (t.fromStep === null) return t.toStep === null ? `certificate${detail}` : `requested${detail}`;
  const at = FIRST_RUN.indexOf(t.fromStep as (typeof FIRST_RUN)[number]);
  const counter = at >= 0 ? `[${at + 1}/${FIRST_RUN.length}] ` : '';
  if (t.status === 'failed') return `${counter}${t.fromStep} failed${detail}`;
  if (t.toStep === t.fromStep) return `${counter}${t.fromStep} ${t.status === 'running' ? 'waiting' : t.status}${detail}`;
  return `${counter}${t.fromStep} done${detail}`;
}

/**
 * Follows GET /v1/erasures/{id}/events until its `end` event, calling `onStep` per
 * transition. A broken connection is resumed with Last-Event-ID (a few times).
 */
async function followErasureEvents(erasureId: string, onStep: (t: ErasureTransition) => void): Promise<void> {
  let lastId: string | undefined;
  let broken = 0;
  for (;;) {
    let reason = 'the stream ended before the erasure did';
    try {
      const res = await serviceResponse('GET', `/v1/erasures/${erasureId}/events`, {
        role: 'eraser',
        accept: 'text/event-stream',
        failureExit: ERASE_EXIT.input,
        ...(lastId ? { headers: { 'last-event-id': lastId } } : {}),
      });
      const decoder = new TextDecoder();
      let buffered = '';
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffered = (buffered + decoder.decode(chunk, { stream: true })).replace(/\r\n?/g, '\n');
        let at: number;
        while ((at = buffered.indexOf('\n\n')) >= 0) {
          const block = buffered.slice(0, at);
          buffered = buffered.slice(at + 2);
          let event = 'message';
          let id: string | undefined;
          const data: string[] = [];
          for (const line of block.split('\n')) {
            const colon = line.indexOf(':');
            if (colon === 0) continue;
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'event') event = value;
            else if (field === 'id') id = value;
            else if (field === 'data') data.push(value);
          }
          if (id) lastId = id;
          if (event === 'end') return;
          if (event === 'step') {
            onStep(JSON.parse(data.join('\n')) as ErasureTransition);
            broken = 0;
          }
        }
      }
    } catch (e) {
      if (e instanceof ExitError) throw e;
      reason = describeError(e).message;
    }
    if (++broken > 5) {
      throw new ExitError(`lost the erasure's progress (${reason}); it goes on in the service: lethe erasure watch ${erasureId}`, ERASE_EXIT.lost);
    }
    await new Promise((r) => setTimeout(r, 500 * 2 ** broken));
  }
}

/** Follows an erasure to its end, prints the summary, and ends with its exit code. */
async function watchErasure(erasureId: string, json: boolean): Promise<void> {
  await followErasureEvents(erasureId, (t) => {
    process.stdout.write(json ? `${JSON.stringify({ step: t })}\n` : `${transitionLine(t)}\n`);
  });
  const view = (await (await serviceFetch('GET', `/v1/erasures/${erasureId}`, { role: 'eraser', failureExit: ERASE_EXIT.input })).json()) as ErasureSummary;
  if (json) process.stdout.write(`${JSON.stringify(view)}\n`);
  else {
    const p = view.probe;
    const lines = [
      `erasure ${view.erasureId}: ${view.status}${view.class ? ` (class ${view.class})` : ''}`,
      `probe: recovered ${p.recovered} (threshold ${p.threshold}), ${p.matches.length} match(es)`,
      ...p.matches.map((m) => `  match: ${m.id} in ${m.tier} (score ${m.score})`),
      `residuals: ${view.residuals.length}`,
      ...view.residuals.map((r) => `  ${r.tier} ${r.kind}: bound ${r.bound}`),
      ...(view.certificateState ? [`certificate: ${view.certificateState}`] : []),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  if (view.status === 'completed') return;
  if (view.status === 'incomplete') {
    const kinds = [...new Set(view.residuals.map((r) => r.kind).filter((k) => k === 'cross-subject' || k === 'parametric'))];
    throw new ExitError(`erasure ${erasureId} is incomplete${kinds.length ? ` (${kinds.join(', ')} residual)` : ''}`, ERASE_EXIT.incomplete);
  }
  if (view.status === 'failed') {
    const step = view.steps.find((s) => s.status === 'failed');
    throw new ExitError(`erasure ${erasureId} failed${step ? ` at ${step.name}: ${step.detail ?? 'no detail'}` : ''}`, ERASE_EXIT.failed);
  }
  throw new ExitError(`erasure ${erasureId} is still ${view.status} after its events ended`, ERASE_EXIT.lost);
}

async function callService(method: 'GET' | 'POST', path: string): Promise<unknown> {
  return (await serviceFetch(method, path)).json();
}

/**
 * POST /v1/backups with progress: a bar on stderr when it is a terminal, the
 * progress JSON lines on stdout otherwise. Answers the result.
 */
async function runBackupThroughService(): Promise<unknown> {
  const res = await serviceFetch('POST', '/v1/backups', 'application/x-ndjson');
  const tty = process.stderr.isTTY === true;
  let result: unknown;
  let buffered = '';
  const decoder = new TextDecoder();
  const handle = (line: string) => {
    if (line.trim() === '') return;
    const msg = JSON.parse(line) as { progress?: { phase: string; done: number; copied: number; reused: number }; error?: { code: string; detail: string } };
    if (msg.error) throw new ExitError(`the backup failed: ${msg.error.code}: ${msg.error.detail}`, 1);
    if (msg.progress) {
      const p = msg.progress;
      if (tty) {
        const filled = Math.min(30, Math.floor(Math.log2(p.done + 1) * 2));
        process.stderr.write(`\r[${'#'.repeat(filled)}${' '.repeat(30 - filled)}] ${p.phase}: ${p.done} (copied ${p.copied}, already there ${p.reused})  `);
      } else process.stdout.write(`${JSON.stringify(msg)}\n`);
      return;
    }
    result = msg;
  };
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    let at: number;
    while ((at = buffered.indexOf('\n')) >= 0) {
      handle(buffered.slice(0, at));
      buffered = buffered.slice(at + 1);
    }
  }
  handle(buffered);
  if (tty) process.stderr.write('\n');
  if (!result) throw new ExitError('the service closed the backup stream without a result', 1);
  return result;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
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

const isEntryPoint = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isEntryPoint || process.argv[1]?.endsWith('/cli/main.ts') || process.argv[1]?.endsWith('/cli/main.js')) {
  main(process.argv).then((code) => {
    // serve keeps running; everything else exits with its code
    if (code !== 0 || !process.argv.includes('serve')) process.exitCode = code;
  });
}

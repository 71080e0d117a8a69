#!/usr/bin/env node
/**
 * The lethe CLI. Every command reads the same environment configuration as the
 * service, prints results as JSON on stdout (logs go to stderr), and exits non-zero
 * with a plain message on bad input or failure.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Command, CommanderError } from 'commander';
import { CONFIG_VARIABLES, ConfigError, type Config, loadConfig, ROLES, type Role } from '../config/index.js';
import { deriveSubkey, toBase64Url, zeroize } from '../crypto/index.js';
import { certificatePublicKey, verifyCertificate } from '../erasure/certificate.js';
import { isLetheError } from '../errors.js';
import { loadRootKey } from '../keyprovider/root-key.js';
import { compact, fsck } from '../log/maintenance.js';
import { tokenDigest } from '../http/auth.js';
import { startServer } from '../http/server.js';
import { createLogger, describeError, type Logger } from '../observability/logger.js';
import { openVault, type Vault } from '../vault/vault.js';

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

async function withVault<T>(fn: (vault: Vault, logger: Logger) => Promise<T>, options: { logLevel?: string } = {}): Promise<T> {
  const cfg = config();
  const logger = createLogger(options.logLevel ?? (cfg.logLevel === 'info' ? 'warn' : cfg.logLevel));
  const vault = await openVault(cfg, { logger, listen: false });
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
      const vault = await openVault(cfg, {
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
        fsck({ db: vault.db, objects: vault.objects }, { repair: opts.repair ?? false, graceSeconds: grace, deep: opts.deep ?? false }),
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
      out(await withVault((vault) => compact({ db: vault.db, objects: vault.objects })));
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
    .action((role: string) => {
      if (!(ROLES as readonly string[]).includes(role)) throw new ExitError(`role must be one of ${ROLES.join(', ')}`, 2);
      const value = randomBytes(32).toString('base64url');
      out({ role: role as Role, token: value, tokensFileLine: `${role}=sha256:${tokenDigest(value).toString('hex')}` });
    });

  return program;
}

/** A call to the running service with the backup role's token (never taken from the command line, where `ps` shows it). */
async function serviceFetch(method: 'GET' | 'POST', path: string, accept = 'application/json'): Promise<Response> {
  const base = (process.env.LETHE_URL ?? 'http://127.0.0.1:8787').replace(/\/+$/, '');
  const token = process.env.LETHE_BACKUP_TOKEN;
  if (!token) throw new ExitError('set LETHE_BACKUP_TOKEN to a token of the backup role', 2);
  if (!/^https?:\/\/\S+$/.test(base)) throw new ExitError('LETHE_URL must be an http(s):// URL', 2);
  let res: Response;
  try {
    res = await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${token}`, accept }, signal: AbortSignal.timeout(3_600_000) });
  } catch (e) {
    throw new ExitError(`the service at ${base} did not answer: ${describeError(e).message}`, 1);
  }
  if (!res.ok) {
    const body = (await res.json().catch(() => undefined)) as { detail?: string; code?: string } | undefined;
    throw new ExitError(`the service answered ${res.status}${body?.code ? ` ${body.code}` : ''}: ${body?.detail ?? 'no detail'}`, 1);
  }
  return res;
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

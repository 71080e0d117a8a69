/**
 * The local admin commands, run on this configuration (no running service needed):
 * serve, migrate, kek, log, audit (they open the app), certificate (a file, or the
 * root key) and token. The app, the server and token hashing load
 * on first use, so that a client command does not load them.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { ROLES, type Role } from '../config/index.js';
import { deriveSubkey, toBase64Url, zeroize } from '../crypto/index.js';
import { certificatePublicKey, verifyCertificate } from '../crypto/certificate.js';
import { loadRootKey } from '../keyprovider/root-key.js';
import { createLogger, describeError } from '../observability/logger.js';
import { config, ExitError, openApp, out, withApp } from './shared.js';

const startServer: typeof import('../app/serve.js').startServer = async (...args) => (await import('../app/serve.js')).startServer(...args);

/** `lethe serve`: the HTTP service until SIGINT or SIGTERM. */
export function addServe(program: Command): void {
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
}

/** `lethe migrate`. */
export function addMigrate(program: Command): void {
  program
    .command('migrate')
    .description('Apply database migrations from drizzle/ and make sure an active KEK epoch exists.')
    .action(async () => {
      await withApp(async (app) => {
        const active = (await app.epochs.list()).find((e) => e.state === 'active');
        out({ migrated: true, database: app.db.kind, activeEpoch: active?.epoch ?? null });
      });
    });
}

/** `lethe kek rotate | list`. */
export function addKek(program: Command): void {
  const kek = program.command('kek').description('Key-encryption-key epochs.');
  kek
    .command('rotate')
    .description('Create a new KEK epoch, re-wrap every live DEK under it, retire epochs nothing references. Safe to interrupt and re-run.')
    .option('--quiet', 'no progress on stderr')
    .action(async (opts: { quiet?: boolean }) => {
      const cfg = config();
      const logger = createLogger(cfg.logLevel === 'info' ? 'warn' : cfg.logLevel);
      const progress = !opts.quiet && process.stderr.isTTY;
      const app = await openApp(cfg, {
        logger,
        listen: false,
        onRewrapBatch: (n) => {
          if (progress) process.stderr.write(`\rre-wrapped ${n} keys`);
        },
      });
      try {
        const result = await app.epochs.rotate('cli');
        if (progress) process.stderr.write('\n');
        out(result);
      } finally {
        await app.close();
      }
    });
  kek
    .command('list')
    .description('List KEK epochs with their state and how many live keys each wraps.')
    .action(async () => {
      await withApp(async (app) => out({ epochs: await app.epochs.list() }));
    });
}

/** `lethe log fsck | rekey | compact`. */
export function addLog(program: Command): void {
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
      const report = await withApp((app) =>
        app.log.fsck({ repair: opts.repair ?? false, graceSeconds: grace, deep: opts.deep ?? false }),
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
      out(await withApp((app) => app.log.rekeySubject(subject, { exclude: opts.exclude ?? [], actor: 'cli', reason: opts.reason })));
    });
  log
    .command('compact')
    .description('Rewrite segments without the frames of destroyed keys (storage hygiene; erasure does not depend on it).')
    .action(async () => {
      out(await withApp((app) => app.log.compact()));
    });
}

/** `lethe certificate verify | public-key`: offline, from a file or the root key. */
export function addCertificate(program: Command): void {
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
}

/** `lethe audit verify`. */
export function addAudit(program: Command): void {
  const audit = program.command('audit').description('The MAC-chained audit log.');
  audit
    .command('verify')
    .description('Walk the audit chain and report the first edited, inserted or deleted row. Exits 1 when broken.')
    .action(async () => {
      const result = await withApp((app) => app.audit.verify(app.db.db));
      out(result);
      if (!result.ok) throw new ExitError(`audit chain broken at row ${result.brokenAt}: ${result.problem}`, 1);
    });
}

/** `lethe token new`. */
export function addToken(program: Command): void {
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
}

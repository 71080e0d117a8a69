/**
 * The local admin commands, run on this configuration (no running service needed):
 * serve, migrate, reindex, kek, log, audit (they open the app) and token (certificate: its own
 * file, certificate.ts). The app, the server and token hashing load
 * on first use, so that a client command does not load them.
 */
import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { ROLES, type Role } from '../config/index.js';
import type { App } from '../app/open.js';
import { type ErasureRequest, ErasureRequestSchema } from '../erasure/request.js';
import { createLogger } from '../observability/logger.js';
import { config, ExitError, existingVault, openApp, out, serviceCall, serviceClient, viaService, withApp } from './shared.js';

const startServer: typeof import('../app/serve.js').startServer = async (...args) => (await import('../app/serve.js')).startServer(...args);

/** `lethe serve`: the HTTP service until SIGINT or SIGTERM. */
export function addServe(program: Command): void {
  program
    .command('serve')
    .description('Run the HTTP service (embedded PGlite and a local keyring unless DATABASE_URL is set).')
    .action(async () => {
      const cfg = config();
      const logger = createLogger(cfg.logLevel);
      let stopping: string | undefined;
      let server: Awaited<ReturnType<typeof startServer>> | undefined;
      const stop = (signal: string) => {
        if (stopping) {
          // a second Ctrl-C ends it now; a repeated SIGTERM (npm and its launcher may each pass one on) waits for the stop under way
          if (signal === 'SIGINT') process.exit(130);
          return;
        }
        stopping = signal;
        logger.info({ signal }, 'shutting down');
        // still starting (a migration, a database that does not answer): end now, as the signal's default would
        if (!server) process.exit(signal === 'SIGINT' ? 130 : signal === 'SIGTERM' ? 143 : 1);
        server.close().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      };
      // kept for the whole stop: a repeated signal must not fall back to the default, which kills mid-shutdown
      process.on('SIGINT', () => stop('SIGINT'));
      process.on('SIGTERM', () => stop('SIGTERM'));
      // started by `npm start` (scripts/child.mjs): its channel closes when that process dies, however it dies
      if (process.channel) {
        process.channel.unref();
        process.once('disconnect', () => stop('parent exited'));
        if (!process.connected) stop('parent exited');
      }
      server = await startServer(cfg, logger, { version: program.version() ?? '0.0.0' });
    });
}

/** `lethe migrate`. */
export function addMigrate(program: Command): void {
  program
    .command('migrate')
    .description('Apply database migrations; create the vault if there is none.')
    .action(async () => {
      await withApp(
        async (app) => {
          const active = (await app.epochs.list()).find((e) => e.state === 'active');
          out({ migrated: true, database: app.db.kind, activeEpoch: active?.epoch ?? null });
        },
        { create: true },
      );
    });
}

/**
 * `lethe reindex`: sealed rows shingled and embedded with an older comparison form
 * computed again from their text (src/app/reindex.ts). Opening the app migrates, which
 * re-indexes already; a second pass takes what was written meanwhile. Exit 1 when rows
 * are left (their text could not be read now).
 */
export function addReindex(program: Command): void {
  program
    .command('reindex')
    .description('Re-index sealed rows made with an older comparison form.')
    .action(async () => {
      await withApp(async (app) => {
        const again = await app.reindex();
        const first = app.reindexed ?? { stale: 0, reindexed: 0, left: 0 };
        const result = { reindexed: first.reindexed + again.reindexed, left: again.left };
        out(result);
        if (result.left > 0) throw new ExitError(`${result.left} sealed row(s) could not be re-indexed: their text is not readable now`, 1);
      });
    });
}

/** Opens the app for a KEK rotation, with progress on stderr unless --quiet. */
async function openForRotation(opts: { quiet?: boolean }): Promise<{ app: App; progress: boolean }> {
  const cfg = config();
  existingVault(cfg);
  const logger = createLogger(cfg.logLevel === 'info' ? 'warn' : cfg.logLevel);
  const progress = !opts.quiet && process.stderr.isTTY;
  const app = await openApp(cfg, {
    logger,
    listen: false,
    onRewrapBatch: (n) => {
      if (progress) process.stderr.write(`\rre-wrapped ${n} keys`);
    },
  });
  return { app, progress };
}

/** `lethe kek rotate | migrate | list`. */
export function addKek(program: Command): void {
  const kek = program.command('kek').description('Key-encryption-key epochs.');
  kek
    .command('rotate')
    .description('New KEK epoch; every live key re-wrapped under it (the running service with LETHE_URL set).')
    .option('--quiet', 'no progress on stderr')
    .action(async (opts: { quiet?: boolean }) => {
      if (viaService()) {
        out(await serviceCall(serviceClient('admin').json('POST', '/v1/admin/kek/rotate'), 1));
        return;
      }
      const { app, progress } = await openForRotation(opts);
      try {
        const result = await app.epochs.rotate('cli');
        if (progress) process.stderr.write('\n');
        out(result);
      } finally {
        await app.close();
      }
    });
  kek
    .command('migrate')
    .description('Move KEK epochs from the local keyring into LETHE_KEY_PROVIDER (pkcs11, aws-kms).')
    .option('--quiet', 'no progress on stderr')
    .action(async (opts: { quiet?: boolean }) => {
      const cfg = config();
      if (cfg.keyProvider.kind === 'local') {
        throw new ExitError(
          "LETHE_KEY_PROVIDER is local: set it to pkcs11 or aws-kms, with that provider's settings, to migrate the keyring's epochs into it",
          2,
        );
      }
      const { ExternalKeyProvider } = await import('../keyprovider/external.js');
      const { app, progress } = await openForRotation(opts);
      try {
        const provider = app.provider;
        if (!(provider instanceof ExternalKeyProvider))
          throw new ExitError('the configured key provider keeps its epochs in the local keyring: nothing to migrate', 2);
        const before = provider.keyringEpochs();
        if (before.length === 0) {
          out({
            migrated: false,
            to: provider.name,
            reason: 'no KEK epoch is left in the local keyring',
            activeEpoch: (await app.epochs.list()).find((e) => e.state === 'active')?.epoch ?? null,
          });
          return;
        }
        const result = await app.epochs.rotate('cli');
        if (progress) process.stderr.write('\n');
        const left = provider.keyringEpochs();
        out({ migrated: left.length === 0, from: 'local-keyring', to: provider.name, ...result, keyringEpochsBefore: before, keyringEpochsLeft: left });
        if (left.length > 0) {
          throw new ExitError(`KEK epochs ${left.join(', ')} are still in the local keyring (keys still reference them): run \`lethe kek migrate\` again`, 1);
        }
      } finally {
        await app.close();
      }
    });
  kek
    .command('list')
    .description('KEK epochs, their state and live keys (the running service with LETHE_URL set).')
    .action(async () => {
      if (viaService()) {
        out(await serviceCall(serviceClient('admin').json('GET', '/v1/admin/kek'), 1));
        return;
      }
      await withApp(async (app) => out({ epochs: await app.epochs.list() }));
    });
}

/** How long `log rekey` waits for the old key's destruction record to be durable before it reports it pending. */
const REKEY_ACK_WAIT_MS = 10_000;

/**
 * `log rekey --exclude`: the records-scope erasure of the entries, run in this process
 * until it finishes (a running service's worker may take steps too: claims keep one
 * runner per step). Exit 1 when it failed or did not finish in time, 3 when it ended
 * incomplete.
 */
async function forgetHere(app: App, request: ErasureRequest, timeoutMs: number) {
  const { erasureId } = await app.erasures.request(request, 'cli');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await app.erasures.drain();
    const view = await app.erasures.get(erasureId);
    const summary = {
      erasureId,
      status: view.status,
      scope: view.scope,
      entryIds: view.entryIds,
      residuals: view.residuals,
      certificateState: view.certificateState,
    };
    if (view.status === 'completed') return summary;
    if (view.status === 'incomplete') {
      process.exitCode = 3;
      return summary;
    }
    if (view.status === 'failed')
      throw new ExitError(
        `erasure ${erasureId} failed at ${view.steps.find((s) => s.status === 'failed')?.name ?? '?'}: see \`lethe erasure status ${erasureId}\``,
        1,
      );
    if (Date.now() > deadline)
      throw new ExitError(`erasure ${erasureId} is still ${view.status} after --timeout-seconds; it goes on (lethe erasure status ${erasureId})`, 1);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** `lethe log fsck | rekey | compact`. */
export function addLog(program: Command): void {
  const log = program.command('log').description('The episodic log in the object store.');
  log
    .command('fsck')
    .description('Check that the object store and the index agree (exit 1: indexed data missing).')
    .option('--repair', 'delete orphan segments older than the grace period (they hold nothing acknowledged)')
    .option('--grace-seconds <n>', 'orphans younger than this may belong to an append in flight', '3600')
    .option('--deep', 'also read every segment and check each indexed frame fits it')
    .action(async (opts: { repair?: boolean; graceSeconds: string; deep?: boolean }) => {
      const grace = Number(opts.graceSeconds);
      if (!Number.isSafeInteger(grace) || grace < 0) throw new ExitError('--grace-seconds must be a whole number of seconds', 2);
      const report = await withApp((app) => app.log.fsck({ repair: opts.repair ?? false, graceSeconds: grace, deep: opts.deep ?? false }));
      out(report);
      if (!report.ok) throw new ExitError(`${report.missing.length} indexed segment(s) missing, ${report.badFrames.length} misplaced frame(s)`, 1);
    });
  log
    .command('rekey')
    .description("Re-key a subject's entries and destroy the old key; --exclude forgets those entries.")
    .argument('<subject>', 'the subject id')
    .option('--exclude <entryId...>', 'entries to forget')
    .option('--reason <text>', 'recorded in the destruction ledger (without --exclude) or sealed in the erasure request', 'rekey')
    .option('--timeout-seconds <n>', 'with --exclude: how long to wait for the erasure to finish', '300')
    .action(async (subject: string, opts: { exclude?: string[]; reason: string; timeoutSeconds: string }) => {
      const timeout = Number(opts.timeoutSeconds);
      if (!Number.isSafeInteger(timeout) || timeout < 1) throw new ExitError('--timeout-seconds must be a whole number of seconds, at least 1', 2);
      if (opts.exclude?.length) {
        const parsed = ErasureRequestSchema.safeParse({ subject, entryIds: opts.exclude, reason: opts.reason });
        if (!parsed.success) throw new ExitError(`--exclude: ${parsed.error.issues[0]?.message ?? 'invalid'}`, 2);
        out(await withApp((app) => forgetHere(app, parsed.data, timeout * 1000)));
        return;
      }
      out(
        await withApp(async (app) => {
          const result = await app.log.rekeySubject(subject, { exclude: opts.exclude ?? [], actor: 'cli', reason: opts.reason });
          // the old key's destruction counts once its record is durable in the backup store's ledger
          const durable = await app.backups.awaitDurable([result.oldKeyId], REKEY_ACK_WAIT_MS);
          if (durable.pending.length > 0) {
            process.exitCode = 3;
            return {
              ...result,
              destruction: 'pending',
              pending: `the old key is unusable, but its destruction record is not yet durable in the backup store's ledger (${durable.error ?? 'still being written'}): a running service retries it; run \`lethe backup propagate\` once the store is back`,
            };
          }
          return { ...result, destruction: 'destroyed' };
        }),
      );
    });
  log
    .command('compact')
    .description('Rewrite segments without the frames of destroyed keys.')
    .action(async () => {
      out(await withApp((app) => app.log.compact()));
    });
}

/** `lethe audit verify`. */
export function addAudit(program: Command): void {
  const audit = program.command('audit').description('The MAC-chained audit log.');
  audit
    .command('verify')
    .description('Verify the audit chain (exit 1: broken).')
    .option('--anchor <seq:mac>', "a tip recorded earlier, row:mac-hex (default: the tip the backup bucket's ledger carries)")
    .option('--no-ledger-anchor', 'do not read the ledger chain for an anchor')
    .action(async (opts: { anchor?: string; ledgerAnchor: boolean }) => {
      const given = opts.anchor === undefined ? undefined : parseAnchor(opts.anchor);
      const { result, source } = await withApp(async (app) => {
        let anchor = given;
        let source: string = given ? '--anchor' : 'none';
        if (!anchor && opts.ledgerAnchor) {
          // the ledger chain in the backup bucket carries the audit tip of its newest record: a database rolled back behind it is caught
          try {
            const head = (await app.backups.ledgerChain()).auditHead;
            if (head) {
              anchor = { seq: head.seq, mac: Uint8Array.from(Buffer.from(head.mac, 'hex')) };
              source = 'ledger chain';
            }
          } catch (e) {
            process.stderr.write(`lethe: warning: the ledger chain could not be read for an anchor: ${(e as Error).message}\n`);
          }
        }
        return { result: await app.audit.verify(app.db.db, { anchor }), source };
      });
      out({ ...result, anchorSource: source });
      for (const warning of result.warnings) process.stderr.write(`lethe: warning: ${warning}\n`);
      if (!result.ok) throw new ExitError(`audit chain broken at row ${result.brokenAt}: ${result.problems.join('; ')}`, 1);
    });
}

/** `--anchor <seq>:<hex mac>`. */
function parseAnchor(value: string): { seq: number; mac: Uint8Array } {
  const m = /^(\d{1,15}):([0-9a-fA-F]{64})$/.exec(value.trim());
  if (!m) throw new ExitError("--anchor must be <row number>:<64 hex digits of that row's MAC>", 2);
  return { seq: Number(m[1]), mac: Uint8Array.from(Buffer.from(m[2]!, 'hex')) };
}

/** `lethe token new`. */
export function addToken(program: Command): void {
  const token = program.command('token').description('API tokens.');
  token
    .command('new')
    .description('A new token for a role, and its LETHE_TOKENS_FILE line.')
    .argument('<role>', `one of ${ROLES.join(', ')}`)
    .action(async (role: string) => {
      if (!(ROLES as readonly string[]).includes(role)) throw new ExitError(`role must be one of ${ROLES.join(', ')}`, 2);
      const { tokenDigest } = await import('../http/auth.js');
      const value = randomBytes(32).toString('base64url');
      out({ role: role as Role, token: value, tokensFileLine: `${role}=sha256:${tokenDigest(value).toString('hex')}` });
    });
}

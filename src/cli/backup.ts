/**
 * `lethe backup`: `run` and `list` ask the running service (backup role: LETHE_URL and
 * the backup token of LETHE_TOKENS), so the job never holds a key; `verify`, `restore` and
 * `propagate` open the app on this configuration.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { readNdjson } from '../client/http.js';
import { ExitError, out, serviceCall, serviceClient, withApp } from './shared.js';

/** `lethe backup run | list | verify | restore | repair-ledger | propagate`. */
export function addBackup(program: Command): void {
  const backup = program.command('backup').description('Backups in the backup bucket.');
  backup
    .command('run')
    .description('Take a backup through the running service (backup role).')
    .action(async () => {
      const result = await runBackupThroughService();
      // on a terminal the result as usual; otherwise the last of the JSON lines
      if (process.stderr.isTTY) out(result);
      else process.stdout.write(`${JSON.stringify(result)}\n`);
    });
  backup
    .command('list')
    .description('The backups taken (backup role).')
    .action(async () => {
      const client = serviceClient('backup');
      const backups: unknown[] = [];
      let cursor: string | null = null;
      do {
        const path = `/v1/backups?limit=1000${cursor ? `&cursor=${cursor}` : ''}`;
        const page: { backups: unknown[]; nextCursor: string | null } = await serviceCall(client.json('GET', path), 1);
        backups.push(...page.backups);
        cursor = page.nextCursor;
      } while (cursor);
      out({ backups });
    });
  backup
    .command('verify')
    .description('Check a backup: hashes, live keys decrypt, destroyed keys do not (exit 1: a failure).')
    .argument('<backupId>', 'the backup')
    .action(async (backupId: string) => {
      const result = await withApp((app) => app.backups.verify(backupId));
      out(result);
      if (!result.ok) {
        const bad = result.keys.filter((k) => (k.state === 'active' ? k.data !== 'decrypts' : k.data !== 'unreadable'));
        throw new ExitError(
          `backup ${backupId} failed verification: ${result.corrupted.length} corrupted object(s)${result.corrupted.map((c) => ` ${c.key} (${c.reason})`).join(',')}, ${bad.length} key(s) in the wrong state`,
          1,
        );
      }
    });
  backup
    .command('restore')
    .description("Restore a backup into this configuration's empty database and bucket, replaying the ledger first.")
    .argument('<backupId>', 'the backup')
    .option('--witness <file...>', 'erasure certificates or saved ledger heads (ledger/head.json): the ledger chain must reach the record each names')
    .option('--force-without-ledger', 'proceed when the ledger copy cannot be read or is cut short, and say which keys that may bring back')
    .action(async (backupId: string, opts: { forceWithoutLedger?: boolean; witness?: string[] }) => {
      const files = (opts.witness ?? []).map((file) => {
        try {
          return { file, bytes: new Uint8Array(readFileSync(file)) };
        } catch (e) {
          throw new ExitError(`cannot read witness ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, 2);
        }
      });
      const result = await withApp((app) =>
        app.backups.restore(backupId, {
          force: opts.forceWithoutLedger ?? false,
          actor: 'cli',
          witnesses: files.flatMap((f) => app.backups.parseWitness(f.file, f.bytes)),
        }),
      );
      for (const w of result.warnings) process.stderr.write(`lethe: WARNING: ${w}\n`);
      out(result);
    });
  backup
    .command('repair-ledger')
    .description('Put back ledger records the backup bucket lost (exit 1: still cut).')
    .action(async () => {
      const result = await withApp(async (app) => ({ putBack: await app.backups.repairLedger(), cut: await app.backups.checkAnchor() }));
      out({ putBack: result.putBack, anchored: result.cut === undefined, ...(result.cut ? { problem: result.cut } : {}) });
      if (result.cut) throw new ExitError(`the ledger chain is still cut: ${result.cut}`, 1);
    });
  backup
    .command('propagate')
    .description("Write pending key destructions into the backup bucket's ledger.")
    .action(async () => {
      out(await withApp((app) => app.backups.propagate()));
    });
}

/**
 * POST /v1/backups with progress: a bar on stderr when it is a terminal, the
 * progress JSON lines on stdout otherwise. Answers the result.
 */
async function runBackupThroughService(): Promise<unknown> {
  const res = await serviceCall(serviceClient('backup').request('POST', '/v1/backups', { accept: 'application/x-ndjson' }), 1);
  const tty = process.stderr.isTTY === true;
  let result: unknown;
  type Line = { progress?: { phase: string; done: number; copied: number; reused: number }; error?: { code: string; detail: string } };
  for await (const msg of readNdjson<Line>(res)) {
    if (msg.error) throw new ExitError(`the backup failed: ${msg.error.code}: ${msg.error.detail}`, 1);
    if (msg.progress) {
      const p = msg.progress;
      if (tty) {
        const filled = Math.min(30, Math.floor(Math.log2(p.done + 1) * 2));
        process.stderr.write(`\r[${'#'.repeat(filled)}${' '.repeat(30 - filled)}] ${p.phase}: ${p.done} (copied ${p.copied}, already there ${p.reused})  `);
      } else process.stdout.write(`${JSON.stringify(msg)}\n`);
      continue;
    }
    result = msg;
  }
  if (tty) process.stderr.write('\n');
  if (!result) throw new ExitError('the service closed the backup stream without a result', 1);
  return result;
}

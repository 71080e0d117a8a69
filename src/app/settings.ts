/** What the composition root derives from the configuration: fault injection, the ledger's retention, the object stores, the ledger lock's check. */
import type { BackupService } from '../backups/service.js';
import type { Config } from '../config/index.js';
import { LetheError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import { FsObjectStore } from '../storage/fs.js';
import { S3ObjectStore } from '../storage/s3.js';
import type { ObjectStore } from '../storage/store.js';

/**
 * Test fault injection: LETHE_FAILPOINT=<name> kills this process (SIGKILL, no
 * clean-up) when the erasure engine, or the ledger chain's writer, reaches that
 * point. Ignored in production.
 */
export function failpointFor(config: Config): ((name: string) => void) | undefined {
  const wanted = process.env.LETHE_FAILPOINT;
  if (!wanted || config.production) return undefined;
  return (name) => {
    if (name === wanted) process.kill(process.pid, 'SIGKILL');
  };
}

/**
 * The ledger chain's retention: LETHE_LEDGER_LOCK, never weaker than the backup
 * bucket's own default retention (a compliance default cannot be lowered to
 * governance on one object, nor shortened).
 */
export function ledgerRetention(config: Config): Config['ledgerLock'] {
  const ledger = config.ledgerLock;
  const bucket = config.backupObjectLock;
  if (!ledger || !bucket) return ledger;
  return { mode: bucket.mode === 'compliance' ? 'compliance' : ledger.mode, days: Math.max(ledger.days, bucket.days) };
}

/**
 * A serving replica probes whether its own credential can remove retained ledger
 * versions (a canary: src/storage/s3.ts): if so, Object Lock does not stop whoever holds
 * that credential from cutting the chain. Said at start and on /readyz; in production
 * the service refuses to start unless LETHE_ACCEPT_BYPASSABLE_LEDGER_LOCK=true.
 */
export async function refuseBypassableLedgerLock(backups: BackupService, config: Config, logger: Logger): Promise<void> {
  if ((await backups.probeLedgerLock()) !== 'bypassable') return;
  const message =
    `lethe's own credential for the backup bucket can remove versions of the ledger chain retained under Object Lock (${config.ledgerLock?.mode} mode: the governance bypass, or version deletes): ` +
    'whoever holds it can cut the chain. Use compliance mode (LETHE_LEDGER_LOCK=compliance) or a least-privilege credential (infra/minio/lethe-policy.json)';
  if (config.production && !config.acceptBypassableLedgerLock) {
    throw new LetheError('validation_failed', `${message}; or accept this with LETHE_ACCEPT_BYPASSABLE_LEDGER_LOCK=true.`);
  }
  logger.warn(`LEDGER LOCK BYPASSABLE: ${message}.`);
}

export function objectStore(config: Config, bucket: string): ObjectStore {
  const timeoutMs = config.storeTimeoutMs;
  return config.s3 ? new S3ObjectStore({ ...config.s3, bucket, timeoutMs }) : new FsObjectStore(`${config.dataDir}/objects`, bucket, { timeoutMs });
}

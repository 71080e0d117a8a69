/**
 * Preparing the stores before the app serves: both buckets (versioned; the backup
 * bucket lockable for the ledger chain), the schema migrated, an active epoch, the
 * sealed rows of an older comparison form re-indexed, and what the operator must
 * hear about (an unlocked ledger, keyring epochs left behind).
 */
import type { Config } from '../config/index.js';
import type { Db } from '../db/client.js';
import { ExternalKeyProvider } from '../keyprovider/external.js';
import type { KeyProvider } from '../keyprovider/provider.js';
import type { Logger } from '../observability/logger.js';
import type { ReindexResult } from './reindex.js';
import type { Wired } from './wire.js';

export async function prepareStores(
  p: { config: Config; db: Db; provider: KeyProvider; logger: Logger; migrating: boolean; reindex: () => Promise<ReindexResult> },
  w: Pick<Wired, 'objects' | 'backupObjects' | 'statistics' | 'backups' | 'epochs' | 'vectors'>,
): Promise<ReindexResult | undefined> {
  const { config, logger, provider } = p;
  await w.objects.ensureBucket({ versioned: true });
  await w.backupObjects.ensureBucket({
    versioned: true,
    // a new backup bucket is created with Object Lock, so the ledger chain can be retained
    ...(config.ledgerLock && w.backupObjects.kind === 's3' ? { lockable: true } : {}),
    ...(config.backupObjectLock ? { objectLock: config.backupObjectLock } : {}),
  });
  if (config.backupObjectLock && w.backupObjects.kind === 'fs') {
    logger.warn('LETHE_BACKUP_OBJECT_LOCK is set but backups go to a local folder, which cannot enforce Object Lock');
  }
  if (p.migrating) await p.db.migrate();
  // the embedded database runs no autovacuum: its planner statistics are kept here (src/db/statistics.ts)
  if (w.statistics) await w.statistics.pass();
  const ledger = await w.backups.ledgerStatus().catch(() => undefined);
  if (ledger && !ledger.locked) {
    const message =
      `THE LEDGER CHAIN IS NOT UNDER OBJECT LOCK: ${ledger.why}. Anyone who can write the backup bucket can remove destruction records for good: ` +
      'a restore refuses a gap it can see, but a cut tail with an older head put back (on a folder, or where old versions can be deleted) is caught only when a later backup names the removed records.';
    if (config.production) logger.error(message);
    else logger.info(message);
  }
  const epoch = await w.epochs.ensureActive('system');
  // rows shingled and embedded with an older comparison form are computed again from their text, before the indexes load them
  let reindexed: ReindexResult | undefined;
  if (p.migrating) {
    reindexed = await p.reindex();
    if (reindexed.stale > 0) logger.info({ ...reindexed }, 're-indexed sealed rows of an older comparison form');
    if (reindexed.left > 0)
      logger.warn({ left: reindexed.left }, 'some sealed rows of an older comparison form could not be re-indexed (their text is not readable now)');
  } else {
    const stale = await w.vectors.countStale();
    if (stale > 0) {
      logger.warn(
        { stale },
        'sealed rows of an older comparison form wait for a re-index: disguised copies in them are not found until `lethe reindex` (or `lethe migrate`) runs',
      );
    }
  }
  logger.info({ epoch, database: p.db.kind, provider: provider.name, objectStore: w.objects.kind }, 'vault ready');
  if (provider instanceof ExternalKeyProvider && provider.keyringEpochs().length > 0) {
    logger.warn(
      { keyringEpochs: provider.keyringEpochs() },
      `KEK epochs ${provider.keyringEpochs().join(', ')} are still in the local keyring: run \`lethe kek migrate\` to re-wrap their keys under a new epoch in ${provider.name} and destroy them`,
    );
  }
  return reindexed;
}

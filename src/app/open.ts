/**
 * The composition root: root key → key provider → system subkeys → database
 * (migrated) → active epoch → services (wire.ts) → subscribers → replica events
 * (listen.ts) → workers. `lethe serve`, the CLI and the tests all start here;
 * nothing below imports it.
 */
import { checkPrivateDir } from '../config/files.js';
import { type Config, ConfigError } from '../config/index.js';
import { zeroize } from '../crypto/index.js';
import { type Db, openDb, reachDatabase } from '../db/client.js';
import { pendingMigrations } from '../db/migrations.js';
import { LetheError, MisconfiguredError } from '../errors.js';
import { openKeyProvider } from '../keyprovider/open.js';
import type { KeyProvider } from '../keyprovider/provider.js';
import { loadRootKey } from '../keyprovider/root-key.js';
import type { Logger } from '../observability/logger.js';
import { createMetrics } from '../observability/metrics.js';
import { ReplicaCalls } from '../vault/replica-calls.js';
import { ShardLeases } from '../vault/shards.js';
import type { App, OpenAppOptions } from './app.js';
import { type Listening, listen } from './listen.js';
import { prepareStores } from './prepare.js';
import { reindex, type ReindexResult } from './reindex.js';
import type { ReplicaPresence } from './replica.js';
import { failpointFor, refuseBypassableLedgerLock } from './settings.js';
import { ShardKeeper } from './shard-keeper.js';
import { subscribe } from './subscribers.js';
import { type Wired, wireServices } from './wire.js';

export type { App, OpenAppOptions } from './app.js';

/** A database whose schema is behind drizzle/ is refused before anything is written to it (LETHE_AUTO_MIGRATE off). */
async function refuseBehind(db: Db): Promise<void> {
  const behind = await pendingMigrations(db.db);
  if (behind > 0) {
    throw new LetheError(
      'unavailable',
      `the database schema is ${behind} migration${behind === 1 ? '' : 's'} behind: run \`lethe migrate\` (or set LETHE_AUTO_MIGRATE=true)`,
    );
  }
}

export async function openApp(config: Config, options: OpenAppOptions): Promise<App> {
  const { logger } = options;
  const metrics = options.metrics ?? createMetrics();
  // the data directory is private to the service: refused when others may write into it
  checkPrivateDir(config.dataDir, 'the data directory (LETHE_DATA_DIR)');
  const root = loadRootKey(config, (message) => logger.warn(message));
  const failpoint = failpointFor(config);
  let provider: KeyProvider | undefined;
  let db: Db | undefined;
  let presence: ReplicaPresence | undefined;
  let shards: Sharded | undefined;
  try {
    provider = await openKeyProvider(config, root.key);
    db = await openDb({ databaseUrl: config.databaseUrl, dataDir: `${config.dataDir}/pgdata`, poolSize: config.dbPoolSize });
    if (config.databaseUrl) await reachDatabase(db, config.databaseUrl);
    const migrating = options.migrate ?? true;
    if (!migrating) await refuseBehind(db);
    const w = await wireServices({ config, options, provider, db, metrics, failpoint, presence: () => presence });
    const { keys, destructions, vectors, log, artifacts, backups, erasures, cache, events } = w;
    const parts = { keys, destructions, vectors, log, backups, erasures, cache, provider, metrics, logger, events };
    subscribe(parts);
    const runReindex = () => reindex({ vectors, log, artifacts });
    const prepared = options.prepare ?? true;
    const reindexed = prepared ? await prepareStores({ config, db, provider, logger, migrating, reindex: runReindex }, w) : undefined;
    const listening = options.listen ?? true;
    if (listening && prepared) await refuseBypassableLedgerLock(backups, config, logger);
    let listened: Listening | undefined;
    if (listening) listened = await listen({ config, db, logger, parts, onPresence: (p) => (presence = p) }, w);
    if (options.searchIndex ?? listening) {
      const started = performance.now();
      const rebuilt = await vectors.rebuild();
      logger.info({ ...rebuilt, ms: Math.round(performance.now() - started) }, 'search index rebuilt');
    }
    // sharded: the index fills as this replica takes shards
    if (listening && config.indexShards > 1) shards = await startShards(config, db, provider, w, logger);
    if (options.erasureWorker ?? listening) erasures.start();
    if (options.indexWorker ?? (listening && config.indexer)) log.indexer.start();
    return assemble(config, { db, provider, metrics, logger, presence, reindexed, runReindex, listened, shards }, w);
  } catch (e) {
    await shards?.keeper.stop().catch(() => {});
    shards?.calls.close();
    await presence?.stop().catch(() => {});
    await db?.close().catch(() => {});
    if (provider) await provider.close();
    else zeroize(root.key);
    // what a configured value explains (a web page at S3_ENDPOINT, no such database) stops the start as a configuration error
    if (e instanceof MisconfiguredError) throw new ConfigError([{ variable: e.variable, message: e.detail }]);
    throw e;
  }
}

/** The app as callers hold it, and its close: workers first, then listeners, then keys and connections. */
function assemble(
  config: Config,
  o: {
    db: Db;
    provider: KeyProvider;
    metrics: App['metrics'];
    logger: App['logger'];
    presence: ReplicaPresence | undefined;
    reindexed: ReindexResult | undefined;
    runReindex: () => Promise<ReindexResult>;
    listened: Listening | undefined;
    shards: Sharded | undefined;
  },
  w: Wired,
): App {
  let closed = false;
  return {
    config,
    db: o.db,
    provider: o.provider,
    objects: w.objects,
    keys: w.keys,
    versionKeys: w.versionKeys,
    destructions: w.destructions,
    epochs: w.epochs,
    audit: w.audit,
    cache: w.cache,
    fences: w.fences,
    events: w.events,
    vectors: w.vectors,
    replica: o.presence,
    shards: o.shards?.keeper,
    replicaCalls: o.shards?.calls,
    reindexed: o.reindexed,
    reindex: o.runReindex,
    log: w.log,
    artifacts: w.artifacts,
    exposures: w.exposures,
    search: w.search,
    backups: w.backups,
    erasures: w.erasures,
    reportLinks: w.reportLinks,
    principals: w.principals,
    certificateKeys: w.certificateKeys,
    metrics: o.metrics,
    logger: o.logger,
    async close() {
      // idempotent: a second close (shutdown racing a test's cleanup) does nothing
      if (closed) return;
      closed = true;
      o.listened?.quiet();
      await w.statistics?.stop();
      w.backups.close();
      await w.erasures.stop();
      await w.log.indexer.stop();
      await o.shards?.keeper.stop();
      o.shards?.calls.close();
      await o.listened?.stop();
      w.cache.clear();
      w.vectors.index.clear();
      w.fences.close();
      await w.vectors.close();
      w.hasher.close();
      w.audit.close();
      w.ledgerMac.destroy();
      w.items.destroy();
      w.reportLinks.close();
      w.principals.close();
      await o.db.close();
      await o.provider.close();
    },
  };
}

/** A sharded replica's keeper of its shard leases, and the key its calls to and from peers are signed with. */
interface Sharded {
  readonly keeper: ShardKeeper;
  readonly calls: ReplicaCalls;
}

async function startShards(config: Config, db: Db, provider: KeyProvider, w: Wired, logger: Logger): Promise<Sharded> {
  const calls = new ReplicaCalls(await provider.deriveSystemKey('replica-call'));
  const url = config.replicaUrl!;
  const leases = new ShardLeases(db.db, { shards: config.indexShards, replicaId: w.erasures.replica, url, urlMac: calls.addressMac(w.erasures.replica, url) });
  const keeper = new ShardKeeper({ leases, vectors: w.vectors, calls, logger });
  w.search.useShards(keeper);
  w.erasures.useShards(keeper);
  try {
    await keeper.start();
  } catch (e) {
    calls.close();
    throw e;
  }
  return { keeper, calls };
}

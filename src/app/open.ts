/**
 * The composition root: root key → key provider → system subkeys → database
 * (migrated) → active epoch → services → subscribers → replica events → workers.
 * `lethe serve`, the CLI and the tests all start here; nothing below imports it.
 */
import { checkPrivateDir } from '../config/files.js';
import type { Config } from '../config/index.js';
import { KeyedHasher, zeroize } from '../crypto/index.js';
import { ArtifactService } from '../artifacts/service.js';
import { TrainingExposures } from '../artifacts/exposures.js';
import { ChatRegenerator, ExtractiveRegenerator, type Regenerator } from '../artifacts/regenerator.js';
import { BackupService } from '../backups/service.js';
import type { Services } from '../http/services.js';
import { type Db, openDb } from '../db/client.js';
import { pendingMigrations } from '../db/migrations.js';
import { StatisticsKeeper } from '../db/statistics.js';
import { LetheError } from '../errors.js';
import { ErasureEngine } from '../erasure/engine.js';
import { ReportLinks } from '../erasure/report-link.js';
import { Principals } from '../vault/principals.js';
import { ExternalKeyProvider } from '../keyprovider/external.js';
import { openKeyProvider } from '../keyprovider/open.js';
import type { KeyProvider } from '../keyprovider/provider.js';
import { loadRootKey } from '../keyprovider/root-key.js';
import type { IndexerOptions } from '../log/indexer.js';
import { LogService } from '../log/service.js';
import type { Logger } from '../observability/logger.js';
import { createMetrics, type Metrics } from '../observability/metrics.js';
import { Search } from '../search/service.js';
import { FsObjectStore } from '../storage/fs.js';
import { S3ObjectStore } from '../storage/s3.js';
import type { ObjectStore } from '../storage/store.js';
import { AuditLog } from '../vault/audit.js';
import { CertificateKeys } from '../vault/certificate-keys.js';
import { DekCache } from '../vault/cache.js';
import { KeyDestructions } from '../vault/destructions.js';
import { EpochService } from '../vault/epochs.js';
import { ReplicaEvents } from '../vault/events.js';
import { ReadFences } from '../vault/fences.js';
import { KeyService } from '../vault/keys.js';
import { SubjectHasher } from '../vault/subjects.js';
import { VersionKeys } from '../vault/version-keys.js';
import { type Embedder, HashingEmbedder } from '../vectors/embedder.js';
import { OpenAiEmbedder } from '../vectors/openai-embedder.js';
import { Vectors } from '../vectors/service.js';
import { ShingleHasher } from '../vectors/shingles.js';
import { DestructionCursor } from '../vault/catch-up.js';
import { ReplicaHeartbeats } from '../vault/replicas.js';
import { ReplicaPresence } from './replica.js';
import { reindex, type ReindexResult } from './reindex.js';
import { applyCaughtUp, handleReplicaEvents, subscribe } from './subscribers.js';

/** Everything the app holds: what the routes call (Services) and what only the app and the CLI reach. */
export interface App extends Services {
  readonly db: Db;
  readonly provider: KeyProvider;
  /** Where ciphertext objects live (MinIO / S3, or the local filesystem). */
  readonly objects: ObjectStore;
  readonly versionKeys: VersionKeys;
  readonly destructions: KeyDestructions;
  readonly audit: AuditLog;
  readonly cache: DekCache;
  readonly events: ReplicaEvents;
  readonly vectors: Vectors;
  /** This replica's heartbeat and destruction cursor (absent when it does not listen: a CLI command). */
  readonly replica: ReplicaPresence | undefined;
  /** What the start-up re-index did (src/app/reindex.ts): undefined when this app did not migrate. */
  readonly reindexed: ReindexResult | undefined;
  /** Re-indexes the sealed rows of an older comparison form now (`lethe reindex`). */
  reindex(): Promise<ReindexResult>;
  close(): Promise<void>;
}

export interface OpenAppOptions {
  readonly logger: Logger;
  readonly metrics?: Metrics;
  /** Apply migrations and make sure an active epoch exists (default true). */
  readonly prepare?: boolean;
  /**
   * Apply pending migrations (default true). False: refuse to open a database whose
   * schema is behind drizzle/, before anything is written to it (`lethe serve` with
   * LETHE_AUTO_MIGRATE off).
   */
  readonly migrate?: boolean;
  /** Listen for other replicas' events (default true). */
  readonly listen?: boolean;
  /** Rebuild the in-memory search index by decrypting the stored embeddings (default: as `listen`). */
  readonly searchIndex?: boolean;
  /** Replace the configured embedder or regenerator (tests). */
  readonly embedder?: Embedder;
  readonly regenerator?: Regenerator;
  readonly onRewrapBatch?: (rewrappedSoFar: number) => void | Promise<void>;
  /** Claim and run erasures in the background (default: as `listen`). */
  readonly erasureWorker?: boolean;
  /** Drain the indexing queue (writer-registered entries made searchable) in the background (default: as `listen`, unless LETHE_INDEXER=false). */
  readonly indexWorker?: boolean;
  /** The indexer's batch size, claim and poll (tests; src/log/indexer.ts has the defaults). */
  readonly indexing?: IndexerOptions;
  /** How long the erasure probe waits for entries queued for indexing before it started (tests; src/erasure/steps/probe.ts has the defaults). */
  readonly probeQueueWait?: { readonly waitMs: number; readonly parks: number };
  /** The clock epochs are retired by and compared against (tests that let a KMS deletion window pass). */
  readonly clock?: () => Date;
}

/**
 * Test fault injection: LETHE_FAILPOINT=<name> kills this process (SIGKILL, no
 * clean-up) when the erasure engine, or the ledger chain's writer, reaches that
 * point. Ignored in production.
 */
function failpointFor(config: Config): ((name: string) => void) | undefined {
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
function ledgerRetention(config: Config): Config['ledgerLock'] {
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
async function refuseBypassableLedgerLock(backups: BackupService, config: Config, logger: Logger): Promise<void> {
  if ((await backups.probeLedgerLock()) !== 'bypassable') return;
  const message =
    `lethe's own credential for the backup bucket can remove versions of the ledger chain retained under Object Lock (${config.ledgerLock?.mode} mode: the governance bypass, or version deletes): ` +
    'whoever holds it can cut the chain. Use compliance mode (LETHE_LEDGER_LOCK=compliance) or a least-privilege credential (infra/minio/lethe-policy.json)';
  if (config.production && !config.acceptBypassableLedgerLock) {
    throw new LetheError('validation_failed', `${message}; or accept this with LETHE_ACCEPT_BYPASSABLE_LEDGER_LOCK=true.`);
  }
  logger.warn(`LEDGER LOCK BYPASSABLE: ${message}.`);
}

function objectStore(config: Config, bucket: string): ObjectStore {
  const timeoutMs = config.storeTimeoutMs;
  return config.s3 ? new S3ObjectStore({ ...config.s3, bucket, timeoutMs }) : new FsObjectStore(`${config.dataDir}/objects`, bucket, { timeoutMs });
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
  try {
    provider = await openKeyProvider(config, root.key);
    const hasher = new SubjectHasher(await provider.deriveSystemKey('subject-hash'));
    const audit = new AuditLog(await provider.deriveSystemKey('audit-chain'), await provider.deriveSystemKey('audit-head'));
    db = await openDb({ databaseUrl: config.databaseUrl, dataDir: `${config.dataDir}/pgdata`, poolSize: config.dbPoolSize });
    const migrating = options.migrate ?? true;
    if (!migrating) {
      const behind = await pendingMigrations(db.db);
      if (behind > 0) {
        throw new LetheError(
          'unavailable',
          `the database schema is ${behind} migration${behind === 1 ? '' : 's'} behind: run \`lethe migrate\` (or set LETHE_AUTO_MIGRATE=true)`,
        );
      }
    }
    const database = db.db;
    const statistics = db.kind === 'pglite' ? new StatisticsKeeper(database, (fields, message) => logger.info(fields, message)) : undefined;
    const cache = new DekCache({ maxEntries: config.dekCacheMaxEntries, maxAgeMs: config.dekCacheTtlSeconds * 1000 });
    const destructions = new KeyDestructions({ db: database, audit });
    const keys = new KeyService({ db: database, provider, hasher, audit, cache, destructions, metrics, leaseTtlSeconds: config.leaseTtlSeconds });
    const versionKeys = new VersionKeys({ db: database, provider, destructions });
    const epochs = new EpochService({
      db: database,
      provider,
      audit,
      metrics,
      batchSize: config.rewrapBatchSize,
      ...(options.clock ? { now: options.clock } : {}),
      onRevivedEpoch: (epoch, revived, goneAt) =>
        logger.warn(
          { epoch, provider: provider!.name, goneAt: goneAt?.toISOString() ?? null },
          revived
            ? `retired KEK epoch ${epoch} exists again in the key provider (its deletion was cancelled): destroyed again; certificates that wait on it stay provisional`
            : `retired KEK epoch ${epoch} is not gone at its date: certificates that wait on it stay provisional`,
        ),
      ...(options.onRewrapBatch ? { onBatch: options.onRewrapBatch } : {}),
    });
    const fences = new ReadFences(await provider.deriveSystemKey('read-fence'));
    const events = new ReplicaEvents(logger);
    const objects = objectStore(config, config.bucket);
    const backupObjects = objectStore(config, config.backupBucket);
    const embedder: Embedder =
      options.embedder ??
      (config.embeddings ? new OpenAiEmbedder({ ...config.embeddings, dimensions: config.embeddingDimensions }) : new HashingEmbedder(config.embeddingDimensions));
    const regenerator: Regenerator = options.regenerator ?? (config.regenerator ? new ChatRegenerator(config.regenerator) : new ExtractiveRegenerator());
    const shingleKey = await provider.deriveSystemKey('shingle-index');
    const vectors = new Vectors({ db: database, embedder, keys, versionKeys, shingles: new ShingleHasher(shingleKey), logger, metrics });
    zeroize(shingleKey);
    const log = new LogService({ db: database, keys, objects, vectors, logger, metrics }, { ...(failpoint ? { failpoint } : {}), ...options.indexing });
    const artifacts = new ArtifactService({ db: database, keys, versionKeys, destructions, objects, vectors, log, fences, regenerator, audit, metrics, logger });
    const exposures = new TrainingExposures({ db: database, audit });
    const search = new Search({ vectors, log, artifacts, fences, keys });
    const ledgerKey = await provider.deriveSystemKey('ledger-chain');
    const ledgerMac = new KeyedHasher(ledgerKey);
    zeroize(ledgerKey);
    const backups = new BackupService({
      db: database,
      keys,
      versionKeys,
      artifacts,
      provider,
      audit,
      objects,
      backupObjects,
      logger,
      destructions,
      ledgerMac,
      ledgerLock: ledgerRetention(config),
      // the head mirrored where the backup bucket's credential cannot reach: a restore's witness (src/backups/anchor.ts)
      witness: config.ledgerWitnessDir ? new FsObjectStore(config.ledgerWitnessDir, config.backupBucket, { timeoutMs: config.storeTimeoutMs }) : undefined,
      onLedgerCut: (cut) => metrics.ledgerChainCut.set(cut ? 1 : 0),
      ...(failpoint ? { failpoint } : {}),
    });
    // certificates are signed by the key provider's own signing key (rotatable; retired keys stay listed)
    const certificateKeys = new CertificateKeys({ db: database, provider, audit });
    const heartbeats = new ReplicaHeartbeats(database);
    const erasures = new ErasureEngine({
      db: database,
      // which replicas applied a destruction: this one (caught up at once) and every other with a heartbeat row
      replicas: { acknowledge: (seq) => (presence ? presence.acknowledge(seq) : heartbeats.acknowledgement(seq)) },
      keys,
      destructions,
      log,
      artifacts,
      versionKeys,
      vectors,
      backups,
      exposures,
      epochs,
      audit,
      logger,
      signer: certificateKeys,
      probeThreshold: config.probeThreshold,
      probeSimilarity: config.probeSimilarity,
      claimSeconds: config.erasureClaimSeconds,
      pollMs: config.erasurePollMs,
      concurrency: config.erasureConcurrency,
      stepDeadlineMs: config.erasureStepDeadlineSeconds * 1000,
      retry: config.erasureRetry,
      ...(options.probeQueueWait ? { probeQueueWait: options.probeQueueWait } : {}),
      eventsFallbackMs: config.sseFallbackPollMs,
      metrics,
      ...(failpoint ? { failpoint } : {}),
    });
    // shareable report links: HMAC under a subkey used for nothing else (src/erasure/report-link.ts)
    const reportLinkKey = await provider.deriveSystemKey('report-link');
    const reportLinks = new ReportLinks(reportLinkKey, { db: database, audit, exists: (id) => erasures.status(id) });
    zeroize(reportLinkKey);
    // who presented a token, named without the token (src/vault/principals.ts)
    const principalKey = await provider.deriveSystemKey('principal');
    const principals = new Principals(principalKey);
    zeroize(principalKey);
    const parts = { keys, destructions, vectors, log, backups, erasures, cache, provider, metrics, logger, events };
    subscribe(parts);
    const runReindex = () => reindex({ vectors, log, artifacts });
    let reindexed: ReindexResult | undefined;
    if (options.prepare ?? true) {
      await objects.ensureBucket({ versioned: true });
      await backupObjects.ensureBucket({
        versioned: true,
        // a new backup bucket is created with Object Lock, so the ledger chain can be retained
        ...(config.ledgerLock && backupObjects.kind === 's3' ? { lockable: true } : {}),
        ...(config.backupObjectLock ? { objectLock: config.backupObjectLock } : {}),
      });
      if (config.backupObjectLock && backupObjects.kind === 'fs') {
        logger.warn('LETHE_BACKUP_OBJECT_LOCK is set but backups go to a local folder, which cannot enforce Object Lock');
      }
      if (migrating) await db.migrate();
      // the embedded database runs no autovacuum: its planner statistics are kept here (src/db/statistics.ts)
      if (statistics) await statistics.pass();
      const ledger = await backups.ledgerStatus().catch(() => undefined);
      if (ledger && !ledger.locked) {
        const message =
          `THE LEDGER CHAIN IS NOT UNDER OBJECT LOCK: ${ledger.why}. Anyone who can write the backup bucket can remove destruction records for good: ` +
          'a restore refuses a gap it can see, but a cut tail with an older head put back (on a folder, or where old versions can be deleted) is caught only when a later backup names the removed records.';
        if (config.production) logger.error(message);
        else logger.info(message);
      }
      const epoch = await epochs.ensureActive('system');
      // rows shingled and embedded with an older comparison form are computed again from their text, before the indexes load them
      if (migrating) {
        reindexed = await runReindex();
        if (reindexed.stale > 0) logger.info({ ...reindexed }, 're-indexed sealed rows of an older comparison form');
        if (reindexed.left > 0) logger.warn({ left: reindexed.left }, 'some sealed rows of an older comparison form could not be re-indexed (their text is not readable now)');
      } else {
        const stale = await vectors.countStale();
        if (stale > 0) {
          logger.warn({ stale }, 'sealed rows of an older comparison form wait for a re-index: disguised copies in them are not found until `lethe reindex` (or `lethe migrate`) runs');
        }
      }
      logger.info({ epoch, database: db.kind, provider: provider.name, objectStore: objects.kind }, 'vault ready');
      if (provider instanceof ExternalKeyProvider && provider.keyringEpochs().length > 0) {
        logger.warn(
          { keyringEpochs: provider.keyringEpochs() },
          `KEK epochs ${provider.keyringEpochs().join(', ')} are still in the local keyring: run \`lethe kek migrate\` to re-wrap their keys under a new epoch in ${provider.name} and destroy them`,
        );
      }
    }
    const listening = options.listen ?? true;
    if (listening && (options.prepare ?? true)) await refuseBypassableLedgerLock(backups, config, logger);
    let unlisten: (() => Promise<void>) | undefined;
    if (listening) {
      // the cursor starts at the ledger's end before listening and before the rebuild: what is destroyed later is read past it
      const cursor = new DestructionCursor({ db: database, apply: applyCaughtUp(parts) });
      await cursor.start();
      const replica = new ReplicaPresence({
        replicaId: erasures.replica,
        cursor,
        heartbeats,
        listener: () => events.listener,
        rebuilding: () => vectors.rebuilding,
        logger,
      });
      presence = replica;
      handleReplicaEvents(parts, () => replica.catchUp());
      unlisten = await events.listen(db);
      // heartbeats from here on: the start-up rebuild below shows as `index: rebuilding`
      replica.start();
    }
    // destructions this replica did not see through its own event (another replica
    // crashed mid-propagation, a key destroyed by the CLI) reach the manifests here
    let catchUp: NodeJS.Timeout | undefined;
    if (listening) statistics?.start();
    if (listening) {
      backups.propagateSoon();
      catchUp = setInterval(() => backups.propagateSoon(), config.backupPropagateSeconds * 1000);
      catchUp.unref();
      await backups.startAnchorChecks(config.ledgerCheckSeconds * 1000);
    }
    if (options.searchIndex ?? listening) {
      const started = performance.now();
      const rebuilt = await vectors.rebuild();
      logger.info({ ...rebuilt, ms: Math.round(performance.now() - started) }, 'search index rebuilt');
    }
    if (options.erasureWorker ?? listening) erasures.start();
    if (options.indexWorker ?? (listening && config.indexer)) log.indexer.start();
    const openedDb = db;
    const openedProvider = provider;
    let closed = false;
    return {
      config,
      db,
      provider,
      objects,
      keys,
      versionKeys,
      destructions,
      epochs,
      audit,
      cache,
      fences,
      events,
      vectors,
      replica: presence,
      reindexed,
      reindex: runReindex,
      log,
      artifacts,
      exposures,
      search,
      backups,
      erasures,
      reportLinks,
      principals,
      certificateKeys,
      metrics,
      logger,
      async close() {
        // idempotent: a second close (shutdown racing a test's cleanup) does nothing
        if (closed) return;
        closed = true;
        clearInterval(catchUp);
        await statistics?.stop();
        backups.close();
        await erasures.stop();
        await log.indexer.stop();
        await presence?.stop();
        await unlisten?.().catch(() => {});
        cache.clear();
        vectors.index.clear();
        fences.close();
        vectors.close();
        hasher.close();
        audit.close();
        ledgerMac.destroy();
        reportLinks.close();
        principals.close();
        await openedDb.close();
        await openedProvider.close();
      },
    };
  } catch (e) {
    await presence?.stop().catch(() => {});
    await db?.close().catch(() => {});
    if (provider) await provider.close();
    else zeroize(root.key);
    throw e;
  }
}


/**
 * The services, built in dependency order on an open key provider and database:
 * keys → vectors → log → artifacts → search → backups → erasures, and the subkeyed
 * helpers (report links, principals). Nothing here touches the network or the store.
 */
import { ArtifactService } from '../artifacts/service.js';
import { TrainingExposures } from '../artifacts/exposures.js';
import { ChatRegenerator, ExtractiveRegenerator, type Regenerator } from '../artifacts/regenerator.js';
import { BackupService } from '../backups/service.js';
import type { Config } from '../config/index.js';
import { KeyedHasher, zeroize } from '../crypto/index.js';
import type { Db } from '../db/client.js';
import { StatisticsKeeper } from '../db/statistics.js';
import { ErasureEngine } from '../erasure/engine.js';
import { artifactsErasable } from '../artifacts/erasable.js';
import { backupsErasable } from '../backups/erasable.js';
import { logErasable } from '../log/erasable.js';
import { keyTableErasable } from '../vault/erasable.js';
import { vectorIndexErasable } from '../vectors/erasable.js';
import { ReportLinks } from '../erasure/report-link.js';
import type { KeyProvider } from '../keyprovider/provider.js';
import { LogService } from '../log/service.js';
import type { Metrics } from '../observability/metrics.js';
import { Search } from '../search/service.js';
import { FsObjectStore } from '../storage/fs.js';
import { AuditLog } from '../vault/audit.js';
import { DekCache } from '../vault/cache.js';
import { CertificateKeys } from '../vault/certificate-keys.js';
import { KeyDestructions } from '../vault/destructions.js';
import { EpochService } from '../vault/epochs.js';
import { ReplicaEvents } from '../vault/events.js';
import { ReadFences } from '../vault/fences.js';
import { KeyService } from '../vault/keys.js';
import { Principals } from '../vault/principals.js';
import { ReplicaHeartbeats } from '../vault/replicas.js';
import { SubjectHasher } from '../vault/subjects.js';
import { VersionKeys } from '../vault/version-keys.js';
import { BuiltInEmbedder } from '../vectors/builtin-embedder.js';
import type { Embedder } from '../vectors/embedder.js';
import { OpenAiEmbedder } from '../vectors/openai-embedder.js';
import { SEAL_WORKERS } from '../vectors/seal-pool.js';
import { Vectors } from '../vectors/service.js';
import { ShingleHasher } from '../vectors/shingles.js';
import type { OpenAppOptions } from './app.js';
import type { ReplicaPresence } from './replica.js';
import { ledgerRetention, objectStore } from './settings.js';

export interface WireContext {
  readonly config: Config;
  readonly options: OpenAppOptions;
  readonly provider: KeyProvider;
  readonly db: Db;
  readonly metrics: Metrics;
  readonly failpoint: ((name: string) => void) | undefined;
  /** This replica's presence once it listens (the erasure engine's acknowledgements ask it). */
  readonly presence: () => ReplicaPresence | undefined;
}

export type Wired = Awaited<ReturnType<typeof wireServices>>;

export async function wireServices(w: WireContext) {
  const vault = await wireVault(w);
  const data = await wireData(w, vault);
  const erasing = await wireErasures(w, { ...vault, ...data });
  return { ...vault, ...data, ...erasing };
}

/** The vault's parts: hashing, audit, the DEK cache, keys and their destructions, epochs, read fences, replica events. */
async function wireVault(w: WireContext) {
  const { config, options, provider, metrics } = w;
  const { logger } = options;
  const database = w.db.db;
  const hasher = new SubjectHasher(await provider.deriveSystemKey('subject-hash'));
  const audit = new AuditLog(await provider.deriveSystemKey('audit-chain'), await provider.deriveSystemKey('audit-head'));
  const statistics = w.db.kind === 'pglite' ? new StatisticsKeeper(database, (fields, message) => logger.info(fields, message)) : undefined;
  const cache = new DekCache({ maxEntries: config.dekCacheMaxEntries, maxAgeMs: config.dekCacheTtlSeconds * 1000 });
  const destructions = new KeyDestructions({ db: database, audit });
  const keys = new KeyService({
    db: database,
    provider,
    hasher,
    audit,
    cache,
    destructions,
    metrics,
    leaseTtlSeconds: config.leaseTtlSeconds,
    shardEntries: config.keyShardEntries,
  });
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
        { epoch, provider: provider.name, goneAt: goneAt?.toISOString() ?? null },
        revived
          ? `retired KEK epoch ${epoch} exists again in the key provider (its deletion was cancelled): destroyed again; certificates that wait on it stay provisional`
          : `retired KEK epoch ${epoch} is not gone at its date: certificates that wait on it stay provisional`,
      ),
    ...(options.onRewrapBatch ? { onBatch: options.onRewrapBatch } : {}),
  });
  const fences = new ReadFences(await provider.deriveSystemKey('read-fence'));
  const events = new ReplicaEvents(logger);
  return { hasher, audit, statistics, cache, destructions, keys, versionKeys, epochs, fences, events };
}

/** The data services over the vault: vectors, log, artifacts, search, backups. */
async function wireData(w: WireContext, v: Awaited<ReturnType<typeof wireVault>>) {
  const { config, options, provider, metrics, failpoint } = w;
  const { logger } = options;
  const { keys, versionKeys, destructions, fences, audit } = v;
  const database = w.db.db;
  const objects = objectStore(config, config.bucket);
  const backupObjects = objectStore(config, config.backupBucket);
  const embedder: Embedder =
    options.embedder ??
    (config.embeddings
      ? new OpenAiEmbedder({ ...config.embeddings, dimensions: config.embeddingDimensions })
      : new BuiltInEmbedder(config.embeddingDimensions));
  const regenerator: Regenerator = options.regenerator ?? (config.regenerator ? new ChatRegenerator(config.regenerator) : new ExtractiveRegenerator());
  const shingleKey = await provider.deriveSystemKey('shingle-index');
  const vectors = new Vectors({
    db: database,
    embedder,
    keys,
    versionKeys,
    shingles: new ShingleHasher(shingleKey),
    logger,
    metrics,
    sealWorkers: options.sealWorkers ?? config.sealWorkers ?? SEAL_WORKERS,
    shards: config.indexShards,
  });
  zeroize(shingleKey);
  const itemKey = await provider.deriveSystemKey('store-item');
  const items = new KeyedHasher(itemKey);
  zeroize(itemKey);
  const log = new LogService({ db: database, keys, objects, vectors, logger, metrics, items }, { ...(failpoint ? { failpoint } : {}), ...options.indexing });
  const artifacts = new ArtifactService({ db: database, keys, versionKeys, destructions, objects, vectors, log, fences, regenerator, audit, metrics, logger });
  const exposures = new TrainingExposures({ db: database, audit });
  const search = new Search({ vectors, log, artifacts, fences, keys, logger });
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
  return { objects, backupObjects, vectors, log, artifacts, exposures, search, ledgerMac, items, backups };
}

/** The erasure engine and what its certificates and reports need. */
async function wireErasures(w: WireContext, d: Awaited<ReturnType<typeof wireVault>> & Awaited<ReturnType<typeof wireData>>) {
  const { config, options, provider, metrics, failpoint } = w;
  const { logger } = options;
  const { keys, destructions, log, artifacts, versionKeys, vectors, backups, exposures, epochs, audit } = d;
  const database = w.db.db;
  // certificates are signed by the key provider's own signing key (rotatable; retired keys stay listed)
  const certificateKeys = new CertificateKeys({ db: database, provider, audit });
  const heartbeats = new ReplicaHeartbeats(database);
  // each module's part of an erasure (src/erasable.ts): the engine never knows their queries
  const erasables = [
    keyTableErasable({ keys, destructions }),
    logErasable({ db: database, log, destructions }),
    vectorIndexErasable({
      db: database,
      vectors,
      readable: async ({ entries, artifacts: ids }) => new Set([...(await log.readMany(entries)).keys(), ...(await artifacts.readMany(ids)).keys()]),
    }),
    artifactsErasable({ artifacts, failpoint }),
    backupsErasable({ backups, destructions, keys }),
  ];
  const erasures = new ErasureEngine({
    db: database,
    erasables,
    // which replicas applied a destruction: this one (caught up at once) and every other with a heartbeat row
    replicas: {
      acknowledge: (seq) => {
        const presence = w.presence();
        return presence ? presence.acknowledge(seq) : heartbeats.acknowledgement(seq);
      },
    },
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
  return { certificateKeys, heartbeats, erasures, reportLinks, principals };
}

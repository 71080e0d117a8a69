/**
 * Assembles the vault from configuration: root key → key provider → system subkeys
 * → database (migrated) → active epoch → services → replica invalidation listener.
 * The HTTP layer and the CLI both start here; nothing else opens these resources.
 */
import type { Config } from '../config/index.js';
import { zeroize } from '../crypto/index.js';
import { sql } from 'drizzle-orm';
import { type Db, openDb, queryRows } from '../db/client.js';
import { LocalKeyringProvider } from '../keyprovider/local.js';
import type { KeyProvider } from '../keyprovider/provider.js';
import { loadRootKey } from '../keyprovider/root-key.js';
import type { Logger } from '../observability/logger.js';
import { createMetrics, type Metrics } from '../observability/metrics.js';
import { AuditLog } from './audit.js';
import { DekCache } from './cache.js';
import { EpochService } from './epochs.js';
import { listenForInvalidations } from './events.js';
import { KeyService } from './keys.js';
import { SubjectHasher } from './subjects.js';
import { LogService } from '../log/service.js';
import { ReadFences } from '../artifacts/fences.js';
import { ArtifactKeys } from '../artifacts/keys.js';
import { ArtifactService } from '../artifacts/service.js';
import { TrainingExposures } from '../artifacts/exposures.js';
import { BackupService } from '../backups/service.js';
import { ErasureEngine } from '../erasure/engine.js';
import { ChatRegenerator, ExtractiveRegenerator, type Regenerator } from '../artifacts/regenerator.js';
import { type Embedder, HashingEmbedder } from '../search/embedder.js';
import { OpenAiEmbedder } from '../search/openai-embedder.js';
import { SearchService } from '../search/service.js';
import { describeError } from '../observability/logger.js';
import { FsObjectStore } from '../storage/fs.js';
import { S3ObjectStore } from '../storage/s3.js';
import type { ObjectStore } from '../storage/store.js';

export interface Vault {
  readonly config: Config;
  readonly db: Db;
  readonly provider: KeyProvider;
  /** Where ciphertext objects live (MinIO / S3, or the local filesystem). */
  readonly objects: ObjectStore;
  readonly keys: KeyService;
  readonly log: LogService;
  readonly artifacts: ArtifactService;
  readonly artifactKeys: ArtifactKeys;
  readonly exposures: TrainingExposures;
  readonly search: SearchService;
  readonly fences: ReadFences;
  readonly backups: BackupService;
  readonly erasures: ErasureEngine;
  readonly epochs: EpochService;
  readonly audit: AuditLog;
  readonly cache: DekCache;
  readonly metrics: Metrics;
  readonly logger: Logger;
  close(): Promise<void>;
}

export interface OpenVaultOptions {
  readonly logger: Logger;
  readonly metrics?: Metrics;
  /** Apply migrations and make sure an active epoch exists (default true). */
  readonly prepare?: boolean;
  /** Listen for replica invalidations (default true). */
  readonly listen?: boolean;
  /** Rebuild the in-memory search index by decrypting the stored embeddings (default: as `listen`). */
  readonly searchIndex?: boolean;
  /** Replace the configured embedder or regenerator (tests). */
  readonly embedder?: Embedder;
  readonly regenerator?: Regenerator;
  readonly onRewrapBatch?: (rewrappedSoFar: number) => void | Promise<void>;
  /** Claim and run erasures in the background (default: as `listen`). */
  readonly erasureWorker?: boolean;
}

/**
 * Test fault injection: LETHE_FAILPOINT=<name> kills this process (SIGKILL, no
 * clean-up) when the erasure engine reaches that point. Ignored in production.
 */
function failpointFor(config: Config): ((name: string) => void) | undefined {
  const wanted = process.env.LETHE_FAILPOINT;
  if (!wanted || config.production) return undefined;
  return (name) => {
    if (name === wanted) process.kill(process.pid, 'SIGKILL');
  };
}

export async function openVault(config: Config, options: OpenVaultOptions): Promise<Vault> {
  const { logger } = options;
  const metrics = options.metrics ?? createMetrics();
  const root = loadRootKey(config, (message) => logger.warn(message));
  const failpoint = failpointFor(config);
  let provider: KeyProvider | undefined;
  let db: Db | undefined;
  let signingKey: Uint8Array | undefined;
  try {
    provider = await LocalKeyringProvider.open(config.keyringDir, root.key);
    const hasher = new SubjectHasher(await provider.deriveSystemKey('subject-hash'));
    const audit = new AuditLog(await provider.deriveSystemKey('audit-chain'));
    db = await openDb({
      databaseUrl: config.databaseUrl,
      dataDir: `${config.dataDir}/pgdata`,
      poolSize: config.dbPoolSize,
    });
    const cache = new DekCache({ maxEntries: config.dekCacheMaxEntries, maxAgeMs: config.dekCacheTtlSeconds * 1000 });
    const keys = new KeyService({ db, provider, hasher, audit, cache, metrics, leaseTtlSeconds: config.leaseTtlSeconds });
    const epochs = new EpochService({
      db,
      provider,
      audit,
      metrics,
      batchSize: config.rewrapBatchSize,
      ...(options.onRewrapBatch ? { onBatch: options.onRewrapBatch } : {}),
    });
    const objects: ObjectStore = config.s3
      ? new S3ObjectStore({ ...config.s3, bucket: config.bucket })
      : new FsObjectStore(`${config.dataDir}/objects`, config.bucket);
    const embedder: Embedder =
      options.embedder ??
      (config.embeddings
        ? new OpenAiEmbedder({ ...config.embeddings, dimensions: config.embeddingDimensions })
        : new HashingEmbedder(config.embeddingDimensions));
    const regenerator: Regenerator = options.regenerator ?? (config.regenerator ? new ChatRegenerator(config.regenerator) : new ExtractiveRegenerator());
    const search = new SearchService({ db, embedder, logger, metrics });
    const log = new LogService({ db, keys, objects, search });
    const fences = new ReadFences(await provider.deriveSystemKey('read-fence'));
    const artifactKeys = new ArtifactKeys({ db, provider, audit });
    const backupObjects: ObjectStore = config.s3
      ? new S3ObjectStore({ ...config.s3, bucket: config.backupBucket })
      : new FsObjectStore(`${config.dataDir}/objects`, config.backupBucket);
    const backups = new BackupService({ db, keys, artifactKeys, provider, audit, objects, backupObjects, logger });
    const artifacts = new ArtifactService({
      db,
      keys,
      artifactKeys,
      objects,
      search,
      log,
      fences,
      regenerator,
      audit,
      metrics,
      logger,
      onKeysDestroyed: (keyIds) => {
        backups.propagateSoon(keyIds);
        failpoint?.('cascade-regenerated');
      },
    });
    backups.repairArtifactsWith(async (ids) => {
      const result = await artifacts.regenerate(ids, { actor: 'restore', reason: 'restore: the version key was destroyed after the backup' });
      return { regenerated: result.regenerated.length, removed: result.removed.length };
    });
    const exposures = new TrainingExposures({ db, audit });
    signingKey = await provider.deriveSystemKey('certificate-signing');
    const erasures = new ErasureEngine({
      db,
      keys,
      log,
      artifacts,
      artifactKeys,
      search,
      backups,
      exposures,
      logger,
      signingKey,
      probeThreshold: config.probeThreshold,
      probeSimilarity: config.probeSimilarity,
      claimSeconds: config.erasureClaimSeconds,
      pollMs: config.erasurePollMs,
      ...(failpoint ? { failpoint } : {}),
    });
    search.connect({
      keyFor: async (type, keyId) => (type === 'entry' ? (await keys.dekFor(keyId)).dek : artifactKeys.unwrap(keyId)),
      texts: async (ids) => {
        const entries = await log.readMany(ids.filter((i) => i.type === 'entry').map((i) => i.id));
        const out = await artifacts.readMany(ids.filter((i) => i.type === 'artifact').map((i) => i.id));
        for (const [id, e] of entries) out.set(id, { text: e.text, keyId: e.keyId });
        return out;
      },
      fence: async (hits) => {
        const arts = hits.filter((h) => h.type === 'artifact').map((h) => ({ artifactId: h.id, keyId: h.keyId }));
        return fences.issue([...hits.filter((h) => h.type === 'entry').map((h) => h.keyId), ...(await artifacts.fenceKeys(arts))]);
      },
    });
    keys.onDestroyed((keyId) => {
      search.removeKey(keyId);
      backups.propagateSoon([keyId]);
    });
    if (options.prepare ?? true) {
      await objects.ensureBucket({ versioned: true });
      await backupObjects.ensureBucket({ versioned: true, ...(config.backupObjectLock ? { objectLock: config.backupObjectLock } : {}) });
      if (config.backupObjectLock && backupObjects.kind === 'fs') {
        logger.warn('LETHE_BACKUP_OBJECT_LOCK is set but backups go to a local folder, which cannot enforce Object Lock');
      }
      await db.migrate();
      const epoch = await epochs.ensureActive('system');
      logger.info({ epoch, database: db.kind, provider: provider.name, objectStore: objects.kind }, 'vault ready');
    }
    const listening = options.listen ?? true;
    const unlisten = listening
      ? await listenForInvalidations({
          db,
          cache,
          provider,
          metrics,
          logger,
          hooks: {
            // fence, unfence and destruction all notify: drop vectors only of keys that are gone
            onKeyChanged: (keyId) => {
              // checked even when the index holds nothing under the key: a load may be decrypting it now
              void keyGone(db!, keyId)
                .then((gone) => gone && search.removeKey(keyId))
                .catch((e: unknown) => logger.warn({ err: describeError(e) }, 'could not check a key after a notification'));
            },
            onEmbeddings: (records) => {
              // our own writes come back too: skip what the index already holds under that key
              for (const [recordId, keyId] of records) {
                if (search.index.keyOf(recordId) === keyId) continue;
                void search.load(recordId).catch((e: unknown) => logger.warn({ err: describeError(e) }, 'could not load an embedding another replica wrote'));
              }
            },
            onReconnect: () => {
              void search.rebuild().catch((e: unknown) => logger.error({ err: describeError(e) }, 'search index rebuild failed'));
            },
          },
        })
      : undefined;
    // destructions this replica did not see through its own hook (another replica
    // crashed mid-propagation, a key destroyed by the CLI) reach the manifests here
    let catchUp: NodeJS.Timeout | undefined;
    if (listening) {
      backups.propagateSoon();
      catchUp = setInterval(() => backups.propagateSoon(), config.backupPropagateSeconds * 1000);
      catchUp.unref();
    }
    if (options.searchIndex ?? listening) {
      const started = performance.now();
      const rebuilt = await search.rebuild();
      logger.info({ ...rebuilt, ms: Math.round(performance.now() - started) }, 'search index rebuilt');
    }
    if (options.erasureWorker ?? listening) erasures.start();
    const openedDb = db;
    const openedProvider = provider;
    const openedSigningKey = signingKey;
    let closed = false;
    return {
      config,
      db,
      provider,
      objects,
      keys,
      log,
      artifacts,
      artifactKeys,
      exposures,
      search,
      fences,
      backups,
      erasures,
      epochs,
      audit,
      cache,
      metrics,
      logger,
      async close() {
        // idempotent: a second close (shutdown racing a test's cleanup) does nothing
        if (closed) return;
        closed = true;
        clearInterval(catchUp);
        await erasures.stop();
        await unlisten?.().catch(() => {});
        cache.clear();
        search.index.clear();
        fences.close();
        hasher.close();
        audit.close();
        await openedDb.close();
        await openedProvider.close();
        zeroize(openedSigningKey);
      },
    };
  } catch (e) {
    await db?.close().catch(() => {});
    zeroize(signingKey);
    if (provider) await provider.close();
    else zeroize(root.key);
    throw e;
  }
}

async function keyGone(db: Db, keyId: string): Promise<boolean> {
  const rows = await queryRows<{ one: number }>(
    db.db,
    sql`select 1 as one from subject_keys where key_id = ${keyId} union all select 1 from artifact_keys where key_id = ${keyId}`,
  );
  return rows.length === 0;
}

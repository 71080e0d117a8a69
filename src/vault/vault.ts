/**
 * Assembles the vault from configuration: root key → key provider → system subkeys
 * → database (migrated) → active epoch → services → replica invalidation listener.
 * The HTTP layer and the CLI both start here; nothing else opens these resources.
 */
import type { Config } from '../config/index.js';
import { zeroize } from '../crypto/index.js';
import { type Db, openDb } from '../db/client.js';
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
  readonly onRewrapBatch?: (rewrappedSoFar: number) => void | Promise<void>;
}

export async function openVault(config: Config, options: OpenVaultOptions): Promise<Vault> {
  const { logger } = options;
  const metrics = options.metrics ?? createMetrics();
  const root = loadRootKey(config, (message) => logger.warn(message));
  let provider: KeyProvider | undefined;
  let db: Db | undefined;
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
    const log = new LogService({ db, keys, objects });
    if (options.prepare ?? true) {
      await objects.ensureBucket({ versioned: true });
      await db.migrate();
      const epoch = await epochs.ensureActive('system');
      logger.info({ epoch, database: db.kind, provider: provider.name, objectStore: objects.kind }, 'vault ready');
    }
    const unlisten = options.listen ?? true ? await listenForInvalidations({ db, cache, provider, metrics, logger }) : undefined;
    const openedDb = db;
    const openedProvider = provider;
    return {
      config,
      db,
      provider,
      objects,
      keys,
      log,
      epochs,
      audit,
      cache,
      metrics,
      logger,
      async close() {
        await unlisten?.().catch(() => {});
        cache.clear();
        hasher.close();
        audit.close();
        await openedDb.close();
        await openedProvider.close();
      },
    };
  } catch (e) {
    await db?.close().catch(() => {});
    if (provider) await provider.close();
    else zeroize(root.key);
    throw e;
  }
}

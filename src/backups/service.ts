/**
 * Backups, behind one façade: the service the composition root builds and the HTTP
 * routes, the CLI and the erasure engine call. Each operation lives in its own file
 * and works on one shared BackupContext; this class only holds that context (and the
 * background propagation queue) and delegates.
 *
 * - run.ts: taking a backup (objects content-addressed, key table, database export,
 *   manifest, backup_keys rows).
 * - propagate.ts: writing destructions into the manifests of the backups holding the
 *   keys, in the foreground or coalesced in the background; how many backups hold a key.
 * - ledger-copy.ts: the append-only copy of the destruction ledger in the backup bucket.
 * - verify.ts / restore.ts: checking a backup; restoring one without bringing back a
 *   destroyed key.
 */
import { eq } from 'drizzle-orm';
import type { ArtifactService } from '../artifacts/service.js';
import type { Database } from '../db/client.js';
import { backups } from '../db/schema.js';
import { LetheError } from '../errors.js';
import type { KeyProvider } from '../keyprovider/provider.js';
import type { Logger } from '../observability/logger.js';
import type { ObjectStore } from '../storage/store.js';
import type { AuditLog } from '../vault/audit.js';
import type { KeyService } from '../vault/keys.js';
import type { VersionKeys } from '../vault/version-keys.js';
import type { BackupContext } from './context.js';
import { copyLedger } from './ledger-copy.js';
import { type Manifest, readManifest } from './manifest.js';
import {
  backupsHolding,
  backupsHoldingAny,
  backupsMarked,
  type PropagateOptions,
  propagateDestructions,
  type PropagationResult,
  PropagationQueue,
} from './propagate.js';
import { restoreBackup, type RestoreResult } from './restore.js';
import { type BackupProgress, type BackupSummary, takeBackup } from './run.js';
import { type Verification, verifyBackup } from './verify.js';

export type { PropagateOptions, PropagationResult } from './propagate.js';
export type { RestoreResult } from './restore.js';
export type { BackupProgress, BackupSummary } from './run.js';
export type { Verification, VerifiedKey } from './verify.js';

export class BackupService {
  readonly #ctx: BackupContext;
  readonly #queue: PropagationQueue;

  constructor(deps: {
    db: Database;
    keys: KeyService;
    versionKeys: VersionKeys;
    artifacts: ArtifactService;
    provider: KeyProvider;
    audit: AuditLog;
    objects: ObjectStore;
    backupObjects: ObjectStore;
    logger: Logger;
  }) {
    const { db, keys, versionKeys, artifacts, provider, audit, logger } = deps;
    this.#ctx = { db, keys, versionKeys, artifacts, provider, audit, live: deps.objects, backup: deps.backupObjects, logger };
    this.#queue = new PropagationQueue(this.#ctx);
  }

  /** The backup bucket (or folder). */
  get store(): ObjectStore {
    return this.#ctx.backup;
  }

  /** Takes a backup. */
  run(options: { onProgress?: (p: BackupProgress) => void } = {}): Promise<BackupSummary> {
    return takeBackup(this.#ctx, options);
  }

  async list(): Promise<BackupSummary[]> {
    const rows = await this.#ctx.db.select().from(backups).orderBy(backups.createdAt, backups.backupId);
    return rows.map((r) => ({ backupId: r.backupId, createdAt: r.createdAt, objects: r.objects, keys: r.keys, manifestVersion: r.manifestVersion }));
  }

  /** The current manifest version. */
  async manifest(backupId: string): Promise<Manifest> {
    const [row] = await this.#ctx.db.select().from(backups).where(eq(backups.backupId, backupId));
    if (!row) throw new LetheError('not_found', 'no such backup');
    return readManifest(this.#ctx.backup, backupId);
  }

  /** Writes every pending destruction (of `keyIds`' backups, of `backupIds`, or all) into the manifests; see propagate.ts. */
  propagate(options: PropagateOptions = {}): Promise<PropagationResult> {
    return propagateDestructions(this.#ctx, options);
  }

  /** Propagation in the background, coalesced; errors are logged, never thrown. */
  propagateSoon(keyIds?: readonly string[]): void {
    this.#queue.add(keyIds);
  }

  /** Copies destruction-ledger rows not yet in the backup bucket there (only `keyIds`' when given). */
  exportLedger(keyIds?: readonly string[]): Promise<number> {
    return copyLedger(this.#ctx, keyIds);
  }

  /** Checks a backup's objects against their sha256 and its keys against what lethe holds. */
  async verify(backupId: string): Promise<Verification> {
    return verifyBackup(this.#ctx, await this.manifest(backupId));
  }

  /** Restores a backup into an empty database and bucket, replaying the ledger first. */
  restore(backupId: string, options: { force?: boolean; actor: string }): Promise<RestoreResult> {
    return restoreBackup(this.#ctx, backupId, options);
  }

  /** How many backups hold data of the key. */
  holding(keyId: string): Promise<number> {
    return backupsHolding(this.#ctx, keyId);
  }

  /** In how many of them the key's destruction is already written. */
  marked(keyId: string): Promise<number> {
    return backupsMarked(this.#ctx, keyId);
  }

  /** How many distinct backups hold data of any of the keys. */
  holdingAny(keyIds: readonly string[]): Promise<number> {
    return backupsHoldingAny(this.#ctx, keyIds);
  }
}

/**
 * Backups, behind one façade: the service the composition root builds and the HTTP
 * routes, the CLI and the erasure engine call. Each operation lives in its own file
 * and works on one shared BackupContext; this class only holds that context (and the
 * background propagation queue) and delegates.
 *
 * - run.ts: taking a backup (objects content-addressed, key table, database export,
 *   manifest, backup_keys rows).
 * - propagate.ts: destructions reach the backups holding the keys through the ledger
 *   chain (no manifest is rewritten), in the foreground or coalesced in the
 *   background; how many backups hold a key, and have learned of its destruction.
 * - ledger-chain.ts: the destruction ledger's MAC-chained, write-ahead copy in the
 *   backup bucket; a destruction is durable (and answered `destroyed`) once it is there.
 * - anchor.ts: the chain's newest point witnessed elsewhere (manifests, certificates,
 *   a mirrored head) and checked by the running service.
 * - verify.ts / restore.ts: checking a backup; restoring one without bringing back a
 *   destroyed key.
 */
import { eq } from 'drizzle-orm';
import type { ArtifactService } from '../artifacts/service.js';
import type { KeyedHasher } from '../crypto/index.js';
import type { Database } from '../db/client.js';
import { afterPosition, type KeysetPage, type KeysetPosition, positionOrder, positionTime } from '../db/keyset.js';
import { backups } from '../db/schema.js';
import { LetheError } from '../errors.js';
import type { KeyProvider } from '../keyprovider/provider.js';
import type { Logger } from '../observability/logger.js';
import type { ObjectStore } from '../storage/store.js';
import type { AuditLog } from '../vault/audit.js';
import { Batcher } from '../vault/batcher.js';
import type { KeyDestructions } from '../vault/destructions.js';
import type { KeyService } from '../vault/keys.js';
import type { VersionKeys } from '../vault/version-keys.js';
import { LedgerAnchor, parseWitnessFile, repairCut, type Witness } from './anchor.js';
import type { AnchorState, BackupContext } from './context.js';
import { chainPosition, flushLedger, readChain, type VerifiedChain } from './ledger-chain.js';
import { type FoldedManifest, foldManifest, type Manifest, readManifest } from './manifest.js';
import {
  backupsHolding,
  backupsHoldingAny,
  backupsUnmarkedAny,
  backupsMarked,
  chainedDestructions,
  type PropagateOptions,
  propagateDestructions,
  type PropagationResult,
  PropagationQueue,
} from './propagate.js';
import { restoreBackup, type RestoreResult } from './restore.js';
import { type BackupProgress, type BackupSummary, takeBackup } from './run.js';
import { type Verification, verifyBackup } from './verify.js';

export type { Witness } from './anchor.js';
export type { AnchorState } from './context.js';
export type { PropagateOptions, PropagationResult } from './propagate.js';
export type { RestoreResult } from './restore.js';
export type { BackupProgress, BackupSummary } from './run.js';
export type { Verification, VerifiedKey } from './verify.js';

/** Waiters one group-committed flush answers at most (each flush takes every pending destruction anyway). */
const FLUSH_WAITERS = 10_000;

export class BackupService {
  readonly #ctx: BackupContext;
  readonly #queue: PropagationQueue;
  #anchorTimer: NodeJS.Timeout | undefined;
  /** What the canary found (probeLedgerLock): whether lethe's own credential can remove a retained ledger version. */
  #lockProbe: 'enforced' | 'bypassable' | undefined;
  /**
   * A destruction's own flush (awaitDurable), group-committed: one flush at a time; the
   * erasures that wait meanwhile share the next one, and with it its chain records.
   */
  readonly #flushes: Batcher<object, { records: number; durable: string[] }>;

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
    destructions: KeyDestructions;
    ledgerMac: KeyedHasher;
    ledgerLock?: { mode: 'governance' | 'compliance'; days: number } | undefined;
    /** Where each head stored is mirrored (LETHE_LEDGER_WITNESS_DIR), as a store for this bucket. */
    witness?: ObjectStore | undefined;
    /** Told whether the ledger chain is cut (a gauge). */
    onLedgerCut?: (cut: boolean) => void;
    failpoint?: ((name: string) => void) | undefined;
  }) {
    const { db, keys, versionKeys, artifacts, provider, audit, logger, destructions, ledgerMac } = deps;
    this.#ctx = {
      db,
      keys,
      versionKeys,
      artifacts,
      provider,
      audit,
      live: deps.objects,
      backup: deps.backupObjects,
      logger,
      destructions,
      ledgerMac,
      ledgerLock: deps.ledgerLock,
      anchor: new LedgerAnchor({
        db,
        backup: deps.backupObjects,
        ledgerMac,
        witness: deps.witness,
        logger,
        ...(deps.onLedgerCut ? { onState: deps.onLedgerCut } : {}),
      }),
      failpoint: deps.failpoint,
    };
    this.#queue = new PropagationQueue(this.#ctx);
    const ctx = this.#ctx;
    this.#flushes = new Batcher(async (waiting) => {
      const flushed = await flushLedger(ctx, { everything: false });
      return new Map(waiting.map((w) => [w, flushed]));
    }, FLUSH_WAITERS);
  }

  /** The backup bucket (or folder). */
  get store(): ObjectStore {
    return this.#ctx.backup;
  }

  /** Takes a backup. */
  run(options: { onProgress?: (p: BackupProgress) => void } = {}): Promise<BackupSummary> {
    return takeBackup(this.#ctx, options);
  }

  /** The backups taken, oldest first, each with its position (a page of them with `page`: keyset on (created_at, backup id), src/db/keyset.ts). */
  async list(page: KeysetPage = {}): Promise<Array<BackupSummary & { position: KeysetPosition }>> {
    const query = this.#ctx.db
      .select({ row: backups, time: positionTime(backups.createdAt) })
      .from(backups)
      .where(afterPosition(backups.createdAt, backups.backupId, page.after))
      .orderBy(...positionOrder(backups.createdAt, backups.backupId));
    const rows = await (page.limit === undefined ? query : query.limit(page.limit));
    return rows.map(({ row: r, time }) => ({
      backupId: r.backupId,
      createdAt: r.createdAt,
      objects: r.objects,
      keys: r.keys,
      manifestVersion: r.manifestVersion,
      position: { createdAt: time, id: r.backupId },
    }));
  }

  /**
   * The manifest as it stands now: its base (written once, with the backup) folded
   * with every destruction of its keys the backup bucket's stored ledger chain holds.
   */
  async manifest(backupId: string): Promise<FoldedManifest> {
    const base = await this.baseManifest(backupId);
    return foldManifest(base, await chainedDestructions(this.#ctx.db, this.#ctx.backup.bucket, backupId));
  }

  /** The manifest as stored in the backup bucket: the base (its current version), MAC'd. */
  async baseManifest(backupId: string): Promise<Manifest> {
    const [row] = await this.#ctx.db.select().from(backups).where(eq(backups.backupId, backupId));
    if (!row) throw new LetheError('not_found', 'no such backup');
    return readManifest(this.#ctx.backup, backupId);
  }

  /** Writes every destruction of `keyIds` (or every one) not yet in the backup bucket's ledger chain there; see propagate.ts. */
  propagate(options: PropagateOptions = {}): Promise<PropagationResult> {
    return propagateDestructions(this.#ctx, options);
  }

  /** Stops the background retries and checks (the service is closing). */
  close(): void {
    clearInterval(this.#anchorTimer);
    this.#queue.close();
  }

  /**
   * Checks every `intervalMs` that the bucket's chain still holds the last record this
   * database stored and a head naming it (anchor.ts); a cut raises the alarm. A check
   * that cannot reach the store is logged and changes nothing.
   */
  async startAnchorChecks(intervalMs: number): Promise<void> {
    const check = () =>
      this.#ctx.anchor.check(this.#ctx.db, { sweep: true }).then(
        () => {},
        (e: unknown) => this.#ctx.logger.warn({ err: e instanceof Error ? e.message : String(e) }, 'the ledger chain could not be checked'),
      );
    this.#anchorTimer = setInterval(() => void check(), intervalMs);
    this.#anchorTimer.unref();
    // the first check before the replica serves: /readyz says from the start whether the chain is whole
    await check();
  }

  /** Checks the chain now (see startAnchorChecks); answers the problem, or undefined when anchored. */
  checkAnchor(): Promise<string | undefined> {
    return this.#ctx.anchor.check();
  }

  /** The witnesses in a file handed to a restore (a saved head, MAC-checked; certificates); throws validation_failed naming it. */
  parseWitness(name: string, bytes: Uint8Array): Witness[] {
    return parseWitnessFile(this.#ctx.ledgerMac, name, bytes);
  }

  /** Puts back the records this database stored that the bucket lost, and a head naming the last; answers their sequence numbers. */
  repairLedger(): Promise<number[]> {
    return repairCut(this.#ctx);
  }

  /** The last record of the bucket's chain this database stored: where the chain stands, as a certificate names it. */
  async ledgerPosition(): Promise<{ bucket: string; seq: number; mac: string } | undefined> {
    const at = await chainPosition(this.#ctx.db, this.#ctx.backup.bucket);
    return at ? { bucket: this.#ctx.backup.bucket, ...at } : undefined;
  }

  /** Resolves once the background propagation in progress (if any) has ended. */
  idle(): Promise<void> {
    return this.#queue.idle();
  }

  /** Propagation in the background, coalesced; errors are logged, never thrown. */
  propagateSoon(keyIds?: readonly string[]): void {
    this.#queue.add(keyIds);
  }

  /** Writes every destruction not yet in the backup bucket's ledger chain there and marks it durable; throws when the bucket cannot be written. */
  flushLedger(): Promise<{ records: number; durable: string[] }> {
    return flushLedger(this.#ctx);
  }

  /**
   * Waits (up to `waitMs`, retrying the ledger write with backoff) until the
   * destructions of `keyIds` — every pending destruction when `keyIds` is undefined —
   * are durable in the backup bucket's ledger chain. Answers the key ids still pending
   * (empty: all durable; for "every pending destruction", how many as a count) and the
   * last write error, if any. Never waits past `waitMs`: a write that hangs goes on in
   * the background (one writer at a time) and the answer is "pending"; what is still
   * pending is handed to the background retries.
   */
  async awaitDurable(keyIds: readonly string[] | undefined, waitMs: number): Promise<{ pending: string[]; error?: string }> {
    const deadline = Date.now() + waitMs;
    const pendingNow = async (): Promise<string[]> => {
      if (keyIds) return this.#ctx.destructions.pendingDurable(keyIds);
      const { pending } = await this.#ctx.destructions.pendingSummary();
      return pending > 0 ? [`${pending} destruction(s)`] : [];
    };
    let delay = 100;
    let error: string | undefined;
    for (;;) {
      if ((await pendingNow()).length === 0) return { pending: [] };
      const remaining = deadline - Date.now();
      if (remaining <= 0) break;
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), remaining);
      });
      try {
        const outcome = await Promise.race([this.#flushes.submit({}).then(() => 'done' as const), timedOut]);
        if (outcome === 'timeout') error = `the backup store did not answer within ${waitMs} ms`;
        else error = undefined;
      } catch (e) {
        error = e instanceof Error ? e.message : String(e);
      } finally {
        clearTimeout(timer);
      }
      if ((await pendingNow()).length === 0) return { pending: [] };
      if (Date.now() + delay >= deadline) break;
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 2000);
    }
    const still = await pendingNow();
    if (still.length === 0) return { pending: still };
    this.#queue.add(keyIds);
    return { pending: still, ...(error ? { error } : {}) };
  }

  /**
   * Whether the ledger chain's objects are retained under Object Lock (LETHE_LEDGER_LOCK
   * on, and a backup bucket created with Object Lock), how many destructions are
   * still pending (not yet durable in the chain) and since when, and whether the chain
   * was last found anchored or cut.
   */
  /**
   * Probes, with a canary retained for a few seconds, whether lethe's own credential can
   * remove a version of the ledger retained under Object Lock (the governance bypass,
   * or deleting versions): answers `bypassable` or `enforced`, or undefined when the
   * chain is not under Object Lock at all (ledgerStatus says why).
   */
  async probeLedgerLock(): Promise<'enforced' | 'bypassable' | undefined> {
    const { ledgerLock, backup } = this.#ctx;
    if (!ledgerLock || !backup.retentionBypassable || !(await backup.lockable())) return undefined;
    this.#lockProbe = (await backup.retentionBypassable(ledgerLock.mode)) ? 'bypassable' : 'enforced';
    return this.#lockProbe;
  }

  async ledgerStatus(): Promise<{ locked: boolean; why?: string; pending: number; oldestPending: Date | null; anchor: AnchorState; bypassable?: boolean }> {
    const { pending, oldest } = await this.#ctx.destructions.pendingSummary();
    const base = { pending, oldestPending: oldest, anchor: this.#ctx.anchor.state };
    if (!this.#ctx.ledgerLock) return { ...base, locked: false, why: 'LETHE_LEDGER_LOCK is off' };
    if (this.#ctx.backup.kind === 'fs') return { ...base, locked: false, why: 'the backup store is a local folder, which cannot enforce Object Lock' };
    if (!(await this.#ctx.backup.lockable())) {
      return {
        ...base,
        locked: false,
        why: `the backup bucket ${this.#ctx.backup.bucket} was created without Object Lock (it can only be enabled at creation: use a new bucket)`,
      };
    }
    return { ...base, locked: true, ...(this.#lockProbe ? { bypassable: this.#lockProbe === 'bypassable' } : {}) };
  }

  /** The backup bucket's ledger chain, verified from its genesis (throws a conflict naming what is wrong). */
  ledgerChain(): Promise<VerifiedChain> {
    return readChain(this.#ctx.backup, this.#ctx.ledgerMac);
  }

  /** Checks a backup's objects against their sha256 and its keys against what lethe holds. */
  async verify(backupId: string): Promise<Verification> {
    return verifyBackup(this.#ctx, await this.baseManifest(backupId));
  }

  /** Restores a backup into an empty database and bucket, replaying the ledger first. */
  restore(backupId: string, options: { force?: boolean; actor: string; witnesses?: readonly Witness[] }): Promise<RestoreResult> {
    // a restore that fails waits out the propagation its regeneration set off before it puts the target back
    return restoreBackup(this.#ctx, backupId, { ...options, settle: () => this.#queue.idle() });
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

  /** How many distinct backups hold data of any of the keys whose destruction they have not learned of yet. */
  unmarkedAny(keyIds: readonly string[]): Promise<number> {
    return backupsUnmarkedAny(this.#ctx, keyIds);
  }
}

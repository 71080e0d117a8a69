/** Putting a restore's target back as the restore found it, when a step fails. */
import { isLetheError, LetheError } from '../errors.js';
import { describeError } from '../observability/logger.js';
import type { BackupContext } from './context.js';
import { putBackTables, type TablesSnapshot } from './database.js';

/** Every object key the bucket lists. */
async function listedKeys(store: BackupContext['live']): Promise<Set<string>> {
  const keys = new Set<string>();
  for await (const o of store.list('')) keys.add(o.key);
  return keys;
}

/**
 * What it takes to put the target back as the restore found it, gathered as the
 * restore goes: the keys the live bucket listed before, the objects the restore put
 * there, the rows the target database held (saved by the import's transaction before
 * it cleared them). `step` runs one step of the restore; when it throws, the target
 * is put back — every lethe table emptied and the saved rows inserted again, every
 * object the bucket did not list before removed — and the error says so.
 */
export class RestoreUndo {
  /** Objects this restore put into the live bucket (the last perhaps half-written). */
  readonly written = new Set<string>();
  /** Keys restored live: dropped from the DEK cache when the restore is undone. */
  readonly keyIds = new Set<string>();
  /** Every lethe table's rows before the import cleared them; set inside the import's transaction. */
  saved: TablesSnapshot | undefined;

  private constructor(
    private readonly ctx: BackupContext,
    private readonly backupId: string,
    private readonly listed: ReadonlySet<string>,
    private readonly settle: (() => Promise<void>) | undefined,
  ) {}

  static async start(ctx: BackupContext, backupId: string, settle?: () => Promise<void>): Promise<RestoreUndo> {
    return new RestoreUndo(ctx, backupId, await listedKeys(ctx.live), settle);
  }

  async step<T>(stage: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (e) {
      throw await this.#putBack(stage, e);
    }
  }

  /** Puts the target back; answers the error to throw (the cause's code, or `unavailable` for an unexpected one). */
  async #putBack(stage: string, cause: unknown): Promise<LetheError> {
    const { ctx, backupId } = this;
    const failed = `restore of backup ${backupId} failed while ${stage}: ${describeError(cause).message}`;
    let removed = 0;
    try {
      await this.settle?.();
      // the database first: once its rows are gone nothing points at the objects
      if (this.saved) await putBackTables(ctx.db, this.saved);
      for (const keyId of this.keyIds) ctx.keys.invalidate(keyId);
      const stray = new Set([...this.written, ...(await listedKeys(ctx.live))].filter((k) => !this.listed.has(k)));
      for (const key of stray) {
        await ctx.live.delete(key);
        removed++;
      }
      const left = [...(await listedKeys(ctx.live))].filter((k) => !this.listed.has(k));
      if (left.length > 0) throw new Error(`${left.length} object(s) written by the restore are still in the live bucket`);
    } catch (undoFailed) {
      ctx.logger.error(
        { backupId, stage, err: describeError(cause), undo: describeError(undoFailed) },
        'restore failed, and putting the target back failed too',
      );
      return new LetheError(
        'internal',
        `${failed}. Putting the target back failed too (${describeError(undoFailed).message}): the target database and live bucket may hold part of the backup — ` +
          'restore into a fresh database and an empty bucket, or empty these first.',
        { cause },
      );
    }
    ctx.logger.warn({ backupId, stage, err: describeError(cause), removedObjects: removed }, 'restore failed; the target was put back as it was found');
    const database = this.saved
      ? `the database holds again exactly the ${this.saved.rows} row(s) it held before (every lethe table emptied and refilled)`
      : 'the database was not changed';
    return new LetheError(
      isLetheError(cause) && cause.code !== 'internal' ? cause.code : 'unavailable',
      `${failed}. The target was left as it was found: ${database}, and the ${removed} object(s) the restore had written into the live bucket were removed.`,
      { cause },
    );
  }
}

/**
 * KEK epochs: creation, rotation (re-wrap every live DEK under a new epoch KEK) and
 * retirement (destroy the old KEK in the provider once nothing references it).
 *
 * Every step is safe to interrupt and re-run, and safe to run on two replicas at
 * once:
 * - the epochs table is locked while an epoch is chosen, so there is one pending or
 *   active newest epoch at a time; a re-run resumes it instead of making another;
 * - provider.createEpoch never overwrites an existing KEK;
 * - key creation holds FOR SHARE on the active epoch row, so once the new epoch is
 *   active no key can still be wrapped under the old one;
 * - re-wrap takes rows FOR NO KEY UPDATE SKIP LOCKED in bounded batches walked by
 *   (epoch, key_id): memory stays flat whatever the number of keys. Subject DEKs
 *   and artifact-version keys are wrapped alike and re-wrapped alike;
 * - an epoch is destroyed in the provider only after no key row references it, and
 *   marked retired in the database only after it is destroyed: the database may
 *   under-claim (retiring but gone), never over-claim;
 * - every key is re-wrapped for its purpose (subject_keys: subject DEKs;
 *   artifact_keys: the purpose its row records) under the new epoch, created with the
 *   purpose-bound wrap format: keys still under the legacy wrap of a format-1 epoch
 *   are unwrapped with it one last time, so after the rotation and the old epoch's
 *   retirement no legacy wrap remains.
 */
import { and, asc, eq, gt, inArray, sql } from 'drizzle-orm';
import { zeroize } from '../crypto/index.js';
import { type Database, queryRows } from '../db/client.js';
import { artifactKeys, epochs, type EpochRow, subjectKeys, type EpochState } from '../db/schema.js';
import { isLetheError, LetheError } from '../errors.js';
import type { KeyProvider, KeyPurpose } from '../keyprovider/provider.js';
import type { Metrics } from '../observability/metrics.js';
import type { AuditLog } from './audit.js';
import { notify } from './events.js';
import { assertEpochTransition } from './lifecycle.js';
import { acceptsLegacyWraps, PURPOSE_BOUND_WRAP_FORMAT } from './wrapping.js';

export interface RotationResult {
  /** The epoch now active. */
  readonly epoch: number;
  /** DEKs re-wrapped by this call. */
  readonly rewrapped: number;
  /** Epochs destroyed in the provider by this call. */
  readonly retired: number[];
  /** True when this call finished an earlier, interrupted rotation instead of starting one. */
  readonly resumed: boolean;
}

export interface EpochInfo {
  readonly epoch: number;
  readonly state: EpochState;
  readonly createdAt: Date;
  readonly activatedAt: Date | null;
  readonly retiredAt: Date | null;
  readonly keys: number;
}

export interface EpochServiceDeps {
  readonly db: Database;
  readonly provider: KeyProvider;
  readonly audit: AuditLog;
  readonly metrics: Metrics;
  readonly batchSize: number;
  readonly now?: () => Date;
  /**
   * Called when a retired epoch's KEK turned out not to be gone at its date: `revived`
   * when the provider held it again (a cancelled deletion, now scheduled again), else
   * re-dated; `goneAt` is the new date (null when the provider gives none).
   */
  readonly onRevivedEpoch?: (epoch: number, revived: boolean, goneAt: Date | null) => void;
  /** Called after each re-wrap batch (progress output, tests that interrupt). */
  readonly onBatch?: (rewrappedSoFar: number) => void | Promise<void>;
}

export class EpochService {
  readonly #d: EpochServiceDeps;
  readonly #now: () => Date;
  /** Retired epochs the provider has said are gone for good. */
  readonly #confirmedGone = new Set<number>();

  constructor(deps: EpochServiceDeps) {
    this.#d = deps;
    this.#now = deps.now ?? (() => new Date());
  }

  /**
   * Makes sure an active epoch exists (first start creates epoch 1) and that the
   * provider holds its KEK. Returns the active epoch.
   */
  async ensureActive(actor: string): Promise<number> {
    const [active] = await this.#d.db.select().from(epochs).where(eq(epochs.state, 'active'));
    if (active) {
      const present = await this.#d.provider.listEpochs();
      if (!present.includes(active.epoch)) {
        throw new LetheError(
          'epoch_unavailable',
          `the active KEK epoch ${active.epoch} is not in the ${this.#d.provider.name} provider: wrong keyring or root key?`,
        );
      }
      return active.epoch;
    }
    const { epoch } = await this.#prepare(actor);
    await this.#activate(epoch, actor);
    return epoch;
  }

  async list(): Promise<EpochInfo[]> {
    const rows = await this.#d.db.select().from(epochs).orderBy(asc(epochs.epoch));
    const counts = await queryRows<{ epoch: number; n: string | number }>(
      this.#d.db,
      sql`select epoch, count(*) as n from (select epoch from subject_keys union all select epoch from artifact_keys) k group by epoch`,
    );
    const byEpoch = new Map(counts.map((c) => [Number(c.epoch), Number(c.n)]));
    return rows.map((r) => ({
      epoch: r.epoch,
      state: r.state,
      createdAt: r.createdAt,
      activatedAt: r.activatedAt,
      retiredAt: r.retiredAt,
      keys: byEpoch.get(r.epoch) ?? 0,
    }));
  }

  /** The rows of the given epochs (those that exist). */
  async rows(epochNumbers: readonly number[]): Promise<EpochRow[]> {
    const unique = [...new Set(epochNumbers)];
    if (unique.length === 0) return [];
    return this.#d.db.select().from(epochs).where(inArray(epochs.epoch, unique));
  }

  /**
   * The epochs whose KEK is gone for good, ascending (what a certificate waits on is
   * compared against them): retired, and past the date the provider said the KEK
   * would be gone (AWS KMS: the end of the deletion window).
   */
  async retiredEpochs(): Promise<number[]> {
    const rows = await this.#d.db
      .select({ epoch: epochs.epoch, state: epochs.state, retiredAt: epochs.retiredAt })
      .from(epochs)
      .where(eq(epochs.state, 'retired'))
      .orderBy(asc(epochs.epoch));
    const now = this.#now();
    const out: number[] = [];
    for (const r of rows) if (epochGone(r, now) && (await this.#confirmGone(r.epoch))) out.push(r.epoch);
    return out;
  }

  /**
   * Asks the provider whether a retired epoch whose date has passed is really gone,
   * once per process (gone stays gone: a provider never brings a deleted KEK back).
   * A deletion that was cancelled (AWS KMS: the key enabled or disabled again) is
   * destroyed again, and its retirement moves to the new date; one whose date moved is
   * re-dated. Either way the epoch is not gone yet, and is audited and logged.
   */
  async #confirmGone(epoch: number): Promise<boolean> {
    if (this.#confirmedGone.has(epoch)) return true;
    const { provider, db } = this.#d;
    let state = await provider.destructionState(epoch);
    if (state.state === 'gone') {
      this.#confirmedGone.add(epoch);
      return true;
    }
    const revived = state.state === 'present';
    if (revived) {
      await provider.destroyEpoch(epoch);
      state = await provider.destructionState(epoch);
      if (state.state === 'gone') {
        this.#confirmedGone.add(epoch);
        return true;
      }
    }
    const goneAt = state.state === 'pending' ? state.goneAt : null;
    await db.transaction(async (tx) => {
      // a new date when the provider gives one; without one the date stays and the next pass asks again
      if (goneAt)
        await tx
          .update(epochs)
          .set({ retiredAt: goneAt })
          .where(and(eq(epochs.epoch, epoch), eq(epochs.state, 'retired')));
      await this.#d.audit.append(tx, [
        {
          actor: 'system',
          action: revived ? 'kek.epoch.redestroy' : 'kek.epoch.redate',
          epoch,
          detail: { provider: provider.name, ...(goneAt ? { goneAt: goneAt.toISOString() } : { state: state.state }) },
        },
      ]);
    });
    this.#d.onRevivedEpoch?.(epoch, revived, goneAt);
    return false;
  }

  /** How many epochs are retired (it only grows: a cheap "did anything retire?" check). */
  async retiredCount(): Promise<number> {
    const [row] = await queryRows<{ n: string | number }>(this.#d.db, sql`select count(*) as n from epochs where state = 'retired'`);
    return Number(row?.n ?? 0);
  }

  /** Rotates the KEK (or finishes an interrupted rotation). */
  async rotate(actor: string): Promise<RotationResult> {
    const { epoch, resumed } = await this.#prepare(actor);
    await this.#activate(epoch, actor);
    const rewrapped = await this.#rewrapAll(epoch);
    const retired = await this.#retireUnreferenced(epoch, actor);
    await this.#d.db.transaction((tx) =>
      this.#d.audit.append(tx, [{ actor, action: 'kek.rotate', epoch, detail: { rewrapped, retired: retired.join(','), resumed } }]),
    );
    return { epoch, rewrapped, retired, resumed };
  }

  /** Chooses the epoch to rotate to: a pending one, the active one with retirements left, or a new one. */
  async #prepare(actor: string): Promise<{ epoch: number; resumed: boolean }> {
    const chosen = await this.#d.db.transaction(async (tx) => {
      await tx.execute(sql`lock table epochs in share row exclusive mode`);
      const rows = await tx.select().from(epochs).orderBy(asc(epochs.epoch));
      const pending = rows.find((r) => r.state === 'pending');
      if (pending) return { epoch: pending.epoch, resumed: true, created: false };
      const active = rows.find((r) => r.state === 'active');
      if (active && rows.some((r) => r.state === 'retiring')) return { epoch: active.epoch, resumed: true, created: false };
      const epoch = (rows.at(-1)?.epoch ?? 0) + 1;
      await tx.insert(epochs).values({ epoch, state: 'pending', createdAt: this.#now(), wrapFormat: PURPOSE_BOUND_WRAP_FORMAT });
      return { epoch, resumed: false, created: true };
    });
    // Idempotent: a resumed pending epoch may or may not have reached the provider.
    await this.#d.provider.createEpoch(chosen.epoch);
    if (chosen.created) {
      await this.#d.db.transaction((tx) =>
        this.#d.audit.append(tx, [{ actor, action: 'kek.epoch.create', epoch: chosen.epoch, detail: { provider: this.#d.provider.name } }]),
      );
    }
    return { epoch: chosen.epoch, resumed: chosen.resumed };
  }

  /** pending → active, previous active → retiring, atomically. */
  async #activate(epoch: number, actor: string): Promise<void> {
    await this.#d.db.transaction(async (tx) => {
      await tx.execute(sql`lock table epochs in share row exclusive mode`);
      const [target] = await tx.select().from(epochs).where(eq(epochs.epoch, epoch));
      if (!target) throw new LetheError('internal', `epoch ${epoch} vanished`);
      if (target.state !== 'pending') return;
      const [previous] = await tx.select().from(epochs).where(eq(epochs.state, 'active'));
      const now = this.#now();
      if (previous) {
        assertEpochTransition(previous.state, 'retiring');
        await tx.update(epochs).set({ state: 'retiring' }).where(eq(epochs.epoch, previous.epoch));
      }
      assertEpochTransition(target.state, 'active');
      await tx.update(epochs).set({ state: 'active', activatedAt: now }).where(eq(epochs.epoch, epoch));
      await this.#d.audit.append(tx, [{ actor, action: 'kek.rotate', epoch, detail: { phase: 'activated', previous: previous?.epoch ?? null } }]);
    });
  }

  /** Re-wraps every wrapped key (subject DEKs, artifact-version keys, erasure keys) not under `target`, each for its purpose. Returns how many. */
  async #rewrapAll(target: number): Promise<number> {
    let total = 0;
    for (let pass = 0; ; pass++) {
      const old = await this.#d.db
        .select({ epoch: epochs.epoch })
        .from(epochs)
        .where(and(inArray(epochs.state, ['retiring', 'active']), sql`${epochs.epoch} <> ${target}`));
      let skippedLocked = false;
      for (const { epoch } of old) {
        for (const table of WRAPPED_KEY_TABLES) {
          total = await this.#rewrapTable(table, epoch, target, total);
          if ((await countWrapped(this.#d.db, epoch, table)) > 0) skippedLocked = true;
        }
      }
      if (!skippedLocked) return total;
      if (pass > 600) throw new LetheError('unavailable', 'keys stayed locked during re-wrap; run the rotation again');
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async #rewrapTable(table: WrappedKeyTable, epoch: number, target: number, total: number): Promise<number> {
    const { db, provider, metrics, batchSize, onBatch } = this.#d;
    const t = table === 'subject_keys' ? subjectKeys : artifactKeys;
    // keys under a format-1 epoch may carry the legacy wrap: accepted here, never written
    const acceptLegacy = await acceptsLegacyWraps(db, epoch);
    let after = '';
    for (;;) {
      const done = await db.transaction(async (tx) => {
        const rows = await tx
          .select({ keyId: t.keyId, wrappedDek: t.wrappedDek, purpose: table === 'subject_keys' ? sql<KeyPurpose>`'subject'` : artifactKeys.purpose })
          .from(t)
          .where(and(eq(t.epoch, epoch), gt(t.keyId, after)))
          .orderBy(asc(t.keyId))
          .limit(batchSize)
          .for('no key update', { skipLocked: true });
        if (rows.length === 0) return { n: 0, last: after };
        const updates: Array<{ key_id: string; w: string }> = [];
        for (const row of rows) {
          const dek = await provider.unwrap(epoch, row.wrappedDek, row.keyId, row.purpose, { acceptLegacy }).catch((e: unknown) => {
            if (!isLetheError(e, 'decrypt_failed')) throw e;
            throw new LetheError(
              'decrypt_failed',
              `key ${row.keyId} in ${table} does not unwrap as a ${row.purpose} key under epoch ${epoch}: its row was altered or copied from ` +
                'another key, so it cannot be re-wrapped. Investigate and remove the row, then run the rotation again (it resumes)',
              { cause: e },
            );
          });
          try {
            const wrapped = await provider.wrap(target, dek, row.keyId, row.purpose);
            updates.push({ key_id: row.keyId, w: Buffer.from(wrapped).toString('hex') });
          } finally {
            zeroize(dek);
          }
        }
        const json = JSON.stringify(updates);
        if (table === 'subject_keys') {
          await tx.execute(sql`update subject_keys as sk
                                  set wrapped_dek = decode(v.w, 'hex'), epoch = ${target}, updated_at = now()
                                 from json_to_recordset(${json}::json) as v(key_id text, w text)
                                where sk.key_id = v.key_id and sk.epoch = ${epoch}`);
        } else {
          await tx.execute(sql`update artifact_keys as ak
                                  set wrapped_dek = decode(v.w, 'hex'), epoch = ${target}
                                 from json_to_recordset(${json}::json) as v(key_id text, w text)
                                where ak.key_id = v.key_id and ak.epoch = ${epoch}`);
        }
        return { n: rows.length, last: rows.at(-1)!.keyId };
      });
      if (done.n === 0) return total;
      after = done.last;
      total += done.n;
      metrics.rewrapped.inc(done.n);
      await onBatch?.(total);
    }
  }

  /** Destroys, then marks retired, every retiring epoch no key references any more. */
  async #retireUnreferenced(active: number, actor: string): Promise<number[]> {
    const { db, provider } = this.#d;
    const retiring = await db.select().from(epochs).where(eq(epochs.state, 'retiring')).orderBy(asc(epochs.epoch));
    const retired: number[] = [];
    for (const row of retiring) {
      if (row.epoch === active) continue;
      let referenced = false;
      for (const table of WRAPPED_KEY_TABLES) if ((await countWrapped(db, row.epoch, table)) > 0) referenced = true;
      if (referenced) continue;
      await provider.destroyEpoch(row.epoch);
      // when the KEK is gone for good: now, or the end of a deletion window the provider is still in (AWS KMS)
      const now = this.#now();
      const goneAt = await provider.destroyedAt(row.epoch);
      const retiredAt = goneAt && goneAt > now ? goneAt : now;
      await db.transaction(async (tx) => {
        const [fresh] = await tx.select().from(epochs).where(eq(epochs.epoch, row.epoch)).for('update');
        if (!fresh || fresh.state === 'retired') return;
        assertEpochTransition(fresh.state, 'retired');
        await tx.update(epochs).set({ state: 'retired', retiredAt }).where(eq(epochs.epoch, row.epoch));
        await this.#d.audit.append(tx, [
          {
            actor,
            action: 'kek.epoch.retire',
            epoch: row.epoch,
            detail: { provider: provider.name, ...(retiredAt > now ? { goneAt: retiredAt.toISOString() } : {}) },
          },
        ]);
        await notify(tx, { t: 'epoch', epoch: row.epoch });
      });
      retired.push(row.epoch);
    }
    return retired;
  }
}

/**
 * Whether an epoch's KEK is gone for good at `now`: retired (destroyed in the
 * provider), and its retirement date — the end of a provider's deletion window when
 * there is one — has passed. Until then a retired epoch unwraps nothing through lethe,
 * but its provider could still give it back (an AWS KMS deletion can be cancelled).
 */
export function epochGone(row: Pick<EpochRow, 'state' | 'retiredAt'>, now: Date): boolean {
  return row.state === 'retired' && (row.retiredAt === null || row.retiredAt <= now);
}

/** The tables holding keys wrapped under an epoch KEK. */
const WRAPPED_KEY_TABLES = ['subject_keys', 'artifact_keys'] as const;
type WrappedKeyTable = (typeof WRAPPED_KEY_TABLES)[number];

async function countWrapped(db: Database, epoch: number, table: WrappedKeyTable): Promise<number> {
  const [left] = await queryRows<{ n: string | number }>(
    db,
    table === 'subject_keys'
      ? sql`select count(*) as n from subject_keys where epoch = ${epoch}`
      : sql`select count(*) as n from artifact_keys where epoch = ${epoch}`,
  );
  return Number(left?.n ?? 0);
}

/**
 * The worker: claims erasures and runs their steps (src/erasure/steps), one replica
 * per erasure at a time.
 *
 * - Claim: a row whose claim lapsed, FOR UPDATE SKIP LOCKED; pending becomes running.
 *   A heartbeat renews the claim every third of LETHE_ERASURE_CLAIM_SECONDS; a replica
 *   killed mid-step leaves it to lapse, and whoever claims next re-runs that step.
 * - Commit: the step's outcome, the next step and a transition row in one
 *   transaction, guarded by `claimed_by = me and step = <the step that ran>`: a
 *   replica that lost its claim, or a row moved on by someone else, commits nothing.
 * - Failure: a tier's hard failure fails the erasure at once; other errors are
 *   retried with backoff (0.5 s · 2^attempt) up to MAX_ATTEMPTS, then fail it.
 */
import { and, eq, sql } from 'drizzle-orm';
import type { Json } from '../crypto/index.js';
import { queryRows } from '../db/client.js';
import { type ErasureRow, erasures } from '../db/schema.js';
import { isLetheError } from '../errors.js';
import { describeError } from '../observability/logger.js';
import { assertStatusTransition, type ErasureStatus, parseStep, type StepName, TRANSITIONS } from './machine.js';
import type { ErasureResources } from './resources.js';
import { type ErasureState, parseState } from './state.js';
import { STEPS } from './steps/index.js';
import { Park, type StepContext, type StepDone, TierFailure } from './steps/step.js';

export const MAX_ATTEMPTS = 5;

export class ErasureWorker {
  readonly #res: ErasureResources;
  readonly #emit: () => void;
  readonly #afterDrain: () => Promise<void>;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;
  #started = false;

  /** `emit` is told after every committed transition; `afterDrain` runs after each drain (the certificate finalizer). */
  constructor(res: ErasureResources, hooks: { emit: () => void; afterDrain: () => Promise<void> }) {
    this.#res = res;
    this.#emit = hooks.emit;
    this.#afterDrain = hooks.afterDrain;
  }

  /** Starts claiming work every pollMs (and at once when kicked). */
  start(): void {
    this.#stopped = false;
    this.#started = true;
    const tick = () => {
      if (this.#stopped) return;
      this.kick();
      this.#timer = setTimeout(tick, this.#res.pollMs);
      this.#timer.unref();
    };
    tick();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running?.catch(() => {});
  }

  /** Looks for claimable work now, when the worker runs (one drain at a time per replica). */
  kick(): void {
    if (!this.#started || this.#running || this.#stopped) return;
    this.#running = this.drain()
      .then(() => undefined)
      .catch((e: unknown) => this.#res.logger.error({ err: describeError(e) }, 'erasure worker failed'))
      .finally(() => {
        this.#running = undefined;
      });
  }

  /** Claims and runs erasures until none is claimable, then runs `afterDrain`. */
  async drain(): Promise<number> {
    let ran = 0;
    for (;;) {
      if (this.#stopped) return ran;
      const row = await this.#claim();
      if (!row) break;
      ran++;
      await this.#run(row);
    }
    await this.#afterDrain();
    return ran;
  }

  /**
   * Claims one erasure and runs only its next step, then hands it back (operators
   * stepping through an erasure, and tests). Returns the step run, if any.
   */
  async stepOnce(): Promise<StepName | undefined> {
    const row = await this.#claim();
    if (!row) return undefined;
    const step = parseStep(row.step) ?? undefined;
    await this.#run(row, 1);
    await this.#release(row.erasureId);
    return step;
  }

  async #claim(): Promise<ErasureRow | undefined> {
    const { records, claimSeconds } = this.#res;
    const rows = await queryRows<{ erasure_id: string }>(
      records.db,
      sql`update erasures
             set claimed_by = ${records.replica},
                 claimed_until = now() + make_interval(secs => ${claimSeconds}),
                 status = case when status = 'pending' then 'running' else status end,
                 updated_at = now()
           where erasure_id = (
                 select erasure_id from erasures
                  where status in ('pending', 'running') and not_before <= now()
                    and (claimed_until is null or claimed_until < now())
                  order by not_before
                  limit 1
                  for update skip locked)
       returning erasure_id`,
    );
    if (!rows[0]) return undefined;
    return records.row(rows[0].erasure_id);
  }

  /** Gives the claim up now (stepping, or shutting down between steps) rather than when it lapses. */
  async #release(erasureId: string): Promise<void> {
    const { records } = this.#res;
    await records.db.update(erasures).set({ claimedBy: null, claimedUntil: null }).where(and(eq(erasures.erasureId, erasureId), eq(erasures.claimedBy, records.replica)));
  }

  /** Only while this replica holds the claim. */
  #mine(erasureId: string) {
    return and(eq(erasures.erasureId, erasureId), eq(erasures.claimedBy, this.#res.records.replica));
  }

  async #run(initial: ErasureRow, maxSteps = Number.POSITIVE_INFINITY): Promise<void> {
    const { records, claimSeconds } = this.#res;
    let row = initial;
    let ran = 0;
    const heartbeat = setInterval(() => {
      void records.db
        .update(erasures)
        .set({ claimedUntil: sql`now() + make_interval(secs => ${claimSeconds})` })
        .where(this.#mine(row.erasureId))
        .catch(() => {});
    }, Math.max(200, (claimSeconds * 1000) / 3));
    heartbeat.unref();
    try {
      for (let step = parseStep(row.step); step && !this.#stopped && ran++ < maxSteps; step = parseStep(row.step)) {
        const state = parseState(row.state);
        const startedAt = new Date().toISOString();
        state.steps[step] = { status: 'running', startedAt };
        const ctx: StepContext = { res: this.#res, row, state, checkpoint: () => records.checkpoint(row.erasureId, state) };
        await ctx.checkpoint();
        let outcome: StepDone | Park;
        try {
          outcome = await STEPS[step].run(ctx);
        } catch (e) {
          await this.#fail(row, step, state, e);
          return;
        }
        if (outcome instanceof Park) {
          state.steps[step] = { status: 'running', startedAt, detail: outcome.detail };
          await this.#park(row, step, state, outcome);
          return;
        }
        this.#res.failpoint?.(step);
        state.steps[step] = { status: 'done', startedAt, finishedAt: new Date().toISOString(), detail: outcome.detail };
        const committed = await this.#commit(row, step, state, outcome);
        if (!committed) {
          this.#res.logger.warn({ erasureId: row.erasureId, step }, 'lost the claim on an erasure; another replica continues it');
          return;
        }
        this.#emit();
        row = committed;
      }
    } finally {
      clearInterval(heartbeat);
      // shutting down between steps: hand the erasure over now rather than when the claim lapses
      if (this.#stopped) await this.#release(row.erasureId).catch(() => {});
    }
  }

  /** The step's outcome, the next step and its transition row, in one transaction; undefined when the claim or the step moved. */
  async #commit(row: ErasureRow, step: StepName, state: ErasureState, outcome: StepDone): Promise<ErasureRow | undefined> {
    const { records, destructions, versionKeys } = this.#res;
    const next = TRANSITIONS[step];
    const finished = outcome.final;
    const status: ErasureStatus = finished ? finished.status : 'running';
    assertStatusTransition(row.status, status);
    return destructions.transaction(async (tx) => {
      const [committed] = await tx
        .update(erasures)
        .set({
          step: next,
          state,
          status,
          ...(outcome.cls ? { class: outcome.cls } : {}),
          ...(finished
            ? {
                certificate: finished.certificate as unknown as Json,
                certificateState: finished.certificateState,
                finishedAt: new Date(),
                claimedBy: null,
                claimedUntil: null,
                ...(finished.destroySealKey ? { sealKeyId: null, sealedRequest: null, sealedFingerprints: null } : {}),
              }
            : {}),
          attempts: 0,
          lastError: null,
          updatedAt: new Date(),
        })
        .where(and(this.#mine(row.erasureId), eq(erasures.step, step)))
        .returning();
      if (!committed) return undefined;
      if (finished?.destroySealKey && row.sealKeyId) {
        await versionKeys.destroy(tx, row.sealKeyId, { reason: 'erasure fingerprints no longer needed', actor: 'erasure', artifactId: row.erasureId });
      }
      await records.transition(tx, row.erasureId, step, next, status, outcome.detail);
      return committed;
    });
  }

  /** Parks the erasure until `park.until` and hands the claim back. */
  async #park(row: ErasureRow, step: StepName, state: ErasureState, park: Park): Promise<void> {
    const { records } = this.#res;
    const parked = await records.db.transaction(async (tx) => {
      const r = await tx
        .update(erasures)
        .set({ state, notBefore: park.until, claimedBy: null, claimedUntil: null, updatedAt: new Date() })
        .where(and(this.#mine(row.erasureId), eq(erasures.step, step)))
        .returning({ id: erasures.erasureId });
      if (r.length > 0) await records.transition(tx, row.erasureId, step, step, 'running', park.detail);
      return r.length > 0;
    });
    if (parked) this.#emit();
  }

  async #fail(row: ErasureRow, step: StepName, state: ErasureState, e: unknown): Promise<void> {
    const { records, logger } = this.#res;
    const hard = e instanceof TierFailure;
    const message = e instanceof TierFailure || isLetheError(e) ? (e as Error).message : 'internal error';
    const attempts = row.attempts + 1;
    const giveUp = hard || attempts >= MAX_ATTEMPTS || (isLetheError(e) && !e.retryable && e.code !== 'conflict');
    logger.warn({ erasureId: row.erasureId, step, attempts, err: describeError(e) }, giveUp ? 'erasure step failed' : 'erasure step will be retried');
    state.steps[step] = { ...state.steps[step], status: giveUp ? 'failed' : 'running', detail: giveUp ? message : `attempt ${attempts} failed (${message}); retrying` };
    if (giveUp) assertStatusTransition(row.status, 'failed');
    await records.db.transaction(async (tx) => {
      const r = await tx
        .update(erasures)
        .set({
          state,
          attempts,
          lastError: message,
          claimedBy: null,
          claimedUntil: null,
          updatedAt: new Date(),
          ...(giveUp ? { status: 'failed' as const, step: null, finishedAt: new Date() } : { notBefore: new Date(Date.now() + 500 * 2 ** attempts) }),
        })
        .where(and(this.#mine(row.erasureId), eq(erasures.step, step)))
        .returning({ id: erasures.erasureId });
      if (r.length > 0) await records.transition(tx, row.erasureId, step, giveUp ? null : step, giveUp ? 'failed' : 'running', message);
    });
    this.#emit();
  }
}

/**
 * The worker: claims erasures and runs their steps (src/erasure/steps), one replica
 * per erasure at a time, up to LETHE_ERASURE_CONCURRENCY erasures at once per replica.
 *
 * - Claim: a row whose claim lapsed, FOR UPDATE SKIP LOCKED; pending becomes running.
 *   Each claim is its own token (`<replica>#<n>` in claimed_by). A heartbeat renews
 *   the claim every third of LETHE_ERASURE_CLAIM_SECONDS; a replica killed mid-step
 *   leaves it to lapse, and whoever claims next re-runs that step.
 * - Commit: the step's outcome, the next step and a transition row in one
 *   transaction, guarded by `claimed_by = <this claim> and step = <the step that
 *   ran>`: a replica that lost its claim, a step abandoned at its deadline (even when
 *   this replica claimed the erasure again since), or a row moved on by someone else,
 *   commits — and checkpoints — nothing.
 * - Deadline: a step still running after LETHE_ERASURE_STEP_DEADLINE_SECONDS stops
 *   heartbeating, gives its claim up and counts a failed attempt; it is retried.
 * - Failure: what retry.ts says — transient errors are retried with capped
 *   exponential backoff for as long as it takes, permanent ones fail the erasure at
 *   once, unclassified ones after MAX_ATTEMPTS.
 */
import { and, eq, sql } from 'drizzle-orm';
import type { Json } from '../crypto/index.js';
import { queryRows } from '../db/client.js';
import { type ErasureRow, erasures } from '../db/schema.js';
import { describeError } from '../observability/logger.js';
import { type ErasureStatus, parseStep, type StepName, TRANSITIONS } from './machine.js';
import { signedEvent } from './certificate-audit.js';
import type { ErasureResources } from './resources.js';
import { classifyFailure, DEFAULT_RETRY, type FailureKind, failureMessage, givesUp, retryDelayMs, StepDeadlineExceeded } from './retry.js';
import { type ErasureState, parseState } from './state.js';
import { STEPS } from './steps/index.js';
import { Park, type StepContext, type StepDone } from './steps/step.js';

export { MAX_ATTEMPTS } from './retry.js';

/** LETHE_ERASURE_STEP_DEADLINE_SECONDS's default, in ms. */
export const DEFAULT_STEP_DEADLINE_MS = 300_000;

export class ErasureWorker {
  readonly #res: ErasureResources;
  readonly #emit: () => void;
  readonly #afterDrain: () => Promise<void>;
  readonly #onRetry: ((step: StepName, kind: FailureKind) => void) | undefined;
  /** Claims taken by this worker: each claim's token is `<replica>#<n>`. */
  #claims = 0;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;
  #started = false;

  /**
   * `emit` is told after every committed transition; `afterDrain` runs after each
   * drain (the certificate finalizer); `onRetry` after each failed attempt that will
   * be retried (the retries counter).
   */
  constructor(res: ErasureResources, hooks: { emit: () => void; afterDrain: () => Promise<void>; onRetry?: (step: StepName, kind: FailureKind) => void }) {
    this.#res = res;
    this.#emit = hooks.emit;
    this.#afterDrain = hooks.afterDrain;
    this.#onRetry = hooks.onRetry;
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

  /**
   * Claims and runs erasures until none is claimable, then runs `afterDrain`: up to
   * `concurrency` at once, each lane claiming its next erasure when its last one
   * parks, fails or ends (destructions waiting at the same moment then share one ledger flush:
   * BackupService.awaitDurable group-commits them).
   */
  async drain(): Promise<number> {
    let ran = 0;
    const lane = async (): Promise<void> => {
      for (;;) {
        if (this.#stopped) return;
        const row = await this.#claim();
        if (!row) return;
        ran++;
        await this.#run(row);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, this.#res.concurrency ?? 1) }, lane));
    if (this.#stopped) return ran;
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
    await this.#release(row);
    return step;
  }

  async #claim(): Promise<ErasureRow | undefined> {
    const { records, claimSeconds } = this.#res;
    const claim = `${records.replica}#${++this.#claims}`;
    const rows = await queryRows<{ erasure_id: string }>(
      records.db,
      sql`update erasures
             set claimed_by = ${claim},
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
  async #release(row: ErasureRow): Promise<void> {
    await this.#res.records.db.update(erasures).set({ claimedBy: null, claimedUntil: null }).where(this.#mine(row));
  }

  /** Only while this claim holds the row (`row` as claimed: its claimed_by is the claim's token). */
  #mine(row: ErasureRow) {
    return and(eq(erasures.erasureId, row.erasureId), eq(erasures.claimedBy, row.claimedBy ?? ''));
  }

  async #run(initial: ErasureRow, maxSteps = Number.POSITIVE_INFINITY): Promise<void> {
    const { records, claimSeconds } = this.#res;
    let row = initial;
    let ran = 0;
    const heartbeat = setInterval(
      () => {
        void records.db
          .update(erasures)
          .set({ claimedUntil: sql`now() + make_interval(secs => ${claimSeconds})` })
          .where(this.#mine(row))
          .catch(() => {});
      },
      Math.max(200, (claimSeconds * 1000) / 3),
    );
    heartbeat.unref();
    try {
      for (let step = parseStep(row.step); step && !this.#stopped && ran++ < maxSteps; step = parseStep(row.step)) {
        const state = parseState(row.state);
        const startedAt = new Date().toISOString();
        state.steps[step] = { status: 'running', startedAt };
        const claim = row.claimedBy ?? '';
        const ctx: StepContext = { res: this.#res, row, state, checkpoint: () => records.checkpoint(row.erasureId, state, claim) };
        await ctx.checkpoint();
        let outcome: StepDone | Park;
        try {
          outcome = await this.#runWithDeadline(step, ctx);
        } catch (e) {
          // past its deadline the claim is not renewed any more: it is given up below
          if (e instanceof StepDeadlineExceeded) clearInterval(heartbeat);
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
      if (this.#stopped) await this.#release(row).catch(() => {});
    }
  }

  /**
   * The step, unless it runs past the step deadline: then StepDeadlineExceeded, and the
   * step goes on unawaited — its checkpoints and its outcome are refused, the claim
   * they are guarded by being given up — until it ends, which is logged.
   */
  async #runWithDeadline(step: StepName, ctx: StepContext): Promise<StepDone | Park> {
    const ms = this.#res.stepDeadlineMs ?? DEFAULT_STEP_DEADLINE_MS;
    const running = STEPS[step].run(ctx);
    let timer: NodeJS.Timeout | undefined;
    let late = false;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        late = true;
        reject(new StepDeadlineExceeded(step, ms));
      }, ms);
      timer.unref();
    });
    running.then(
      () => {
        if (late) this.#res.logger.warn({ erasureId: ctx.row.erasureId, step }, 'a step abandoned at its deadline ended; its outcome was discarded');
      },
      (e: unknown) => {
        if (late)
          this.#res.logger.warn(
            { erasureId: ctx.row.erasureId, step, err: describeError(e) },
            'a step abandoned at its deadline failed; nothing of it was recorded',
          );
      },
    );
    try {
      return await Promise.race([running, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The step's outcome, the next step and its transition row, in one transaction; undefined when the claim or the step moved. */
  async #commit(row: ErasureRow, step: StepName, state: ErasureState, outcome: StepDone): Promise<ErasureRow | undefined> {
    const { records, destructions, versionKeys, audit } = this.#res;
    const next = TRANSITIONS[step];
    const finished = outcome.final;
    const status: ErasureStatus = finished ? finished.status : 'running';
    return destructions.transaction(async (tx) => {
      const committed = await records.move(tx, {
        erasureId: row.erasureId,
        from: { status: row.status, step },
        to: { status, step: next },
        set: {
          state,
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
        },
        guard: and(this.#mine(row), eq(erasures.step, step)),
        detail: outcome.detail,
      });
      if (!committed) return undefined;
      // what the step asks to audit (the probe's result), and the certificate, enter the audit chain with the commit (probe-audit.ts, certificate-audit.ts)
      const events = [...(outcome.audit ?? []), ...(finished ? [signedEvent(row.erasureId, finished.certificate)] : [])];
      if (events.length > 0) await audit.append(tx, events);
      if (finished?.destroySealKey && row.sealKeyId) {
        await versionKeys.destroy(tx, row.sealKeyId, { reason: 'erasure fingerprints no longer needed', actor: 'erasure', artifactId: row.erasureId });
      }
      return committed;
    });
  }

  /** Parks the erasure until `park.until` and hands the claim back. */
  async #park(row: ErasureRow, step: StepName, state: ErasureState, park: Park): Promise<void> {
    const { records } = this.#res;
    const parked = await records.db.transaction(
      async (tx) =>
        (await records.move(tx, {
          erasureId: row.erasureId,
          from: { status: row.status, step },
          to: { status: 'running', step },
          set: { state, notBefore: park.until, claimedBy: null, claimedUntil: null },
          guard: and(this.#mine(row), eq(erasures.step, step)),
          detail: park.detail,
        })) !== undefined,
    );
    if (parked) this.#emit();
  }

  /**
   * Records a failed attempt (retry.ts decides): a retry parks the erasure at the same
   * step until its backoff ends and gives the claim up; giving up fails it. Guarded by
   * the claim like every write.
   */
  async #fail(row: ErasureRow, step: StepName, state: ErasureState, e: unknown): Promise<void> {
    const { records, logger } = this.#res;
    const kind = classifyFailure(e);
    const message = failureMessage(e, kind);
    const attempts = row.attempts + 1;
    const giveUp = givesUp(kind, attempts);
    const retryAt = new Date(Date.now() + retryDelayMs(attempts, this.#res.retry ?? DEFAULT_RETRY));
    logger.warn({ erasureId: row.erasureId, step, attempts, kind, err: describeError(e) }, giveUp ? 'erasure step failed' : 'erasure step will be retried');
    state.steps[step] = {
      ...state.steps[step],
      status: giveUp ? 'failed' : 'running',
      detail: giveUp ? message : `attempt ${attempts} failed (${message}); retrying at ${retryAt.toISOString()}`,
    };
    const recorded = await records.db.transaction(
      async (tx) =>
        (await records.move(tx, {
          erasureId: row.erasureId,
          from: { status: row.status, step },
          to: giveUp ? { status: 'failed', step: null } : { status: 'running', step },
          set: { state, attempts, lastError: message, claimedBy: null, claimedUntil: null, ...(giveUp ? { finishedAt: new Date() } : { notBefore: retryAt }) },
          guard: and(this.#mine(row), eq(erasures.step, step)),
          detail: message,
        })) !== undefined,
    );
    if (recorded && !giveUp) this.#onRetry?.(step, kind);
    this.#emit();
  }
}

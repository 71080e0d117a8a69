/**
 * What a step is: a function of the erasure's row and recorded state that does its
 * work (safe to run again), records what it learned in the state, and answers a
 * sentence for the timeline — or asks to be parked until later. The worker commits
 * the outcome, the next step and a transition row in one transaction.
 */
import type { AuditEvent } from '../../vault/audit.js';
import type { ErasureRow } from '../../db/schema.js';
import type { Certificate } from '../../crypto/certificate.js';
import { type CertificateState, type ErasureClass, type ErasureStatus, type StepName, TierFailure, type TierName } from '../machine.js';
import type { ErasureResources } from '../resources.js';
import type { ErasureState } from '../state.js';
import { keysTaken, targetOf } from '../state.js';
import type { ErasureScope } from '../../erasable.js';

export interface StepContext {
  readonly res: ErasureResources;
  readonly row: ErasureRow;
  /** The recorded state; a step changes it in place and the worker saves it. */
  readonly state: ErasureState;
  /** Saves the state now (progress a re-run must see even if this run dies). */
  checkpoint(): Promise<void>;
}

/** How an erasure ends, decided by certify. */
export interface Finished {
  readonly status: ErasureStatus;
  readonly certificate: Certificate;
  readonly certificateState: CertificateState;
  /** Destroy the erasure's own key (and with it the sealed request and fingerprints): no probe match is left. */
  readonly destroySealKey: boolean;
}

export interface StepDone {
  readonly detail: string;
  /** Set by classify. */
  readonly cls?: ErasureClass;
  /** Set by certify. */
  readonly final?: Finished;
  /** Audit rows committed with the step's outcome (the probe's result: probe-audit.ts). */
  readonly audit?: readonly AuditEvent[];
}

/** The step asks to be run again later (leases still outstanding). */
export class Park {
  constructor(
    readonly until: Date,
    readonly detail: string,
  ) {}
}

/** How long a step waits in place for destruction records to be durable before it parks. */
const DURABLE_WAIT_MS = 3000;
/** How long it parks then. */
const DURABLE_PARK_MS = 2000;

/**
 * Parks unless every destruction of `keyIds` is durable in the backup store's ledger
 * chain (the write is retried meanwhile, here and in the background): an erasure
 * never certifies, nor moves past its destroy step, on a destruction a lost database
 * and a restore could undo. Parking does not count as a failed attempt.
 */
export async function awaitDurable(ctx: StepContext, keyIds: readonly string[]): Promise<Park | undefined> {
  if (keyIds.length === 0) return undefined;
  const { pending, error } = await ctx.res.backups.awaitDurable(keyIds, DURABLE_WAIT_MS);
  if (pending.length === 0) return undefined;
  return new Park(
    new Date(Date.now() + DURABLE_PARK_MS),
    `${pending.length} destruction record(s) not yet durable in the backup store's ledger (${error ?? 'still being written'}): waiting, the keys are already unusable`,
  );
}

export interface Step {
  readonly name: StepName;
  run(ctx: StepContext): Promise<StepDone | Park>;
}

/** The scope a tier erases in, from what the erasure recorded so far. */
export function tierScope(ctx: StepContext, contributed: number): ErasureScope {
  const { row, state } = ctx;
  return {
    ...targetOf(row, state.keyId ?? null),
    contributed,
    otherKeys: keysTaken(state).filter((k) => k !== state.keyId),
    affected: (state.affected ?? []).map((a) => a.artifactId),
    ...(state.destruction ? { since: new Date(state.destruction.destroyedAt) } : {}),
    beforeRegenerate: (keys) => recordVersionKeys(ctx, keys),
  };
}

/** Records version keys this erasure is about to destroy (their backups are marked too), and saves the state. */
export async function recordVersionKeys(ctx: StepContext, keys: readonly string[]): Promise<void> {
  ctx.state.versionKeys = [...new Set([...(ctx.state.versionKeys ?? []), ...keys])];
  await ctx.checkpoint();
}

/** Runs one tier's erasure against what it was recorded to hold, failing hard on a zero-removal or a leftover. */
export async function eraseTier(ctx: StepContext, name: TierName): Promise<string> {
  const contributed = ctx.state.contributions?.[name] ?? 0;
  const result = await ctx.res.tiers[name].erase(tierScope(ctx, contributed));
  if (contributed > 0 && result.removed === 0) {
    throw new TierFailure(`tier ${name} reported 0 removals for a subject that contributed ${contributed} record(s) to it`);
  }
  if (result.left > 0) throw new TierFailure(`tier ${name} still holds ${result.left} readable record(s) of the subject after erasing`);
  ctx.state.removed = { ...ctx.state.removed, [name]: result.removed };
  return result.detail;
}

/**
 * The retry policy of erasure steps: what a failed step attempt was, whether the
 * erasure retries it or fails, when the next attempt runs, and the sentence stored as
 * its `last_error`. Pure: no I/O.
 *
 * - Transient (`unavailable` and other retryable LetheErrors, a database that does not
 *   answer, a step past its deadline): retried for as long as it takes, after
 *   base · 2^(attempt-1) ms, at most `cap` (LETHE_ERASURE_RETRY_BASE_MS / _CAP_MS,
 *   1 s doubling to 5 min by default). An outage of hours delays the erasure; it
 *   never fails it.
 * - Permanent (a tier that reports 0 removed or leaves something readable, a
 *   validation or invariant error — any LetheError that is not retryable): fails the
 *   erasure at once; `POST /v1/erasures/{id}/resume` takes it up again.
 * - Unclassified (`conflict`, an error lethe does not know): retried up to
 *   MAX_ATTEMPTS failed attempts of the step, then fails the erasure.
 */
import { errorCodes, isLetheError, isTransientDatabaseError } from '../errors.js';
import { type StepName, TierFailure } from './machine.js';

/** Failed attempts of one step after which an unclassified error fails the erasure. */
export const MAX_ATTEMPTS = 5;

export interface RetryPolicy {
  readonly baseMs: number;
  readonly capMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { baseMs: 1000, capMs: 300_000 };

/** How a step attempt failed: the label of `lethe_erasure_step_retries_total` too. */
export type FailureKind = 'permanent' | 'unavailable' | 'database' | 'deadline' | 'conflict' | 'other';

/** A step that ran past LETHE_ERASURE_STEP_DEADLINE_SECONDS: its claim was given up. */
export class StepDeadlineExceeded extends Error {
  constructor(step: StepName, ms: number) {
    super(`step ${step} ran past its deadline of ${Math.round(ms / 1000)} s (LETHE_ERASURE_STEP_DEADLINE_SECONDS); its claim was given up`);
    this.name = 'StepDeadlineExceeded';
  }
}

export function classifyFailure(e: unknown): FailureKind {
  if (e instanceof TierFailure) return 'permanent';
  if (e instanceof StepDeadlineExceeded) return 'deadline';
  if (isLetheError(e)) {
    if (e.code === 'conflict') return 'conflict';
    return e.retryable ? 'unavailable' : 'permanent';
  }
  if (isTransientDatabaseError(e)) return 'database';
  return 'other';
}

export function isTransientKind(kind: FailureKind): boolean {
  return kind === 'unavailable' || kind === 'database' || kind === 'deadline';
}

/** Whether the erasure fails after this attempt (`attempts` counts it). */
export function givesUp(kind: FailureKind, attempts: number): boolean {
  if (kind === 'permanent') return true;
  if (isTransientKind(kind)) return false;
  return attempts >= MAX_ATTEMPTS;
}

/** How long to wait before attempt `attempts + 1`: base · 2^(attempts-1), capped. */
export function retryDelayMs(attempts: number, policy: RetryPolicy): number {
  const exponent = Math.min(Math.max(0, attempts - 1), 40);
  return Math.min(policy.capMs, policy.baseMs * 2 ** exponent);
}

/**
 * The failure as stored in `last_error` and shown in the view: a LetheError's or a
 * tier's message (written for operators, never secret), the driver's code alone for
 * a database error, and nothing of an error lethe does not know.
 */
export function failureMessage(e: unknown, kind: FailureKind): string {
  if (e instanceof TierFailure || e instanceof StepDeadlineExceeded || isLetheError(e)) return (e as Error).message;
  if (kind === 'database') return `the database did not answer (${databaseCode(e) ?? 'connection error'})`;
  return 'internal error';
}

function databaseCode(e: unknown): string | undefined {
  for (const code of errorCodes(e)) if (/^[A-Z0-9_]{3,40}$/.test(code)) return code;
  return undefined;
}

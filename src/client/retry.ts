/**
 * Retrying a write the service refused for a moment: a retryable 409 — `erasure_in_progress`
 * (the subject's key fenced while a forget re-keys it, longer than the service waits), or
 * any 409 whose problem says `retryable: true` — nothing was stored, and the same request
 * succeeds once the re-key is over. The `Lethe` facade retries its appends (with one
 * `Idempotency-Key` across the attempts, so a caller sees one success and one stored
 * entry) and its leases; the writer (writer.ts) its leases, reservations and re-seals.
 *
 * Bounded: `attempts` in all, waiting `baseDelayMs · 2^(n-1)` (jittered to 50–100 %, at
 * most `maxDelayMs`) between them. Never retried: an erased subject (410 `subject_erased`)
 * and every other answer; a subject being erased as a whole stays refused after the
 * last attempt (409 `erasure_in_progress`), then for good (410).
 */
import { randomUUID } from 'node:crypto';
import { ServiceError } from './http.js';

export interface RetryOptions {
  /** Attempts in all, the first included (default 6; 1: no retry). */
  readonly attempts?: number;
  /** The wait before the second attempt, doubling after each (default 100 ms). */
  readonly baseDelayMs?: number;
  /** The longest wait between two attempts (default 2 s). */
  readonly maxDelayMs?: number;
}

export const DEFAULT_RETRY: Required<RetryOptions> = { attempts: 6, baseDelayMs: 100, maxDelayMs: 2_000 };

/** The options with their defaults, checked. */
export function retryPolicy(options: RetryOptions | undefined): Required<RetryOptions> {
  const policy = { ...DEFAULT_RETRY, ...options };
  if (!Number.isInteger(policy.attempts) || policy.attempts < 1) throw new TypeError('retry.attempts must be an integer of at least 1');
  if (!(policy.baseDelayMs >= 0) || !(policy.maxDelayMs >= 0)) throw new TypeError('retry delays must be non-negative numbers of milliseconds');
  return policy;
}

/** Whether the service refused a write for a moment (409, retryable): nothing was stored, the same request may succeed. */
export function isRetryableConflict(e: unknown): boolean {
  return e instanceof ServiceError && e.status === 409 && e.retryable;
}

/** The wait before attempt `attempt + 1` (1-based `attempt`). */
export function retryDelay(policy: Required<RetryOptions>, attempt: number): number {
  return Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
}

/** `fn` until it resolves, at most `policy.attempts` times, while it rejects with an error `retryable` accepts. */
export async function withRetries<T>(
  policy: Required<RetryOptions>,
  fn: (attempt: number) => Promise<T>,
  retryable: (e: unknown) => boolean = isRetryableConflict,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (e) {
      if (attempt >= policy.attempts || !retryable(e)) throw e;
      await new Promise((r) => setTimeout(r, retryDelay(policy, attempt)));
    }
  }
}

/** A fresh Idempotency-Key (`ts-` and 32 hex digits: within the service's `A-Za-z0-9._:-`, 1–128 characters). */
export function newIdempotencyKey(): string {
  return `ts-${randomUUID().replaceAll('-', '')}`;
}

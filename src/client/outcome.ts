/**
 * When a writer cannot tell whether an append was stored: the registration request
 * was sent, and what came back was no answer (connection reset or closed, timeout)
 * or a 5xx (a proxy's 502, the service's 503), every time it tried. The append may
 * be indexed or not; `LetheOutcomeUnknownError` says so, with the entry ids and the
 * registration that settles it: registering again with the same ids at the same place
 * is idempotent (`LetheWriter.retry`), so the outcome is learnt without a duplicate.
 */
import { LetheError } from '../errors.js';
import type { SegmentEntry, SegmentRegistration } from '../wire/log.js';
import { ServiceError, TLS_VERIFY_CODES } from './http.js';

/** One entry of a segment registration and the registration, as `POST /v1/segments` takes them (the wire types: src/http/wire/log.ts). */
export type { SegmentEntry, SegmentRegistration };

/** Whether an append was stored is unknown; `LetheWriter.retry(error)` settles it. Retryable. */
export class LetheOutcomeUnknownError extends LetheError {
  /** The entries whose outcome is unknown. */
  readonly entryIds: readonly string[];
  /** The registration to send again (the segment is in the store already). */
  readonly registration: SegmentRegistration;

  constructor(registration: SegmentRegistration, attempts: number, cause: unknown) {
    super(
      'unavailable',
      `the outcome of ${registration.entries.length} append(s) is unknown: the service did not answer their registration after ${attempts} attempt(s); ` +
        'retry it (LetheWriter.retry) — it is idempotent',
      { cause, retryable: true },
    );
    this.name = 'LetheOutcomeUnknownError';
    this.entryIds = registration.entries.map((e) => e.entryId);
    this.registration = registration;
  }
}

/** Network error codes that mean the request never left: nothing was delivered. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH']);

function codesOf(e: unknown): string[] {
  const codes: string[] = [];
  let current: unknown = e;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
    current = (current as { cause?: unknown }).cause;
  }
  return codes;
}

/**
 * What a failed registration attempt says about its request:
 * - `refused`: the service answered 4xx — nothing was registered, retrying will not help;
 * - `not_sent`: the connection was never made — nothing was delivered, retrying may help;
 * - `unknown`: it may have been registered (no answer after sending, a 5xx) — retry.
 */
export function attemptOutcome(e: unknown): 'refused' | 'not_sent' | 'unknown' {
  if (e instanceof ServiceError) return e.status >= 500 ? 'unknown' : 'refused';
  // a service certificate this client refused: the handshake ended before the request was written
  if (codesOf(e).some((c) => NOT_SENT.has(c) || TLS_VERIFY_CODES.has(c))) return 'not_sent';
  return 'unknown';
}

/**
 * Domain errors. Every failure that crosses a module boundary is a LetheError with a
 * stable machine `code` (the closed set below) and whether retrying can help. The HTTP
 * layer maps codes to statuses in one exhaustive switch (src/http/problem.ts).
 *
 * Messages are for operators and clients: they never carry key material, tokens or
 * record plaintext. Put identifiers in them only when the caller already knows them.
 */

export const ERROR_CODES = [
  'unauthorized',
  'forbidden',
  'payload_too_large',
  'too_many_streams',
  'validation_failed',
  'not_found',
  'method_not_allowed',
  'conflict',
  'idempotency_key_reused',
  'item_exists',
  'erasure_in_progress',
  'subject_erased',
  'artifact_erased',
  'source_erased',
  'provenance_required',
  'unknown_source',
  'near_copy',
  'not_a_match',
  'key_destroyed',
  'entry_forgotten',
  'illegal_transition',
  'segment_malformed',
  'envelope_malformed',
  'envelope_unsupported',
  'decrypt_failed',
  'key_commitment_mismatch',
  'epoch_unavailable',
  'unavailable',
  'internal',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

const RETRYABLE: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['erasure_in_progress', 'unavailable', 'too_many_streams']);

export class LetheError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; retryable?: boolean }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'LetheError';
    this.code = code;
    this.retryable = options?.retryable ?? RETRYABLE.has(code);
  }
}

/**
 * A failure that a configured value explains: what answered at an address a variable
 * names was not what lethe needs there (a web page where the object store should be, a
 * database that does not exist). Its message names the variable, then what happened
 * (`detail`: the host and port and what answered, never a credential). It is an
 * `unavailable` LetheError like any other while the service runs; at start-up the app
 * reports it as the configuration error it is (exit 2).
 */
export class MisconfiguredError extends LetheError {
  readonly variable: string;
  readonly detail: string;

  constructor(variable: string, detail: string, options?: { cause?: unknown }) {
    super('unavailable', `${variable} ${detail}`, options);
    this.name = 'MisconfiguredError';
    this.variable = variable;
    this.detail = detail;
  }
}

export function isLetheError(e: unknown, code?: ErrorCode): e is LetheError {
  return e instanceof LetheError && (code === undefined || e.code === code);
}

/**
 * SQLSTATEs and driver codes that mean the database could not run the statement right
 * now — down, restarting, in recovery or read-only, out of connections, or the
 * connection broke — and the same request may succeed later. Anything else (a bad
 * statement, a constraint, data the server refuses) is permanent.
 */
const TRANSIENT_DATABASE_CODES: ReadonlySet<string> = new Set([
  '55000', // object_not_in_prerequisite_state (a standby, recovery)
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, shutting down)
  '53300', // too_many_connections
  '25006', // read_only_sql_transaction (a read-only or demoted primary)
  '40001', // serialization_failure: the same transaction may succeed when run again
  '40P01', // deadlock_detected: one side of the deadlock was rolled back
  '55P03', // lock_not_available (lock_timeout)
  // postgres.js
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  // node sockets
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
]);

/** The SQLSTATE class 08: connection exception (08000, 08003, 08006, 08001, 08004, 08P01, …). */
const CONNECTION_EXCEPTION_CLASS = /^08[0-9A-Z]{3}$/;

/**
 * Whether a failed database call is worth retrying: the one classifier the HTTP layer
 * (503 `unavailable` with Retry-After) and the erasure worker (retry, not fail) share.
 * It looks at the error's `code` and at its causes' (drizzle wraps the driver's error),
 * at most a few levels down.
 */
export function isTransientDatabaseError(e: unknown): boolean {
  for (const code of errorCodes(e)) if (TRANSIENT_DATABASE_CODES.has(code) || CONNECTION_EXCEPTION_CLASS.test(code)) return true;
  return false;
}

/** The string `code`s of an error and of its causes, outermost first, at most five levels down (drizzle wraps the driver's error). */
export function* errorCodes(e: unknown): Generator<string> {
  let current: unknown = e;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') yield code;
    current = (current as { cause?: unknown }).cause;
  }
}

/**
 * Where a network error came from, for errors that reach no caller (an unhandled
 * rejection): the object store's and the KMS's HTTP agents mark the errors their
 * requests and sockets emit (`markSocketErrors`), before any library sees them.
 */
export type NetworkOrigin = 'object-store' | 'kms';

const ORIGIN: unique symbol = Symbol('lethe.networkOrigin');

/** Marks `e` as coming from `origin` (a non-enumerable property; nothing is printed or sent). */
export function markErrorOrigin(e: unknown, origin: NetworkOrigin): void {
  if (typeof e !== 'object' || e === null || Object.isFrozen(e) || ORIGIN in e) return;
  Object.defineProperty(e, ORIGIN, { value: origin, enumerable: false });
}

/** The origin an error (or one of its causes, a few levels down) was marked with. */
export function errorOrigin(e: unknown): NetworkOrigin | undefined {
  let current: unknown = e;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const origin = (current as { [ORIGIN]?: NetworkOrigin })[ORIGIN];
    if (origin !== undefined) return origin;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Marks every error `emitter` (a request or a socket) emits as coming from `origin`, before its other listeners run. */
export function markSocketErrors(emitter: { prependListener(event: 'error', listener: (e: Error) => void): unknown }, origin: NetworkOrigin): void {
  emitter.prependListener('error', (e) => markErrorOrigin(e, origin));
}

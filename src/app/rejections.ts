/**
 * The serving process's last line against a dropped connection: a promise that a
 * dropped connection rejected, which nothing was waiting on any more (a query or an
 * object-store / KMS request in flight when its connection broke, after its caller had
 * already moved on), must not end the process — every caller that still waits got its
 * own error, and nothing was committed by a failed call. Such a rejection is logged and
 * counted by its origin: the database (a SQLSTATE or driver code, or the postgres.js
 * query it carries), the object store or the KMS (their HTTP agents mark what their
 * sockets emit: `markSocketErrors` in src/errors.ts), or `unknown` for a socket error no
 * one marked. Any other unhandled rejection still ends the process (a supervisor
 * restarts it): it may be a bug that left state half-done, and it is not lethe's to guess.
 */
import { errorCodes, errorOrigin, isTransientDatabaseError, type NetworkOrigin } from '../errors.js';
import { describeError, type Logger } from '../observability/logger.js';

/** Where a swallowed rejection came from. */
export type RejectionOrigin = 'database' | NetworkOrigin | 'unknown';

/** Socket and timeout codes a dropped connection fails with (Node's, and the object store's deadline). */
const NETWORK_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ECONNABORTED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'LETHE_STORE_TIMEOUT',
  'UND_ERR_SOCKET',
]);

const WHAT: Readonly<Record<RejectionOrigin, string>> = {
  database: 'a database call',
  'object-store': 'an object-store request',
  kms: 'a KMS request',
  unknown: 'a network call of unknown origin',
};

/** postgres.js puts the query on every error it rejects a query with (non-enumerable `query` and `parameters`). */
function fromPostgres(e: unknown): boolean {
  return typeof e === 'object' && e !== null && Object.hasOwn(e, 'query') && Object.hasOwn(e, 'parameters');
}

function isNetworkFailure(e: unknown): boolean {
  for (const code of errorCodes(e)) if (NETWORK_CODES.has(code)) return true;
  return false;
}

/**
 * The origin of a rejection the guard carries on past, or undefined when it must end the
 * process: the object store's or the KMS's network failures (marked by their agents),
 * the database's transient failures, and unmarked socket errors (`unknown`).
 */
export function swallowedOrigin(reason: unknown): RejectionOrigin | undefined {
  const marked = errorOrigin(reason);
  if (marked) return isNetworkFailure(reason) ? marked : undefined;
  if (!isTransientDatabaseError(reason)) return undefined;
  // a bare socket code, carried by no postgres.js query: not the database's for all lethe can tell
  const driverCode = [...errorCodes(reason)].some((c) => !NETWORK_CODES.has(c));
  return driverCode || fromPostgres(reason) ? 'database' : 'unknown';
}

let installed = false;

/** Installs the guard once per process; `onSwallowed` counts what it kept from ending the process, by origin. */
export function guardUnhandledRejections(logger: Logger, onSwallowed: (origin: RejectionOrigin) => void = () => {}): void {
  if (installed) return;
  installed = true;
  process.on('unhandledRejection', (reason) => {
    const origin = swallowedOrigin(reason);
    if (origin) {
      onSwallowed(origin);
      logger.warn({ origin, err: describeError(reason) }, `${WHAT[origin]} nobody was waiting for failed when its connection dropped; the process carries on`);
      return;
    }
    logger.fatal({ err: describeError(reason) }, 'unhandled rejection: the process ends (run lethe under a supervisor)');
    logger.flush();
    // what Node does by default: end the process with the rejection as an uncaught exception
    process.nextTick(() => {
      throw reason;
    });
  });
}

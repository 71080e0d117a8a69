/**
 * The serving process's last line against a database fault: a promise that a dropped
 * connection rejected, which nothing was waiting on any more (a query in flight when
 * its connection was terminated, after its caller had already moved on), must not end
 * the process — every caller that still waits got its own error, and nothing was
 * committed by a failed call. Such a rejection is logged and counted. Any other
 * unhandled rejection still ends the process (a supervisor restarts it): it may be a
 * bug that left state half-done, and it is not lethe's to guess.
 */
import { isTransientDatabaseError } from '../errors.js';
import { describeError, type Logger } from '../observability/logger.js';

let installed = false;

/** Installs the guard once per process; `onSwallowed` counts what it kept from ending the process. */
export function guardUnhandledRejections(logger: Logger, onSwallowed: () => void = () => {}): void {
  if (installed) return;
  installed = true;
  process.on('unhandledRejection', (reason) => {
    if (isTransientDatabaseError(reason)) {
      onSwallowed();
      logger.warn({ err: describeError(reason) }, 'a database call nobody was waiting for failed when its connection dropped; the process carries on');
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

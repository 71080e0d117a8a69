/**
 * isTransientDatabaseError: the one classifier of database failures the HTTP layer
 * (503 with Retry-After) and the erasure worker (retry rather than fail) share. Every
 * code it names is transient, through drizzle's wrapping too; everything else is not.
 */
import { describe, expect, it } from 'vitest';
import { isTransientDatabaseError, LetheError } from '../src/errors.js';

const TRANSIENT: ReadonlyArray<[string, string]> = [
  ['08000', 'connection_exception'],
  ['08003', 'connection_does_not_exist'],
  ['08006', 'connection_failure'],
  ['08001', 'sqlclient_unable_to_establish_sqlconnection'],
  ['08004', 'sqlserver_rejected_establishment_of_sqlconnection'],
  ['08007', 'transaction_resolution_unknown'],
  ['08P01', 'protocol_violation'],
  ['55000', 'object_not_in_prerequisite_state (recovery, a standby)'],
  ['57P01', 'admin_shutdown'],
  ['57P02', 'crash_shutdown'],
  ['57P03', 'cannot_connect_now'],
  ['53300', 'too_many_connections'],
  ['25006', 'read_only_sql_transaction'],
  ['40001', 'serialization_failure: the transaction may succeed when run again'],
  ['40P01', 'deadlock_detected: one side was rolled back'],
  ['55P03', 'lock_not_available (lock_timeout)'],
  ['CONNECTION_DESTROYED', 'postgres.js: the connection was destroyed'],
  ['CONNECTION_CLOSED', 'postgres.js: the server closed the connection'],
  ['CONNECTION_ENDED', 'postgres.js: the pool was ended'],
  ['CONNECT_TIMEOUT', 'postgres.js: connecting timed out'],
  ['ECONNREFUSED', 'nothing listens'],
  ['ECONNRESET', 'the peer reset the connection'],
  ['EPIPE', 'writing to a closed socket'],
  ['ETIMEDOUT', 'a socket timed out'],
];

const PERMANENT: ReadonlyArray<[string, string]> = [
  ['23505', 'unique_violation'],
  ['23503', 'foreign_key_violation'],
  ['22021', 'character_not_in_repertoire (NUL in text)'],
  ['22P02', 'invalid_text_representation'],
  ['42601', 'syntax_error'],
  ['42P01', 'undefined_table'],
  ['53100', 'disk_full'],
  ['0A000', 'feature_not_supported'],
  ['080', 'too short to be a class 08 SQLSTATE'],
  ['08abc', 'lower case is no SQLSTATE'],
  ['ENOENT', 'a missing file'],
];

const withCode = (code: string) => Object.assign(new Error('driver error'), { code });

describe('isTransientDatabaseError', () => {
  for (const [code, what] of TRANSIENT) {
    it(`${code} (${what}) is transient, bare and as drizzle wraps it`, () => {
      expect(isTransientDatabaseError(withCode(code))).toBe(true);
      expect(isTransientDatabaseError(new Error('Failed query: select 1', { cause: withCode(code) }))).toBe(true);
      expect(isTransientDatabaseError({ code })).toBe(true);
    });
  }

  for (const [code, what] of PERMANENT) {
    it(`${code} (${what}) is not transient`, () => {
      expect(isTransientDatabaseError(withCode(code))).toBe(false);
      expect(isTransientDatabaseError(new Error('Failed query: select 1', { cause: withCode(code) }))).toBe(false);
    });
  }

  it('errors without a code, non-errors and lethe errors are not transient', () => {
    for (const e of [new Error('plain'), undefined, null, 'ECONNRESET', 42, { code: 57 }, new LetheError('unavailable', 'x')]) {
      expect(isTransientDatabaseError(e), String(e)).toBe(false);
    }
  });

  it('looks a few causes deep, not forever (a cause cycle ends)', () => {
    const deep = new Error('a', { cause: new Error('b', { cause: new Error('c', { cause: withCode('57P03') }) }) });
    expect(isTransientDatabaseError(deep)).toBe(true);
    const cyclic: { code?: string; cause?: unknown } = {};
    cyclic.cause = cyclic;
    expect(isTransientDatabaseError(cyclic)).toBe(false);
  });
});

/**
 * The serving process carries on past a dropped connection's rejection nothing waited
 * for, and still ends on any other unhandled rejection, as Node does by default. Found
 * by the fault suite: a replica exited with an unhandled 57P01 while connections were
 * terminated. Each swallowed rejection is logged and counted by its origin: a socket
 * reset under an object-store or a KMS request is theirs, never the database's (issue
 * 29), and a bare socket error nobody marked is of unknown origin.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { swallowedOrigin } from '../../src/app/rejections.js';
import { markErrorOrigin } from '../../src/errors.js';
import { CLI } from '../support/process.js';

const run = (kind: string) => spawnSync(process.execPath, [...CLI.slice(0, 2), 'test/support/rejection-guard.ts', kind], { encoding: 'utf8', timeout: 30_000 });

describe('the unhandled-rejection guard of lethe serve', () => {
  it("a dropped connection's rejection that nothing waited for is logged and counted, and the process lives on", () => {
    const r = run('dropped');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('alive, swallowed 1 (database)');
    expect(r.stderr).toContain('a database call nobody was waiting for failed');
    expect(r.stderr).toContain('57P01');
  });

  const origins = [
    {
      kind: 'object-store',
      what: "a socket reset under an object-store request is counted as the object store's",
      says: 'an object-store request nobody was waiting for failed',
    },
    { kind: 'kms', what: "a socket reset under a KMS request is counted as the KMS's", says: 'a KMS request nobody was waiting for failed' },
    { kind: 'unknown', what: 'a bare socket reset nobody marked is of unknown origin', says: 'a network call of unknown origin nobody was waiting for failed' },
  ];
  for (const o of origins) {
    it(`${o.what}, never called the database's; the process lives on`, () => {
      const r = run(o.kind);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toContain(`alive, swallowed 1 (${o.kind})`);
      expect(r.stderr).toContain(o.says);
      expect(r.stderr).toContain('ECONNRESET');
      expect(r.stderr).not.toContain('database');
    });
  }

  it('any other unhandled rejection still ends the process, logged as fatal', () => {
    const r = run('bug');
    expect(r.status).not.toBe(0);
    expect(r.stdout).not.toContain('alive');
    expect(r.stderr).toContain('unhandled rejection: the process ends');
  });

  it("classifies by origin: driver codes and postgres.js queries are the database's, marked errors their agent's, a marked non-network error ends the process", () => {
    const pg = (code: string) => Object.assign(new Error('x'), { code });
    expect(swallowedOrigin(pg('57P01'))).toBe('database');
    expect(swallowedOrigin(pg('CONNECTION_CLOSED'))).toBe('database');
    expect(swallowedOrigin(Object.defineProperties(pg('ECONNRESET'), { query: { value: 'select 1' }, parameters: { value: [] } }))).toBe('database');
    expect(swallowedOrigin(pg('ECONNRESET'))).toBe('unknown');
    const marked = (code: string, origin: 'object-store' | 'kms') => {
      const e = pg(code);
      markErrorOrigin(e, origin);
      return e;
    };
    expect(swallowedOrigin(marked('ECONNRESET', 'object-store'))).toBe('object-store');
    expect(swallowedOrigin(marked('LETHE_STORE_TIMEOUT', 'object-store'))).toBe('object-store');
    expect(swallowedOrigin(marked('EPIPE', 'kms'))).toBe('kms');
    expect(swallowedOrigin(new Error('wrapped', { cause: marked('ETIMEDOUT', 'kms') }))).toBe('kms');
    expect(swallowedOrigin(marked('ERR_SOMETHING', 'kms'))).toBeUndefined();
    expect(swallowedOrigin(new TypeError('a bug'))).toBeUndefined();
  });
});

/**
 * What lethe says of a DATABASE_URL in its messages: the hosts and ports (every host of
 * the multi-host form `postgres://u:p@h1:5432,h2:5432/db`, which `new URL` refuses),
 * never the user's password, even where a driver repeats it.
 */
import { describe, expect, it } from 'vitest';
import { databaseAddress, databaseFailure, withoutPassword } from '../../src/db/client.js';

describe('DATABASE_URL in messages', () => {
  it('names every host and port of a multi-host URL, the default port where none is given', () => {
    expect(databaseAddress('postgres://lethe:s3cret@10.0.0.1:5433,10.0.0.2/lethe?target_session_attrs=primary')).toBe('10.0.0.1:5433,10.0.0.2:5432');
    expect(databaseAddress('postgresql://lethe@db.internal/lethe')).toBe('db.internal:5432');
    expect(databaseAddress('postgres://lethe@[::1]:6000/lethe')).toBe('[::1]:6000');
    expect(databaseAddress('postgres://lethe@/lethe?host=/var/run/postgresql')).toBe('/var/run/postgresql');
    expect(databaseAddress('not a url')).toBe('its server');
    // a password holding '@', '/' or '?' unencoded: the user part ends at the last '@'; nothing of it is named
    expect(databaseAddress('postgres://u:p@ss@h1/db')).toBe('h1:5432');
    expect(databaseAddress('postgres://u:pa/ss@h1,h2:6000/db')).toBe('h1:5432,h2:6000');
    expect(databaseAddress('postgres://u:pa?ss@h1/db')).toBe('h1:5432');
    // what is not a host is not named
    expect(databaseAddress('postgres://u:pa/ss')).toBe('its server');
    expect(databaseAddress('postgres://h%zz/db')).toBe('its server');
  });

  it('blots out the password of a multi-host URL, percent-encoded or not, wherever a message repeats it', () => {
    const url = 'postgres://lethe:p%40ss%2Fw0rd-x@127.0.0.1:6001,127.0.0.1:6002/lethe?target_session_attrs=primary';
    expect(withoutPassword(url, 'connect failed for p@ss/w0rd-x at 127.0.0.1')).toBe('connect failed for *** at 127.0.0.1');
    const failure = databaseFailure(url, Object.assign(new Error('password p@ss/w0rd-x refused'), { code: '28P01' }));
    expect(failure.message).toContain('127.0.0.1:6001,127.0.0.1:6002');
    expect(failure.message).not.toContain('p@ss/w0rd-x');
    // the encoded form is blotted too, and a password with a raw '@'
    expect(withoutPassword(url, 'url was p%40ss%2Fw0rd-x')).toBe('url was ***');
    expect(withoutPassword('postgres://u:p@ss@h1/db', 'refused p@ss for u')).toBe('refused *** for u');
  });
});

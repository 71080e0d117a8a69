/**
 * Calls between replicas are signed with the replicas' own key (src/vault/replica-calls.ts):
 * a call verifies once; a replay, another body, path or method, another vault's key, a
 * time outside the window or a malformed header is refused `unauthorized`.
 */
import { describe, expect, it } from 'vitest';
import { isLetheError } from '../../src/errors.js';
import { ReplicaCalls, SKEW_MS } from '../../src/vault/replica-calls.js';

const key = () => new Uint8Array(32).fill(7);
const body = new TextEncoder().encode('{"query":"garden"}');
const refused = (fn: () => void) => {
  try {
    fn();
  } catch (e) {
    return isLetheError(e, 'unauthorized');
  }
  return false;
};

describe('ReplicaCalls', () => {
  it('verifies a signed call once; its replay is refused', () => {
    const a = new ReplicaCalls(key());
    const b = new ReplicaCalls(key());
    const header = a.sign('POST', '/internal/v1/rank', body);
    expect(() => b.verify(header, 'POST', '/internal/v1/rank', body)).not.toThrow();
    expect(refused(() => b.verify(header, 'POST', '/internal/v1/rank', body))).toBe(true);
  });

  it('refuses another body, path or method, and another vault’s key', () => {
    const a = new ReplicaCalls(key());
    const b = new ReplicaCalls(key());
    const other = new ReplicaCalls(new Uint8Array(32).fill(8));
    const h = () => a.sign('POST', '/internal/v1/rank', body);
    expect(refused(() => b.verify(h(), 'POST', '/internal/v1/rank', new TextEncoder().encode('{"query":"gardens"}')))).toBe(true);
    expect(refused(() => b.verify(h(), 'POST', '/internal/v1/other', body))).toBe(true);
    expect(refused(() => b.verify(h(), 'PUT', '/internal/v1/rank', body))).toBe(true);
    expect(refused(() => other.verify(h(), 'POST', '/internal/v1/rank', body))).toBe(true);
  });

  it('refuses a call signed outside the time window, and malformed headers', () => {
    const a = new ReplicaCalls(key());
    const b = new ReplicaCalls(key());
    const now = Date.now();
    expect(refused(() => b.verify(a.sign('POST', '/p', body, now - SKEW_MS - 1), 'POST', '/p', body, now))).toBe(true);
    expect(refused(() => b.verify(a.sign('POST', '/p', body, now + SKEW_MS + 1), 'POST', '/p', body, now))).toBe(true);
    expect(() => b.verify(a.sign('POST', '/p', body, now - SKEW_MS + 1000), 'POST', '/p', body, now)).not.toThrow();
    for (const h of [undefined, '', 'v1', 'v2.1.AAAAAAAAAAAAAAAAAAAAAA.x', `v1.${now}.short.x`, `v1.x.AAAAAAAAAAAAAAAAAAAAAA.x`]) {
      expect(refused(() => b.verify(h, 'POST', '/p', body, now))).toBe(true);
    }
  });
});

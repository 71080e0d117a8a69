/**
 * Calls between replicas are signed with the replicas' own key (src/vault/replica-calls.ts):
 * a header verifies once, before the body is read, for the replica it names; the body
 * must be the one it signed. A replay, another path, method or receiver, another vault's
 * key, a time outside the window, a malformed header or another body is refused
 * `unauthorized`; an address is vouched for only under a replica's MAC of it.
 */
import { describe, expect, it } from 'vitest';
import { isLetheError } from '../../src/errors.js';
import { ReplicaCalls, SKEW_MS } from '../../src/vault/replica-calls.js';

const key = () => new Uint8Array(32).fill(7);
const body = new TextEncoder().encode('{"query":"garden"}');
const B = 'http://10.0.0.2:8787';
const refused = (fn: () => void) => {
  try {
    fn();
  } catch (e) {
    return isLetheError(e, 'unauthorized');
  }
  return false;
};

describe('ReplicaCalls', () => {
  it('verifies a signed call once, for the replica it names, and its body; a replay is refused', () => {
    const a = new ReplicaCalls(key());
    const b = new ReplicaCalls(key());
    const header = a.sign('POST', '/internal/v1/rank', `${B}/`, body);
    const digest = b.verifyHeader(header, 'POST', '/internal/v1/rank', B);
    expect(() => b.verifyBody(digest, body)).not.toThrow();
    expect(refused(() => b.verifyBody(digest, new TextEncoder().encode('{"query":"gardens"}')))).toBe(true);
    expect(refused(() => b.verifyHeader(header, 'POST', '/internal/v1/rank', B))).toBe(true);
  });

  it('refuses another path, method or receiver, and another vault’s key', () => {
    const a = new ReplicaCalls(key());
    const b = new ReplicaCalls(key());
    const other = new ReplicaCalls(new Uint8Array(32).fill(8));
    const h = () => a.sign('POST', '/internal/v1/rank', B, body);
    expect(refused(() => b.verifyHeader(h(), 'POST', '/internal/v1/other', B))).toBe(true);
    expect(refused(() => b.verifyHeader(h(), 'PUT', '/internal/v1/rank', B))).toBe(true);
    expect(refused(() => b.verifyHeader(h(), 'POST', '/internal/v1/rank', 'http://10.0.0.3:8787'))).toBe(true);
    expect(refused(() => other.verifyHeader(h(), 'POST', '/internal/v1/rank', B))).toBe(true);
  });

  it('refuses a call signed outside the time window, and malformed headers', () => {
    const a = new ReplicaCalls(key());
    const b = new ReplicaCalls(key());
    const now = Date.now();
    expect(refused(() => b.verifyHeader(a.sign('POST', '/p', B, body, now - SKEW_MS - 1), 'POST', '/p', B, now))).toBe(true);
    expect(refused(() => b.verifyHeader(a.sign('POST', '/p', B, body, now + SKEW_MS + 1), 'POST', '/p', B, now))).toBe(true);
    expect(() => b.verifyHeader(a.sign('POST', '/p', B, body, now - SKEW_MS + 1000), 'POST', '/p', B, now)).not.toThrow();
    for (const h of [undefined, '', 'v1', 'v2.1.AAAAAAAAAAAAAAAAAAAAAA.x.y', `v1.${now}.short.x.y`, `v1.x.AAAAAAAAAAAAAAAAAAAAAA.x.y`]) {
      expect(refused(() => b.verifyHeader(h, 'POST', '/p', B, now))).toBe(true);
    }
  });

  it("vouches for an address only under a replica's MAC of its id and that address", () => {
    const a = new ReplicaCalls(key());
    const other = new ReplicaCalls(new Uint8Array(32).fill(8));
    const mac = a.addressMac('r1', 'http://10.0.0.5:8787');
    expect(new ReplicaCalls(key()).vouches('r1', 'http://10.0.0.5:8787', mac)).toBe(true);
    expect(a.vouches('r2', 'http://10.0.0.5:8787', mac)).toBe(false);
    expect(a.vouches('r1', 'http://10.0.0.6:8787', mac)).toBe(false);
    expect(a.vouches('r1', 'http://10.0.0.5:8787', other.addressMac('r1', 'http://10.0.0.5:8787'))).toBe(false);
    expect(a.vouches('r1', 'http://10.0.0.5:8787', null)).toBe(false);
    expect(a.vouches('r1', 'http://10.0.0.5:8787', 'not base64url!')).toBe(false);
  });

  it('an answer verifies only from the replica called, for that call, with that body', () => {
    const a = new ReplicaCalls(key());
    const b = new ReplicaCalls(key());
    const other = new ReplicaCalls(new Uint8Array(32).fill(8));
    const call = a.sign('POST', '/p', B, body);
    const answer = new TextEncoder().encode('{"hits":[]}');
    const signed = b.signAnswer(call, B, answer);
    expect(() => a.verifyAnswer(call, B, signed, answer)).not.toThrow();
    expect(refused(() => a.verifyAnswer(call, 'http://10.0.0.3:8787', signed, answer))).toBe(true);
    expect(refused(() => a.verifyAnswer(a.sign('POST', '/p', B, body), B, signed, answer))).toBe(true);
    expect(refused(() => a.verifyAnswer(call, B, signed, new TextEncoder().encode('{"hits":[1]}')))).toBe(true);
    expect(refused(() => a.verifyAnswer(call, B, other.signAnswer(call, B, answer), answer))).toBe(true);
    expect(refused(() => a.verifyAnswer(call, B, null, answer))).toBe(true);
  });
});

/**
 * Contract tests of the key routes over HTTP: status codes, field names and formats
 * from API.md, leases, validity, break-glass destruction and KEK rotation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, ok } from '../support/http.js';
import { openTestApp, type TestApp } from '../support/vault.js';

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const BASE64URL_NO_PAD = /^[A-Za-z0-9_-]+$/;
const LEASE_TTL_SECONDS = 120;

interface KeyInfo {
  subject: string;
  keyId: string;
  state: string;
  createdAt: string;
}
interface Lease {
  keyId: string;
  dek: string;
  leaseId: string;
  expiresAt: string;
}

let t: TestApp;
beforeAll(async () => {
  t = await openTestApp({ extraEnv: { LETHE_LEASE_TTL_SECONDS: String(LEASE_TTL_SECONDS) } });
});
afterAll(async () => {
  await t?.close();
});

/** Every error response seen in this file, checked for problem+json at the end. */
const errors: Array<{ what: string; res: Response }> = [];

const putKey = (subject: string) => t.call('PUT', `/v1/subjects/${subject}/key`, { role: 'writer' });
const lease = async (subject: string) => ok<Lease>(await t.call('POST', `/v1/subjects/${subject}/key/lease`, { role: 'writer' }), 200);
const validity = async (keyIds: string[]) =>
  (await ok<{ keys: Record<string, string> }>(await t.call('POST', '/v1/keys/validity', { role: 'backup', body: { keyIds } }), 200)).keys;
const destroy = (keyId: string, reason = 'contract test') => t.call('POST', `/v1/admin/keys/${keyId}/destroy`, { role: 'admin', body: { reason } });
const dekBytes = (l: Lease) => Buffer.from(l.dek, 'base64url');

describe('PUT /v1/subjects/{subject}/key', () => {
  it('creates the key with 201, then returns the same key with 200', async () => {
    const first = await ok<KeyInfo>(await putKey('user:put-1'), 201);
    expect(first).toEqual({ subject: 'user:put-1', keyId: expect.any(String), state: 'active', createdAt: expect.stringMatching(RFC3339) });
    expect(Math.abs(Date.parse(first.createdAt) - Date.now())).toBeLessThan(60_000);

    const again = await ok<KeyInfo>(await putKey('user:put-1'), 200);
    expect(again).toEqual(first);
  });

  it('gives different subjects different keys', async () => {
    const a = await ok<KeyInfo>(await putKey('user:put-a'), 201);
    const b = await ok<KeyInfo>(await putKey('user:put-b'), 201);
    expect(a.keyId).not.toBe(b.keyId);
  });

  it('accepts every character the subject alphabet allows', async () => {
    const subject = 'Az09._:@+-x';
    const info = await ok<KeyInfo>(await t.call('PUT', `/v1/subjects/${encodeURIComponent(subject)}/key`, { role: 'writer' }), 201);
    expect(info.subject).toBe(subject);
  });
});

describe('POST /v1/subjects/{subject}/key/lease', () => {
  it('hands out a 32-byte DEK as unpadded base64url with a lease id and an expiry one TTL ahead, not cacheable', async () => {
    const before = Date.now();
    const res = await t.call('POST', '/v1/subjects/user:lease-1/key/lease', { role: 'writer' });
    expect(res.headers.get('cache-control')).toBe('no-store');
    const l = await ok<Lease>(res, 200);
    const after = Date.now();
    expect(Object.keys(l).sort()).toEqual(['dek', 'expiresAt', 'keyId', 'leaseId']);
    expect(l.dek).toMatch(BASE64URL_NO_PAD);
    expect(l.dek).not.toContain('=');
    expect(l.dek).toHaveLength(43);
    expect(dekBytes(l)).toHaveLength(32);
    expect(dekBytes(l).equals(Buffer.alloc(32))).toBe(false);
    expect(l.leaseId).toEqual(expect.any(String));
    expect(l.expiresAt).toMatch(RFC3339);
    const exp = Date.parse(l.expiresAt);
    expect(exp).toBeGreaterThanOrEqual(before + LEASE_TTL_SECONDS * 1000 - 1000);
    expect(exp).toBeLessThanOrEqual(after + LEASE_TTL_SECONDS * 1000 + 1000);
  });

  it('hands out the same DEK and key on every lease, with a fresh lease id each time', async () => {
    const a = await lease('user:lease-2');
    const b = await lease('user:lease-2');
    expect(b.keyId).toBe(a.keyId);
    expect(b.dek).toBe(a.dek);
    expect(b.leaseId).not.toBe(a.leaseId);
    // the same DEK also when it comes from the database rather than the cache
    t.app.cache.clear();
    const c = await lease('user:lease-2');
    expect(c.dek).toBe(a.dek);
  });

  it('leases the key PUT created, and PUT afterwards reports the key the lease used', async () => {
    const put = await ok<KeyInfo>(await putKey('user:lease-3'), 201);
    const l = await lease('user:lease-3');
    expect(l.keyId).toBe(put.keyId);
    const l2 = await lease('user:lease-4');
    const put2 = await ok<KeyInfo>(await putKey('user:lease-4'), 200);
    expect(put2.keyId).toBe(l2.keyId);
  });

  it('different subjects get different DEKs', async () => {
    const a = await lease('user:lease-5');
    const b = await lease('user:lease-6');
    expect(a.dek).not.toBe(b.dek);
  });
});

describe('POST /v1/keys/validity and POST /v1/admin/keys/{keyId}/destroy', () => {
  it('reports active, destroyed and unknown keys', async () => {
    const live = await lease('user:valid-live');
    const dead = await lease('user:valid-dead');
    await ok(await destroy(dead.keyId), 200);
    const keys = await validity([live.keyId, dead.keyId, 'key_neverexisted']);
    expect(keys).toEqual({ [live.keyId]: 'active', [dead.keyId]: 'destroyed', key_neverexisted: 'unknown' });
  });

  it('answers each id once when the request repeats it', async () => {
    const live = await lease('user:valid-dup');
    expect(await validity([live.keyId, live.keyId])).toEqual({ [live.keyId]: 'active' });
  });

  it('destroy answers the destruction, and the next lease for the subject gets a new key and DEK', async () => {
    const old = await lease('user:destroy-1');
    const d = await ok<Record<string, unknown>>(await destroy(old.keyId, 'subject asked'), 200);
    expect(d).toMatchObject({ keyId: old.keyId, state: 'destroyed', destroyedAt: expect.stringMatching(RFC3339), wrappedEpoch: expect.any(Number) });
    // the lease handed out before destruction is reported as the holders' deadline
    expect(d.leasedUntil).toBe(old.expiresAt);
    const next = await lease('user:destroy-1');
    expect(next.keyId).not.toBe(old.keyId);
    expect(next.dek).not.toBe(old.dek);
    const put = await ok<KeyInfo>(await putKey('user:destroy-1'), 200);
    expect(put.keyId).toBe(next.keyId);
    expect(await validity([old.keyId, next.keyId])).toEqual({ [old.keyId]: 'destroyed', [next.keyId]: 'active' });
  });

  it('destroy is idempotent: a second call answers 200 with the original destruction time', async () => {
    const l = await lease('user:destroy-2');
    const first = await ok<{ destroyedAt: string }>(await destroy(l.keyId), 200);
    const second = await ok<{ destroyedAt: string; state: string }>(await destroy(l.keyId, 'again'), 200);
    expect(second.state).toBe('destroyed');
    expect(second.destroyedAt).toBe(first.destroyedAt);
  });

  it('destroying a key that never existed is 404 not_found', async () => {
    const unknown = await destroy('key_neverexisted0000000000');
    errors.push({ what: 'destroy unknown key', res: unknown.clone() });
    await expectProblem(unknown, 404, 'not_found');
  });
});

describe('KEK rotation over HTTP', () => {
  it('rotate answers {epoch, rewrapped, retired, resumed} and the listing shows the old epoch retired', async () => {
    const before = await ok<{ epochs: Array<{ epoch: number; state: string }> }>(await t.call('GET', '/v1/admin/kek', { role: 'admin' }), 200);
    const active = before.epochs.find((e) => e.state === 'active');
    expect(active).toBeDefined();

    const liveKeys = (await t.app.epochs.list()).reduce((n, e) => n + e.keys, 0);
    expect(liveKeys).toBeGreaterThan(0);
    const r = await ok<{ epoch: number; rewrapped: number; retired: number[]; resumed: boolean }>(
      await t.call('POST', '/v1/admin/kek/rotate', { role: 'admin' }),
      200,
    );
    expect(Object.keys(r).sort()).toEqual(['epoch', 'resumed', 'retired', 'rewrapped']);
    expect(r.epoch).toBe(active!.epoch + 1);
    expect(r.rewrapped).toBe(liveKeys);
    expect(r.retired).toEqual([active!.epoch]);
    expect(r.resumed).toBe(false);

    const after = await ok<{ epochs: Array<Record<string, unknown>> }>(await t.call('GET', '/v1/admin/kek', { role: 'admin' }), 200);
    const old = after.epochs.find((e) => e.epoch === active!.epoch);
    const now = after.epochs.find((e) => e.epoch === r.epoch);
    expect(old).toMatchObject({ state: 'retired', createdAt: expect.stringMatching(RFC3339), retiredAt: expect.stringMatching(RFC3339), keys: 0 });
    expect(now).toMatchObject({ state: 'active', createdAt: expect.stringMatching(RFC3339), keys: liveKeys });
    expect(now).not.toHaveProperty('retiredAt');
    expect(after.epochs.map((e) => e.epoch)).toEqual([...after.epochs.map((e) => e.epoch as number)].sort((a, b) => a - b));
  });

  it('a subject leased before a rotation leases the same DEK after it, also when unwrapped under the new epoch', async () => {
    const before = await lease('user:rotate-same');
    await ok(await t.call('POST', '/v1/admin/kek/rotate', { role: 'admin' }), 200);
    const cached = await lease('user:rotate-same');
    expect(cached.keyId).toBe(before.keyId);
    expect(cached.dek).toBe(before.dek);
    t.app.cache.clear();
    const fresh = await lease('user:rotate-same');
    expect(fresh.keyId).toBe(before.keyId);
    expect(fresh.dek).toBe(before.dek);
  });
});

describe('what leaks and what errors look like', () => {
  it('/metrics never shows a lease: no DEK, key id, lease id or subject id', async () => {
    const subject = 'user:metrics-secret-subject';
    const l = await lease(subject);
    await lease(subject);
    await t.call('POST', `/v1/subjects/${subject}/nope`, { role: 'writer' });
    const res = await t.call('GET', '/metrics', { role: 'none' });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('lethe_http_requests_total');
    for (const needle of [l.dek, dekBytes(l).toString('base64'), dekBytes(l).toString('hex'), l.keyId, l.leaseId, 'metrics-secret-subject']) {
      expect(text).not.toContain(needle);
    }
  });

  it('every error in this file was application/problem+json with a matching status', async () => {
    errors.push({ what: 'unknown route', res: await t.call('GET', '/v1/nothing-here', { role: 'writer' }) });
    errors.push({ what: 'no token', res: await t.call('PUT', '/v1/subjects/user:x/key', { role: 'none' }) });
    errors.push({ what: 'wrong role', res: await t.call('PUT', '/v1/subjects/user:x/key', { role: 'backup' }) });
    errors.push({ what: 'bad subject', res: await t.call('PUT', '/v1/subjects/a%20b/key', { role: 'writer' }) });
    errors.push({ what: 'bad body', res: await t.call('POST', '/v1/keys/validity', { role: 'backup', rawBody: '{' }) });
    errors.push({ what: 'destroy without reason', res: await t.call('POST', '/v1/admin/keys/key_x/destroy', { role: 'admin', body: {} }) });
    expect(errors.length).toBeGreaterThanOrEqual(6);
    for (const { what, res } of errors) {
      expect(res.status, what).toBeGreaterThanOrEqual(400);
      expect(res.headers.get('content-type'), what).toMatch(/^application\/problem\+json/);
      const body = (await res.json()) as Record<string, unknown>;
      expect(body, what).toMatchObject({
        type: expect.any(String),
        title: expect.any(String),
        status: res.status,
        detail: expect.any(String),
        code: expect.any(String),
      });
    }
  });
});

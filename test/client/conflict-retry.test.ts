/**
 * Writes the service refuses for a moment — a retryable 409, while a forget re-keys the
 * subject — retried by the clients themselves (issue 31): the `Lethe` facade's appends
 * under one Idempotency-Key (one success, one stored entry), the writer's leases and
 * re-seals of the same entry under the subject's new key. An erased subject (410) and
 * other refusals are never retried.
 *
 * First against a scripted HTTP service (what was sent, attempt by attempt), then against
 * a vault served over real HTTP on PostgreSQL: appends through the facade and the writer
 * racing repeated forgets of the same subject's other entries, with the service's own wait
 * for a re-key turned off so that the clients do meet the 409s.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FsObjectStore, Lethe, ServiceError } from '../../src/client/index.js';
import { isRetryableConflict } from '../../src/client/retry.js';
import { TOKENS } from '../support/vault.js';
import { type ServedVault, serveTestVault } from './served.js';

const problem = (code: string, status: number, retryable?: boolean) =>
  JSON.stringify({
    type: `urn:lethe:problem:${code}`,
    title: code,
    status,
    detail: `${code} for a test`,
    code,
    ...(retryable === undefined ? {} : { retryable }),
  });
const APPENDED = JSON.stringify({ entryId: 'entry_AAAAAAAAAAAAAAAAAAAAAA', keyId: 'key_AAAAAAAAAAAAAAAAAAAAAA', seq: 3 });

/** A service answering each request with the next of `answers` (the last one from then on), recording each Idempotency-Key. */
async function scripted(answers: ReadonlyArray<readonly [number, string]>): Promise<{ url: string; keys: Array<string | undefined>; close(): Promise<void> }> {
  const keys: Array<string | undefined> = [];
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      keys.push(req.headers['idempotency-key'] as string | undefined);
      const [status, body] = answers[Math.min(keys.length, answers.length) - 1]!;
      res.writeHead(status, { 'content-type': status < 300 ? 'application/json' : 'application/problem+json' }).end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    keys,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

const fast = { attempts: 4, baseDelayMs: 5, maxDelayMs: 20 };

describe('the facade retries a retryable 409 itself', () => {
  it('under one Idempotency-Key, made up once, until the append succeeds', async () => {
    const s = await scripted([
      [409, problem('erasure_in_progress', 409)],
      [409, problem('conflict', 409, true)],
      [201, APPENDED],
    ]);
    try {
      const lethe = new Lethe({ baseUrl: s.url, token: 'fake-token', retry: fast });
      const appended = await lethe.entries.append('user:42', { text: 'prefers window seats' });
      expect(appended).toEqual({ entryId: 'entry_AAAAAAAAAAAAAAAAAAAAAA', keyId: 'key_AAAAAAAAAAAAAAAAAAAAAA', seq: 3, replayed: false });
      expect(s.keys).toHaveLength(3);
      expect(s.keys[0]).toMatch(/^ts-[0-9a-f]{32}$/);
      expect(new Set(s.keys).size).toBe(1);
      // the caller's own key is the one sent
      s.keys.length = 0;
      await lethe.entries.append('user:42', { text: 'prefers window seats' }, { idempotencyKey: 'mine-1' });
      expect(s.keys).toEqual(['mine-1', 'mine-1', 'mine-1']);
    } finally {
      await s.close();
    }
  });

  it('never an erased subject (410), a plain conflict or a reused key; and at most `attempts` times', async () => {
    for (const [status, code, retryable] of [
      [410, 'subject_erased', undefined],
      [409, 'conflict', undefined],
      [409, 'idempotency_key_reused', undefined],
      [409, 'erasure_in_progress', false],
    ] as const) {
      const s = await scripted([
        [status, problem(code, status, retryable)],
        [201, APPENDED],
      ]);
      try {
        const lethe = new Lethe({ baseUrl: s.url, token: 'fake-token', retry: fast });
        const e = await lethe.entries.append('user:42', { text: 'x' }).catch((err: unknown) => err);
        expect(e).toBeInstanceOf(ServiceError);
        expect(e).toMatchObject({ code, status });
        expect(isRetryableConflict(e)).toBe(false);
        expect(s.keys, code).toHaveLength(1);
      } finally {
        await s.close();
      }
    }
    const s = await scripted([[409, problem('erasure_in_progress', 409)]]);
    try {
      const lethe = new Lethe({ baseUrl: s.url, token: 'fake-token', retry: { ...fast, attempts: 3 } });
      await expect(lethe.entries.append('user:42', { text: 'x' })).rejects.toMatchObject({ code: 'erasure_in_progress', status: 409, retryable: true });
      expect(s.keys).toHaveLength(3);
      // a lease too
      await expect(lethe.subjects.lease('user:42')).rejects.toMatchObject({ code: 'erasure_in_progress' });
      expect(s.keys).toHaveLength(6);
    } finally {
      await s.close();
    }
  });
});

describe('appends racing forgets of the same subject, on a real service', () => {
  let v: ServedVault;
  let lethe: Lethe;
  /** How often the service refused a write because a re-key held the subject's key. */
  let refused = 0;

  beforeAll(async () => {
    v = await serveTestVault({ extraEnv: { LETHE_LEASE_TTL_SECONDS: '600' } });
    lethe = new Lethe({ baseUrl: v.baseUrl, tokens: { writer: TOKENS.writer, eraser: TOKENS.eraser, admin: TOKENS.admin } });
    const keys = v.t.app.keys;
    // the service does not wait out a re-key (it answers 409 at once): the clients meet every refusal
    keys.awaitRekey = async () => {
      refused++;
      return false;
    };
    // each re-key holds the subject's key fenced a while, so that the appends meet it
    const vectors = v.t.app.vectors;
    const reseal = vectors.reseal.bind(vectors);
    vectors.reseal = async (...args: Parameters<typeof reseal>) => {
      await new Promise((r) => setTimeout(r, 250));
      return reseal(...args);
    };
  }, 180_000);
  afterAll(async () => {
    await v?.close();
  });

  it('the service says a refusal while the key is fenced is retryable (problem+json `retryable: true`); an erased subject is not', async () => {
    const subject = `user:fenced-${randomBytes(4).toString('hex')}`;
    const { keyId } = await lethe.entries.append(subject, { text: 'a first memory' });
    const post = () =>
      fetch(`${v.baseUrl}/v1/subjects/${subject}/entries`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKENS.writer}`, 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'a second memory' }),
      });
    await v.t.app.keys.fenceKey(keyId, 'test');
    const fenced = await post();
    expect(fenced.status).toBe(409);
    expect(await fenced.json()).toMatchObject({ code: 'erasure_in_progress', retryable: true });
    await v.t.app.keys.unfenceKey(keyId, 'test');
    const { erasureId } = await lethe.erase(subject);
    await lethe.erasures.wait(erasureId);
    const erased = await post();
    expect(erased.status).toBe(410);
    expect(await erased.json()).not.toHaveProperty('retryable');
  });

  const words = (n = 6) => Array.from({ length: n }, () => `w${randomBytes(5).toString('hex')}`).join(' ');

  it('16 appends through the facade and 16 through the writer, racing repeated forgets: none fails, one stored entry each', { timeout: 180_000 }, async () => {
    const subject = `user:race-${randomBytes(4).toString('hex')}`;
    const doomed: string[] = [];
    for (let i = 0; i < 4; i++) doomed.push((await lethe.entries.append(subject, { text: words() })).entryId);
    const writer = lethe.writer({ store: new FsObjectStore(path.join(v.t.dataDir, 'objects'), v.t.config.bucket), segmentMaxAgeMs: 5 });
    try {
      // the writer holds a lease and sequence numbers under the subject's current key before the forgets begin
      await writer.append(subject, { text: words() });
      const forgets = (async () => {
        const statuses = [];
        for (const id of doomed) {
          const { erasureId } = await lethe.forget(id);
          statuses.push((await lethe.erasures.wait(erasureId)).status);
        }
        return statuses;
      })();
      const keyed = Array.from({ length: 16 }, (_, i) => ({ key: `race-${i}-${randomBytes(4).toString('hex')}`, text: words() }));
      const sealed = Array.from({ length: 16 }, () => words());
      const stagger = (i: number) => new Promise((r) => setTimeout(r, i * 60));
      const outcomes = await Promise.allSettled([
        ...keyed.map(async ({ key, text }, i) => {
          await stagger(i);
          return lethe.entries.append(subject, { text }, { idempotencyKey: key });
        }),
        ...sealed.map(async (text, i) => {
          await stagger(i);
          return writer.append(subject, { text });
        }),
      ]);
      expect(await forgets).toEqual(['completed', 'completed', 'completed', 'completed']);
      const failures = outcomes.filter((o) => o.status === 'rejected').map((o) => String((o as PromiseRejectedResult).reason));
      expect(failures).toEqual([]);
      // the race did happen: the service refused writes while re-keys held the key
      expect(refused).toBeGreaterThan(0);
      const results = outcomes.map((o) => (o as PromiseFulfilledResult<{ entryId: string }>).value);
      // one stored entry per idempotency key: a retry under each answers the entry it stored
      for (const [i, { key, text }] of keyed.entries()) {
        const again = await lethe.entries.append(subject, { text }, { idempotencyKey: key });
        expect(again).toMatchObject({ entryId: results[i]!.entryId, replayed: true });
      }
      const stored = [];
      for await (const e of lethe.entries.list(subject)) stored.push(e);
      const ids = stored.map((e) => e.entryId);
      expect(ids.filter((id) => doomed.includes(id))).toEqual([]);
      for (const r of results) expect(ids.filter((id) => id === r.entryId)).toHaveLength(1);
      expect(stored.map((e) => e.text).sort()).toEqual(expect.arrayContaining([...keyed.map((k) => k.text), ...sealed]));
      expect(stored).toHaveLength(1 + 32);
    } finally {
      await writer.close();
    }
  });
});

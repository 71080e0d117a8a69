/**
 * Forgetting one memory racing an erasure of the whole subject, on PostgreSQL and MinIO:
 * the forget's re-key fences the subject's key for its moment; an erasure of the
 * subject requested meanwhile finds that key fenced and counts on it. Whatever the
 * re-key then does — switch to a new key, or give up — the subject's key must stay
 * fenced while that erasure is open (no lease, no append), and the erasure must be able
 * to destroy it: the re-key gives the key up to the erasure.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { minioEnv } from '../backups/support.js';
import { expectProblem, ok } from '../support/http.js';
import { openTestApp, type TestApp } from '../support/vault.js';
import { tag } from './fixtures.js';

describe('a forget racing an erasure of the whole subject', () => {
  let t: TestApp;

  beforeAll(async () => {
    // no worker: the subject erasure stays open (pending) while the test looks
    t = await openTestApp({ extraEnv: { ...minioEnv().env }, app: { erasureWorker: false } });
  });
  afterAll(async () => {
    await t?.close();
  });

  const append = async (subject: string, text: string) =>
    (await ok<{ entryId: string }>(t.call('POST', `/v1/subjects/${subject}/entries`, { body: { text } }), 201)).entryId;

  /** Runs `fn` with the vectors' reseal (which a re-key calls between its fence and its switch) preceded by `during`. */
  async function withinRekey<T>(during: () => Promise<void>, fn: () => Promise<T>): Promise<T> {
    const vectors = t.app.vectors;
    const original = vectors.reseal.bind(vectors);
    vectors.reseal = async (...args: Parameters<typeof original>) => {
      await during();
      return original(...args);
    };
    try {
      return await fn();
    } finally {
      vectors.reseal = original;
    }
  }

  const requestErasure = async (subject: string) =>
    (await ok<{ erasureId: string }>(t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject } }), 202)).erasureId;

  it('a re-key overtaken by an erasure of the subject gives up and leaves the old key fenced to the erasure: no lease, no append; the erasure completes', {
    timeout: 120_000,
  }, async () => {
    const A = `user:race-switch-${tag()}`;
    const forgotten = await append(A, `Keeps a spare house key under the blue flowerpot ${tag(4)}`);
    await append(A, `Takes the 7:40 ferry to work ${tag(4)}`);
    const old = (await t.app.keys.findKey(A))!;
    expect(old.state).toBe('active');
    let erasureId = '';
    await expect(
      withinRekey(
        async () => {
          erasureId = await requestErasure(A);
        },
        () => t.app.log.rekeyKey(old.keyId, 'active', { exclude: [forgotten], actor: 'test' }),
      ),
    ).rejects.toMatchObject({ code: 'conflict' });
    expect(erasureId).not.toBe('');
    expect(await t.app.keys.findKey(A)).toEqual({ keyId: old.keyId, state: 'fenced' });
    await expectProblem(t.call('POST', `/v1/subjects/${A}/key/lease`), 409, 'erasure_in_progress');
    await expectProblem(t.call('POST', `/v1/subjects/${A}/entries`, { body: { text: 'learnt during the erasure' } }), 409, 'erasure_in_progress');
    const done = await t.app.erasures.settle(erasureId);
    expect(done.status, JSON.stringify(done.steps)).toBe('completed');
    expect(await t.app.keys.findKey(A)).toBeUndefined();
  });

  it("a re-key that gives up while the erasure is open does not lift the erasure's fence", async () => {
    const A = `user:race-giveup-${tag()}`;
    const forgotten = await append(A, `a memory to forget ${tag(4)}`);
    await append(A, `a memory to keep ${tag(4)}`);
    const old = (await t.app.keys.findKey(A))!;
    await expect(
      withinRekey(
        async () => {
          await requestErasure(A);
          throw new Error('the re-key fails after the erasure was requested');
        },
        () => t.app.log.rekeyKey(old.keyId, 'active', { exclude: [forgotten], actor: 'test' }),
      ),
    ).rejects.toThrow(/re-key fails/);
    const live = await t.app.keys.findKey(A);
    expect(live).toEqual({ keyId: old.keyId, state: 'fenced' });
    await expectProblem(t.call('POST', `/v1/subjects/${A}/key/lease`), 409, 'erasure_in_progress');
  });

  it("an erasure of the subject that reached its destroy step while the re-key ran destroys the subject's key and completes", {
    timeout: 120_000,
  }, async () => {
    const A = `user:race-late-${tag()}`;
    const forgotten = await append(A, `Bought a rescue greyhound named Comet ${tag(4)}`);
    await append(A, `Volunteers at the food bank on Saturdays ${tag(4)}`);
    const old = (await t.app.keys.findKey(A))!;
    const keys = t.app.keys;
    const destroyKey = keys.destroyKey.bind(keys);
    let entered!: () => void;
    const reached = new Promise<void>((r) => (entered = r));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    // the erasure reaches its destroy step (fingerprinted and fenced the old key) and waits there until the re-key has switched
    keys.destroyKey = async (keyId, options) => {
      if (keyId === old.keyId) {
        entered();
        await gate;
      }
      return destroyKey(keyId, options);
    };
    let erasureId = '';
    let draining: Promise<number> | undefined;
    try {
      await expect(
        withinRekey(
          async () => {
            erasureId = await requestErasure(A);
            draining = t.app.erasures.drain();
            await reached;
          },
          () => t.app.log.rekeyKey(old.keyId, 'active', { exclude: [forgotten], actor: 'test' }),
        ),
      ).rejects.toMatchObject({ code: 'conflict' });
    } finally {
      release();
      keys.destroyKey = destroyKey;
    }
    await draining;
    const done = await t.app.erasures.settle(erasureId);
    expect(done.status, JSON.stringify({ steps: done.steps, left: done.left })).toBe('completed');
    expect(await t.app.keys.findKey(A)).toBeUndefined();
    await expectProblem(t.call('POST', `/v1/subjects/${A}/key/lease`), 410, 'subject_erased');
  });

  it('a forget whose re-key died after fencing the key (a crash: nobody lifts that fence) re-keys on its retry and the subject writes again', {
    timeout: 60_000,
  }, async () => {
    const A = `user:race-crash-${tag()}`;
    const forgotten = await append(A, `Hid the birthday present in the attic crawlspace ${tag(4)}`);
    await append(A, `Runs along the canal every Tuesday ${tag(4)}`);
    const old = (await t.app.keys.findKey(A))!;
    const { erasureId } = await ok<{ erasureId: string }>(t.call('DELETE', `/v1/entries/${forgotten}`, { role: 'eraser' }), 202);
    // what the destroy step's re-key leaves when its process dies between its fence and its switch
    await t.app.keys.fenceKey(old.keyId, 'erasure');
    const done = await t.app.erasures.settle(erasureId, 20_000);
    expect(done.status, JSON.stringify(done.steps)).toBe('completed');
    const live = await t.app.keys.findKey(A);
    expect(live?.state).toBe('active');
    expect(live?.keyId).not.toBe(old.keyId);
    expect((await t.call('POST', `/v1/subjects/${A}/entries`, { body: { text: 'written after the forget' } })).status).toBe(201);
  });

  it("an append that meets a forget's re-key waits for it and is recorded under the new key (no write fails because of a forget)", async () => {
    const A = `user:race-append-${tag()}`;
    const forgotten = await append(A, `a memory to forget ${tag(4)}`);
    await append(A, `a memory to keep ${tag(4)}`);
    const old = (await t.app.keys.findKey(A))!;
    let during: Promise<Response> | undefined;
    let settledDuring = false;
    const result = await withinRekey(
      async () => {
        // the key is fenced now: an append started here meets the fence
        during = t.call('POST', `/v1/subjects/${A}/entries`, { body: { text: `written during the re-key ${tag(4)}` } });
        void during.then(() => (settledDuring = true));
        await new Promise((r) => setTimeout(r, 300));
      },
      () => t.app.log.rekeyKey(old.keyId, 'active', { exclude: [forgotten], actor: 'test' }),
    );
    expect(settledDuring).toBe(false);
    const written = await ok<{ entryId: string; keyId: string }>(during!, 201);
    expect(written.keyId).toBe(result.newKeyId);
    expect((await ok<{ text: string }>(t.call('GET', `/v1/entries/${written.entryId}`), 200)).text).toMatch(/written during the re-key/);
  });

  it('an append in flight at the fence that commits under the old key during the re-key is moved along: the re-key completes and the entry reads', async () => {
    const A = `user:race-late-${tag()}`;
    const forgotten = await append(A, `a memory to forget ${tag(4)}`);
    await append(A, `a memory to keep ${tag(4)}`);
    const old = (await t.app.keys.findKey(A))!;
    // sealed under the old key before the fence, indexed after the re-key read the subject's entries
    const inFlight = await t.app.log.prepareEntry(A, { text: `in flight at the fence ${tag(4)}` }, 'writer');
    const result = await withinRekey(
      async () => {
        expect(await t.app.log.insertEntry(t.app.db.db, inFlight, {})).toBe(true);
        t.app.log.settleEntry(inFlight);
      },
      () => t.app.log.rekeyKey(old.keyId, 'active', { exclude: [forgotten], actor: 'test' }),
    );
    expect(result.oldKeyId).toBe(old.keyId);
    const read = await ok<{ text: string }>(t.call('GET', `/v1/entries/${inFlight.appended.entryId}`), 200);
    expect(read.text).toMatch(/in flight at the fence/);
    expect((await t.app.log.get(inFlight.appended.entryId)).keyId).toBe(result.newKeyId);
    await expectProblem(t.call('GET', `/v1/entries/${forgotten}`), 410, 'key_destroyed');
  });

  it('without an erasure, a re-key that gives up lifts its own fence, and one that switches leaves the new key active', async () => {
    const A = `user:race-none-${tag()}`;
    const forgotten = await append(A, `a memory to forget ${tag(4)}`);
    await append(A, `a memory to keep ${tag(4)}`);
    const old = (await t.app.keys.findKey(A))!;
    await expect(
      withinRekey(
        async () => {
          throw new Error('the re-key fails');
        },
        () => t.app.log.rekeyKey(old.keyId, 'active', { exclude: [forgotten], actor: 'test' }),
      ),
    ).rejects.toThrow(/re-key fails/);
    expect(await t.app.keys.findKey(A)).toEqual({ keyId: old.keyId, state: 'active' });
    const result = await t.app.log.rekeyKey(old.keyId, 'active', { exclude: [forgotten], actor: 'test' });
    expect(await t.app.keys.findKey(A)).toEqual({ keyId: result.newKeyId, state: 'active' });
  });
});

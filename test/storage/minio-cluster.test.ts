/**
 * lethe on an erasure-coded MinIO cluster (infra/minio-cluster.ts: 4 servers × 2
 * drives, one erasure set; writes need 5 drives, reads 4), `S3_ENDPOINT` naming all four
 * servers. Invariants: with one server killed (SIGKILL; the one calls went to first)
 * every write lands within 30 s and everything acknowledged reads back — the log, a
 * backup under Object Lock, an erasure to `completed`; with two killed the cluster keeps
 * its reads but not its write quorum, which /readyz says (`objectStoreWrites: failed`,
 * 503) and a write answers 503 problem+json, recording nothing; with a server back,
 * writes resume. Just after a server dies the others can refuse a write for a moment
 * (MinIO's 503 SlowDownWrite, seen here for up to about 10 s): lethe answers that 503
 * unavailable, and the writes here are retried as a client would, for 30 s at most.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MinioCluster, startMinioCluster } from '../../infra/minio-cluster.js';
import { minioBinary } from '../../infra/minio-server.js';
import { logEntries } from '../../src/db/schema.js';
import { isLetheError } from '../../src/errors.js';
import { S3ObjectStore } from '../../src/storage/s3.js';
import { until } from '../support/until.js';
import { openTestApp, type TestApp } from '../support/vault.js';

const tag = () => randomBytes(4).toString('hex');
const TIMEOUT = 180_000;

/** Runs `write` until it is not refused as unavailable, as a client retries a 503; 30 s at most. */
async function landed<T>(write: () => Promise<T>, refused: (v: unknown) => boolean): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    let last: unknown;
    try {
      last = await write();
      if (!refused(last)) return last as T;
    } catch (e) {
      if (!refused(e)) throw e;
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`still refused after 30 s: ${String(last)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe('the object store on a MinIO cluster of four servers', () => {
  let cluster: MinioCluster;
  let store: S3ObjectStore;
  const stored = new Map<string, Uint8Array>();
  const refusedKeys: string[] = [];
  const put = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const key = `objects/${tag()}`;
      const body = randomBytes(1024 + i);
      await landed(
        () => store.put(key, body),
        (e) => isLetheError(e, 'unavailable'),
      );
      stored.set(key, body);
    }
  };
  const allReadBack = async () => {
    for (const [key, body] of stored) expect(Buffer.from(await store.get(key)).equals(Buffer.from(body))).toBe(true);
  };

  beforeAll(async () => {
    cluster = await startMinioCluster(minioBinary());
    store = new S3ObjectStore({
      endpoint: cluster.endpoints.join(','),
      accessKey: cluster.accessKey,
      secretKey: cluster.secretKey,
      bucket: `cluster-${tag()}`,
    });
    await store.ensureBucket({ versioned: true });
  }, TIMEOUT);
  afterAll(async () => {
    await cluster?.stop();
  }, TIMEOUT);

  it('with the server calls went to killed, every write lands on the others and everything acknowledged reads back', { timeout: TIMEOUT }, async () => {
    await put(10);
    expect(await store.writable()).toBe(true);
    await cluster.kill(0);
    await put(10);
    await allReadBack();
    expect(await store.writable()).toBe(true);
    await store.ping();
  });

  it('with two servers killed: reads go on, writes are refused as unavailable, and writable() says so', { timeout: TIMEOUT }, async () => {
    await cluster.kill(1);
    await until('the write quorum lost', async () => (await store.writable()) === false);
    const refusedKey = `objects/refused-${tag()}`;
    const refused = await store.put(refusedKey, randomBytes(64)).catch((e: unknown) => e);
    expect(isLetheError(refused, 'unavailable')).toBe(true);
    await allReadBack();
    refusedKeys.push(refusedKey);
  });

  it('with a server back, the cluster takes writes again', { timeout: TIMEOUT }, async () => {
    await cluster.restart(0);
    await until('the write quorum', async () => (await store.writable()) === true);
    await put(5);
    await allReadBack();
    // the write refused without its quorum left nothing behind
    for (const key of refusedKeys) expect(await store.head(key)).toBeUndefined();
  });

  it('a store naming one server only is unavailable once that server is killed (the failover is what keeps the others in reach)', {
    timeout: TIMEOUT,
  }, async () => {
    // server 3, never restarted: a server just started can refuse bucket changes for a while (503)
    const one = new S3ObjectStore({ endpoint: cluster.endpoints[3]!, accessKey: cluster.accessKey, secretKey: cluster.secretKey, bucket: `cluster-${tag()}` });
    // the cluster just lost and regained servers: a bucket change may be refused for a moment (503), as a client would retry
    await landed(
      () => one.ensureBucket(),
      (e) => isLetheError(e, 'unavailable'),
    );
    await cluster.kill(3);
    const refused = await one.put(`objects/${tag()}`, randomBytes(64)).catch((e: unknown) => e);
    expect(isLetheError(refused, 'unavailable')).toBe(true);
    // refused on a new connection, reset on one the client kept alive from before the kill
    expect((refused as Error).message).toMatch(/is unreachable \((ECONNREFUSED|ECONNRESET)/);
  });
});

describe('lethe served on a MinIO cluster of four servers', () => {
  let cluster: MinioCluster;
  let t: TestApp;
  const texts: string[] = [];
  const subject = `user:cluster-${tag()}`;
  const erased = `user:cluster-gone-${tag()}`;
  const append = async (s: string, text: string) => {
    const res = await landed(
      () => t.call('POST', `/v1/subjects/${encodeURIComponent(s)}/entries`, { body: { text } }),
      (r) => (r as Response).status === 503,
    );
    expect(res.status).toBe(201);
    if (s === subject) texts.push(text);
  };

  beforeAll(async () => {
    cluster = await startMinioCluster(minioBinary());
    t = await openTestApp({
      extraEnv: {
        S3_ENDPOINT: cluster.endpoints.join(','),
        S3_ACCESS_KEY: cluster.accessKey,
        S3_SECRET_KEY: cluster.secretKey,
        S3_BUCKET: `lethe-cluster-${tag()}`,
        S3_BACKUP_BUCKET: `lethe-cluster-bak-${tag()}`,
        LETHE_LEASE_TTL_SECONDS: '1',
      },
      app: { erasureWorker: false },
    });
  }, TIMEOUT);
  afterAll(async () => {
    await t?.close();
    await cluster?.stop();
  }, TIMEOUT);

  it('is ready: the cluster takes writes, the ledger chain is under Object Lock', { timeout: TIMEOUT }, async () => {
    const res = await t.call('GET', '/readyz', { role: 'none' });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { checks: Record<string, string> }).checks).toMatchObject({ objectStore: 'ok', objectStoreWrites: 'ok', ledgerLock: 'ok' });
  });

  it('with one server killed: appends, a backup and an erasure complete; every acknowledged entry reads back', { timeout: TIMEOUT }, async () => {
    for (let i = 0; i < 5; i++) {
      await append(subject, `stays ${i} ${tag()}`);
      await append(erased, `goes ${i} ${tag()}`);
    }
    await cluster.kill(0);
    for (let i = 5; i < 10; i++) {
      await append(subject, `stays ${i} ${tag()}`);
      await append(erased, `goes ${i} ${tag()}`);
    }
    const ready = await t.call('GET', '/readyz', { role: 'none' });
    expect(ready.status).toBe(200);
    const { backupId } = await t.app.backups.run();
    expect(backupId).toBeTruthy();
    const { erasureId } = await t.app.erasures.request({ subject: erased }, 'eraser');
    const view = await t.app.erasures.settle(erasureId);
    expect(view.status).toBe('completed');
    expect(view.steps.find((s) => s.name === 'propagate')?.status).toBe('done');
    await expect(t.app.log.list(erased)).rejects.toSatisfy((e) => isLetheError(e, 'subject_erased'));
    expect((await t.app.log.list(subject)).map((e) => e.text)).toEqual(texts);
  });

  it('with two servers killed: /readyz answers 503 naming the lost write quorum, an append answers 503 problem+json and records nothing, reads go on', {
    timeout: TIMEOUT,
  }, async () => {
    await cluster.kill(1);
    await until('readiness to fall', async () => (await t.call('GET', '/readyz', { role: 'none' })).status === 503);
    const res = await t.call('GET', '/readyz', { role: 'none' });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { checks: Record<string, string> }).checks).toMatchObject({ objectStore: 'ok', objectStoreWrites: 'failed' });
    const before = (await t.app.db.db.select().from(logEntries)).length;
    const refused = await t.call('POST', `/v1/subjects/${encodeURIComponent(subject)}/entries`, { body: { text: 'not stored' } });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect(((await refused.json()) as { code: string }).code).toBe('unavailable');
    expect((await t.app.db.db.select().from(logEntries)).length).toBe(before);
    expect((await t.app.log.list(subject)).map((e) => e.text)).toEqual(texts);
  });

  it('with a server back: ready again, and appends resume', { timeout: TIMEOUT }, async () => {
    await cluster.restart(1);
    await until('readiness', async () => (await t.call('GET', '/readyz', { role: 'none' })).status === 200);
    await append(subject, `after ${tag()}`);
    expect((await t.app.log.list(subject)).map((e) => e.text)).toEqual(texts);
  });
});

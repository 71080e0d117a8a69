/** /readyz follows the object store: a vault on its own MinIO, which is then stopped. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logEntries } from '../../src/db/schema.js';
import { minioBinary, type MinioServer, startMinio } from '../../infra/minio-server.js';
import { openTestApp, type TestApp } from '../support/vault.js';

describe('readiness with MinIO', () => {
  let minio: MinioServer;
  let t: TestApp;
  beforeAll(async () => {
    minio = await startMinio(minioBinary());
    t = await openTestApp({
      extraEnv: { S3_ENDPOINT: minio.endpoint, S3_ACCESS_KEY: minio.accessKey, S3_SECRET_KEY: minio.secretKey, S3_BUCKET: 'lethe-ready' },
    });
  });
  afterAll(async () => {
    await t?.close();
    await minio?.stop();
  });

  it('creates its bucket at start-up and is ready while MinIO answers', async () => {
    expect(t.app.objects.kind).toBe('s3');
    const res = await t.call('GET', '/readyz', { role: 'none' });
    expect(res.status).toBe(200);
    // the backup bucket was created with Object Lock, so the ledger chain is retained; the chain holds what was stored; nothing is pending
    expect(await res.json()).toEqual({
      status: 'ok',
      checks: { database: 'ok', objectStore: 'ok', objectStoreWrites: 'ok', ledgerLock: 'ok', ledgerChain: 'ok', ledgerWrites: 'ok', listener: 'ok' },
      // this replica: listening, its index whole, its destruction cursor caught up, its erasure worker running
      replica: expect.objectContaining({ id: t.app.erasures.replica, listener: 'up', index: 'ready', appliedSeq: 0, erasureWorker: 'running' }),
    });
    expect((await t.call('POST', '/v1/subjects/user:ready/entries', { body: { text: 'before the outage' } })).status).toBe(201);
  });

  it('answers 503 naming the object store once MinIO is gone, and keys still lease', async () => {
    const lease = await t.app.keys.lease('user:ready', 'writer');
    await minio.stop({ keepData: true });
    const res = await t.call('GET', '/readyz', { role: 'none' });
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ status: 'unavailable', checks: { database: 'ok', objectStore: 'failed' } });
    const again = await t.app.keys.lease('user:ready', 'writer');
    expect(again.keyId).toBe(lease.keyId);
  });

  it('an append while MinIO is gone answers 503 problem+json and records nothing', async () => {
    const res = await t.call('POST', '/v1/subjects/user:ready/entries', { body: { text: 'not stored' } });
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(((await res.json()) as { code: string }).code).toBe('unavailable');
    const rows = await t.app.db.db.select().from(logEntries);
    expect(rows).toHaveLength(1); // only the entry acknowledged before the outage
  });

  it('once MinIO is back, appends resume and everything acknowledged before is readable', async () => {
    const refused = await t.app.log.append('user:ready', { text: 'refused while down' }, 'writer').catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'unavailable' });
    minio = await startMinio(minioBinary(), minio);
    const res = await t.call('GET', '/readyz', { role: 'none' });
    expect(res.status).toBe(200);
    const after = await t.call('POST', '/v1/subjects/user:ready/entries', { body: { text: 'after the outage' } });
    expect(after.status).toBe(201);
    expect((await t.app.log.list('user:ready')).map((e) => e.text)).toEqual(['before the outage', 'after the outage']);
  });
});

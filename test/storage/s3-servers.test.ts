/**
 * The S3 adapter with several servers in `S3_ENDPOINT`, on two real MinIO servers (each
 * holding the bucket) and two that misbehave (one resets every connection, one never
 * answers): a refused or reset connection goes on to the next server within the same
 * call, but a create-if-absent is not repeated; a call that timed out is not repeated,
 * its error names the server that timed out, and the next call goes to the next server;
 * `writable()` asks every server at once (one probe however many ask, its answer kept),
 * moves calls to one that says it takes writes, and says nothing of a server whose
 * answer is not MinIO's.
 */
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../infra/local-server.js';
import { minioBinary, type MinioServer, startMinio } from '../../infra/minio-server.js';
import { isLetheError } from '../../src/errors.js';
import { S3ObjectStore } from '../../src/storage/s3.js';

const bucket = `servers-${randomBytes(4).toString('hex')}`;

describe('an S3 store naming several servers', () => {
  let a: MinioServer;
  let b: MinioServer;
  let web: Server;
  let reset: TcpServer;
  let silent: TcpServer;
  const held: Socket[] = [];
  const at = (server: Server | TcpServer) => {
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('no port');
    return `http://127.0.0.1:${address.port}`;
  };
  const storeOn = (endpoints: string[], timeoutMs?: number) =>
    new S3ObjectStore({ endpoint: endpoints.join(','), accessKey: a.accessKey, secretKey: a.secretKey, bucket, ...(timeoutMs ? { timeoutMs } : {}) });

  beforeAll(async () => {
    [a, b] = await Promise.all([startMinio(minioBinary()), startMinio(minioBinary())]);
    await storeOn([a.endpoint]).ensureBucket();
    await storeOn([b.endpoint]).ensureBucket();
    web = createServer((_req, res) => res.writeHead(404, { 'content-type': 'text/html' }).end('<html>not here</html>'));
    await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
    reset = createTcpServer((socket) => socket.resetAndDestroy());
    silent = createTcpServer((socket) => held.push(socket));
    await Promise.all([reset, silent].map((server) => new Promise<void>((r) => server.listen(0, '127.0.0.1', r))));
  }, 120_000);
  afterAll(async () => {
    a?.unpause();
    await Promise.all([a?.stop(), b?.stop()]);
    web?.close();
    reset?.close();
    for (const socket of held) socket.destroy();
    silent?.close();
  });

  it('a refused connection goes on to the next server in the same call', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const store = storeOn([closed, b.endpoint]);
    const body = randomBytes(100);
    await store.put('objects/refused-first', body);
    expect(Buffer.from(await storeOn([b.endpoint]).get('objects/refused-first')).equals(body)).toBe(true);
  });

  it('a reset connection goes on to the next server in the same call; a create-if-absent is not repeated, and the next call goes on', async () => {
    const store = storeOn([at(reset), b.endpoint]);
    const body = randomBytes(100);
    await store.put('objects/reset-first', body);
    expect(Buffer.from(await storeOn([b.endpoint]).get('objects/reset-first')).equals(body)).toBe(true);

    const once = storeOn([at(reset), b.endpoint]);
    const refused = await once.putIfAbsent('objects/created-once', body).catch((e: unknown) => e);
    expect(isLetheError(refused, 'unavailable')).toBe(true);
    expect((refused as Error).message).toContain(at(reset));
    expect(await storeOn([b.endpoint]).head('objects/created-once')).toBeUndefined();
    expect(await once.putIfAbsent('objects/created-once', body)).toBe(true);
    expect(await once.putIfAbsent('objects/created-once', body)).toBe(false);
  });

  it('every server refusing is one unavailable error that says so', async () => {
    const store = storeOn([`http://127.0.0.1:${await freePort()}`, `http://127.0.0.1:${await freePort()}`]);
    const refused = await store.put('objects/nowhere', randomBytes(10)).catch((e: unknown) => e);
    expect(isLetheError(refused, 'unavailable')).toBe(true);
    expect((refused as Error).message).toMatch(/is unreachable \(ECONNREFUSED.*and so is every other server it names/);
  });

  it('a call that timed out is not repeated elsewhere; the next call goes to the next server', { timeout: 60_000 }, async () => {
    const store = storeOn([a.endpoint, b.endpoint], 1_000);
    a.pause();
    try {
      const timedOut = await store.put('objects/after-timeout', randomBytes(10)).catch((e: unknown) => e);
      expect(isLetheError(timedOut, 'unavailable')).toBe(true);
      expect((timedOut as Error).message).toMatch(/did not answer in time/);
      expect((timedOut as Error).message).toContain(`S3_ENDPOINT ${a.endpoint}:`);
      expect(await storeOn([b.endpoint]).head('objects/after-timeout')).toBeUndefined();
      await store.put('objects/after-timeout', randomBytes(10));
      expect(await storeOn([b.endpoint]).head('objects/after-timeout')).toMatchObject({ size: 10 });
    } finally {
      a.unpause();
    }
  });

  it('writable() is true on a MinIO that holds its quorum, undefined where the answer is not MinIO', async () => {
    expect(await storeOn([b.endpoint]).writable()).toBe(true);
    expect(await storeOn([at(web)]).writable()).toBeUndefined();
  });

  it('writable() sends one probe to each server however many ask at once, and keeps its answer 2 s', async () => {
    let asked = 0;
    const health = createServer((_req, res) => {
      asked++;
      res.writeHead(200, { 'x-minio-write-quorum': '5' }).end();
    });
    await new Promise<void>((r) => health.listen(0, '127.0.0.1', r));
    try {
      const store = storeOn([at(health)]);
      const answers = await Promise.all(Array.from({ length: 20 }, () => store.writable()));
      expect(answers.every((a) => a === true)).toBe(true);
      expect(await store.writable()).toBe(true);
      expect(asked).toBe(1);
    } finally {
      health.close();
    }
  });

  it('writable() asks every server at once: a server that never answers does not hide one that does, and calls move there', { timeout: 30_000 }, async () => {
    const store = storeOn([at(silent), b.endpoint], 1_000);
    expect(await store.writable()).toBe(true);
    // the next call goes straight to the server that answered: no timeout on the silent one first
    await store.put('objects/after-probe', randomBytes(10));
    expect(await storeOn([b.endpoint]).head('objects/after-probe')).toMatchObject({ size: 10 });
  });
});

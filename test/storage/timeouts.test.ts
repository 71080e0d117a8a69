/**
 * Object-store calls have deadlines: a store that stops answering makes a call fail
 * `unavailable` (retryable) instead of hanging it, and the store works again once it
 * answers. MinIO is this file's own server, frozen with SIGSTOP (the kernel still
 * accepts connections; nothing answers) and thawed with SIGCONT; the local store is
 * stalled by an object that is a FIFO nobody writes (open() blocks).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { open } from 'node:fs/promises';
import type http from 'node:http';
import type { Socket } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { minioBinary, type MinioServer, startMinio } from '../../infra/minio-server.js';
import { isLetheError, type LetheError } from '../../src/errors.js';
import { allowanceMs, StoreTimeout, timedTransport } from '../../src/storage/deadline.js';
import { FsObjectStore } from '../../src/storage/fs.js';
import { S3ObjectStore } from '../../src/storage/s3.js';
import { tempDir } from '../support/vault.js';

const TIMEOUT_MS = 1000;
const bucketName = () => `lethe-timeouts-${randomBytes(4).toString('hex')}`;

/** The call's rejection, and how long it took to come. */
async function failure(call: Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = Date.now();
  try {
    await call;
  } catch (error) {
    return { error, ms: Date.now() - started };
  }
  throw new Error('the call succeeded; it was expected to fail');
}

function expectUnavailable(error: unknown, pattern: RegExp): void {
  expect(isLetheError(error, 'unavailable'), String(error)).toBe(true);
  expect((error as LetheError).retryable).toBe(true);
  expect((error as LetheError).message).toMatch(pattern);
}

describe('MinIO that stops answering (SIGSTOP)', () => {
  let minio: MinioServer;
  let store: S3ObjectStore;

  beforeAll(async () => {
    minio = await startMinio(minioBinary());
    store = new S3ObjectStore({
      endpoint: minio.endpoint,
      accessKey: minio.accessKey,
      secretKey: minio.secretKey,
      bucket: bucketName(),
      timeoutMs: TIMEOUT_MS,
    });
    await store.ensureBucket({ versioned: true });
  }, 120_000);

  afterAll(async () => {
    minio?.unpause();
    await minio?.stop();
  });

  it('fails put, get, head, list and ping with unavailable after the timeout, and works again once it answers', { timeout: 60_000 }, async () => {
    await store.put('before', new Uint8Array([1, 2, 3]));
    minio.pause();
    try {
      for (const call of [
        () => store.put('during', new Uint8Array([4, 5, 6])),
        () => store.get('before'),
        () => store.head('before'),
        async () => {
          for await (const _ of store.list('')) void _;
        },
        () => store.ping(),
      ]) {
        const { error, ms } = await failure(call());
        // the idle timeout (1000 ms) or the call's deadline (1000 ms plus 1 ms for its few bytes), whichever fires
        // first on a loaded machine, or the torn socket: unavailable either way
        expectUnavailable(error, /did not answer in time \(100[01] ms; LETHE_STORE_TIMEOUT_MS\)|is unreachable/);
        // it waited for the deadline, and did not hang past it
        expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
        expect(ms).toBeLessThan(TIMEOUT_MS * 8);
      }
    } finally {
      minio.unpause();
    }
    await store.put('after', new Uint8Array([7, 8, 9]));
    expect([...(await store.get('after'))]).toEqual([7, 8, 9]);
    expect([...(await store.get('before'))]).toEqual([1, 2, 3]);
    await store.ping();
  });

  it('destroys a timed-out request with its socket: nothing stays open to the frozen server', { timeout: 30_000 }, async () => {
    const { transport, agent } = timedTransport(false, 500);
    const url = new URL(minio.endpoint);
    minio.pause();
    try {
      let socket: Socket | undefined;
      const error = await new Promise<unknown>((resolve) => {
        const req = (transport.request as typeof http.request)(
          { hostname: url.hostname, port: Number(url.port), path: '/minio/health/live', method: 'GET' },
          (res) => {
            res.resume();
            resolve(new Error(`answered ${res.statusCode}`));
          },
        );
        req.on('socket', (s) => (socket = s));
        req.on('error', resolve);
        req.end();
      });
      expect(error).toBeInstanceOf(StoreTimeout);
      expect(socket?.destroyed).toBe(true);
      // the agent lets go of a closed socket a moment after it closed
      const pooled = () => Object.values(agent.sockets).flat().length + Object.values(agent.freeSockets).flat().length;
      for (let i = 0; i < 50 && pooled() > 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(pooled()).toBe(0);
    } finally {
      minio.unpause();
      agent.destroy();
    }
  });
});

describe('deadlines scale with the bytes moved', () => {
  it('gives a transfer 1 s per MiB on top of the base timeout', () => {
    expect(allowanceMs(10_000, 0)).toBe(10_000);
    expect(allowanceMs(10_000, 64 * 1024 * 1024)).toBe(10_000 + 64_000);
  });
});

describe('a local store that stops answering', () => {
  it('fails a read that blocks with unavailable after the timeout; other calls still work', { timeout: 30_000 }, async () => {
    const root = tempDir();
    const bucket = bucketName();
    const store = new FsObjectStore(root, bucket, { timeoutMs: 500 });
    await store.ensureBucket();
    await store.put('fine', new Uint8Array([1]));
    // an object that is a FIFO with no writer: opening it for reading blocks
    const fifo = path.join(root, bucket, 'stuck');
    execFileSync('mkfifo', [fifo]);
    const { error, ms } = await failure(store.get('stuck'));
    expectUnavailable(error, /did not answer in time \(500 ms; LETHE_STORE_TIMEOUT_MS\)/);
    expect(ms).toBeGreaterThanOrEqual(450);
    expect(ms).toBeLessThan(5000);
    // the blocked open is released by a writer (it holds one of libuv's threads until then)
    const writer = await open(fifo, 'w');
    await writer.close();
    expect([...(await store.get('fine'))]).toEqual([1]);
    await store.put('after', new Uint8Array([2]));
    expect([...(await store.get('after'))]).toEqual([2]);
  });
});

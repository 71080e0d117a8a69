/** One contract, two object stores: the local filesystem and a real MinIO. */
import { randomBytes } from 'node:crypto';
import { Client } from 'minio';
import { describe, expect, inject, it } from 'vitest';
import { FsObjectStore } from '../../src/storage/fs.js';
import { S3ObjectStore } from '../../src/storage/s3.js';
import type { ObjectStore, StoredObject } from '../../src/storage/store.js';
import { tempDir } from '../support/vault.js';

const bucketName = () => `lethe-t-${randomBytes(5).toString('hex')}`;

const stores: Array<[string, () => Promise<ObjectStore>]> = [
  ['the local filesystem', async () => new FsObjectStore(tempDir(), bucketName())],
  ['MinIO', async () => new S3ObjectStore({ ...inject('minio'), bucket: bucketName() })],
];

async function collect(it: AsyncIterable<StoredObject>) {
  const out: StoredObject[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe.each(stores)('the object store contract on %s', (_, make) => {
  it('stores and returns bytes exactly, including empty and multi-megabyte objects', async () => {
    const store = await make();
    await store.ensureBucket();
    const big = randomBytes(5 * 1024 * 1024 + 3);
    await store.put('seg/000001', new Uint8Array([0, 1, 2, 255]));
    await store.put('seg/empty', new Uint8Array(0));
    await store.put('seg/big', big);
    expect(await store.get('seg/000001')).toEqual(new Uint8Array([0, 1, 2, 255]));
    expect(await store.get('seg/empty')).toEqual(new Uint8Array(0));
    expect(Buffer.from(await store.get('seg/big')).equals(big)).toBe(true);
    expect(await store.head('seg/big')).toEqual({ key: 'seg/big', size: big.length });
  });

  it('reads a byte range of an object, and not_found for a missing one', async () => {
    const store = await make();
    await store.ensureBucket();
    const bytes = randomBytes(4096);
    await store.put('ranged/obj', bytes);
    expect(Buffer.from(await store.getRange('ranged/obj', 100, 37)).equals(bytes.subarray(100, 137))).toBe(true);
    expect(Buffer.from(await store.getRange('ranged/obj', 0, 4096)).equals(bytes)).toBe(true);
    await expect(store.getRange('ranged/none', 0, 4)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('answers not_found for a missing object and undefined from head', async () => {
    const store = await make();
    await store.ensureBucket();
    await expect(store.get('nope/missing')).rejects.toMatchObject({ code: 'not_found' });
    expect(await store.head('nope/missing')).toBeUndefined();
  });

  it('replaces on put, removes on delete, and deleting an absent object is not an error', async () => {
    const store = await make();
    await store.ensureBucket();
    await store.put('a/b', new Uint8Array([1]));
    await store.put('a/b', new Uint8Array([2, 2]));
    expect(await store.get('a/b')).toEqual(new Uint8Array([2, 2]));
    await store.delete('a/b');
    await store.delete('a/b');
    expect(await store.head('a/b')).toBeUndefined();
  });

  it('creates with putIfAbsent only where nothing is: a second create stores nothing, even when many race', async () => {
    const store = await make();
    await store.ensureBucket({ versioned: true });
    expect(await store.putIfAbsent('once/k', new Uint8Array([1]))).toBe(true);
    expect(await store.putIfAbsent('once/k', new Uint8Array([2]))).toBe(false);
    expect(await store.get('once/k')).toEqual(new Uint8Array([1]));
    // eight writers at once: exactly one creates, and its bytes are what is stored
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => store.putIfAbsent('once/race', new Uint8Array([i]))));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await store.get('once/race')).toEqual(new Uint8Array([results.indexOf(true)]));
    // every stored version: the one create (none of the losers left a version behind)
    expect(await store.versions('once/race')).toEqual([new Uint8Array([results.indexOf(true)])]);
    // after a delete, the key is free again
    await store.delete('once/k');
    expect(await store.putIfAbsent('once/k', new Uint8Array([3]))).toBe(true);
  });

  it('lists the objects under a prefix in key order', async () => {
    const store = await make();
    await store.ensureBucket();
    for (const key of ['log/s2/b', 'log/s1/c', 'log/s1/a', 'logs/x', 'other/y']) await store.put(key, new Uint8Array([1, 2, 3]));
    expect((await collect(store.list('log/'))).map((o) => o.key)).toEqual(['log/s1/a', 'log/s1/c', 'log/s2/b']);
    const listed = await collect(store.list('log/s1/'));
    expect(listed.map((o) => ({ key: o.key, size: o.size }))).toEqual([
      { key: 'log/s1/a', size: 3 },
      { key: 'log/s1/c', size: 3 },
    ]);
    for (const o of listed) expect(Math.abs(Date.now() - o.modifiedAt!.getTime())).toBeLessThan(60_000);
    expect(await collect(store.list('missing/'))).toEqual([]);
  });

  it('refuses keys that are not plain relative paths', async () => {
    const store = await make();
    await store.ensureBucket();
    for (const bad of ['../escape', '/abs', 'a//b', 'a/./b', 'a/../b', '', 'sp ace', 'x'.repeat(1100)]) {
      await expect(store.put(bad, new Uint8Array([1]))).rejects.toMatchObject({ code: 'validation_failed' });
    }
  });

  it('ensureBucket is idempotent and ping answers once the bucket exists', async () => {
    const store = await make();
    await expect(store.ping()).rejects.toMatchObject({ code: 'unavailable' });
    await store.ensureBucket();
    await store.ensureBucket();
    await expect(store.ping()).resolves.toBeUndefined();
  });
});

describe('the MinIO object store when something is wrong', () => {
  it('an unreachable endpoint is unavailable (retryable) and named, with no secret in the message', async () => {
    const store = new S3ObjectStore({ endpoint: 'http://127.0.0.1:1', accessKey: 'ak-1234', secretKey: 'super-secret-value', bucket: 'x-bucket' });
    const err = await store.put('a', new Uint8Array([1])).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'unavailable', retryable: true });
    expect((err as Error).message).toContain('127.0.0.1:1');
    expect((err as Error).message).not.toContain('super-secret-value');
  });

  it('wrong credentials are unavailable and say the credentials were refused', async () => {
    const { endpoint } = inject('minio');
    const store = new S3ObjectStore({ endpoint, accessKey: 'wrong-access', secretKey: 'wrong-secret-value', bucket: bucketName() });
    const err = await store.ensureBucket().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'unavailable' });
    expect((err as Error).message).toMatch(/refused the credentials/);
    expect((err as Error).message).not.toContain('wrong-secret-value');
  });

  it('a versioned bucket keeps the earlier version of an overwritten object', async () => {
    const minio = inject('minio');
    const bucket = bucketName();
    const store = new S3ObjectStore({ ...minio, bucket });
    await store.ensureBucket({ versioned: true });
    await store.put('k', new Uint8Array([1]));
    await store.put('k', new Uint8Array([2]));
    const url = new URL(minio.endpoint);
    const client = new Client({ endPoint: url.hostname, port: Number(url.port), useSSL: false, accessKey: minio.accessKey, secretKey: minio.secretKey });
    const versions = await new Promise<unknown[]>((resolve, reject) => {
      const out: unknown[] = [];
      const stream = client.listObjects(bucket, 'k', true, { IncludeVersion: true });
      stream.on('data', (v) => out.push(v));
      stream.on('error', reject);
      stream.on('end', () => resolve(out));
    });
    expect(versions).toHaveLength(2);
    expect(await store.get('k')).toEqual(new Uint8Array([2]));
  });
});

describe('the local filesystem store when its folder fails', () => {
  it('a path component that is a file (ENOTDIR, or EEXIST from mkdir) is an outage, unavailable and retryable, naming the errno', async () => {
    const store = new FsObjectStore(tempDir(), bucketName());
    await store.ensureBucket();
    await store.put('a', new Uint8Array([1]));
    // "a" is an object (a file): nothing can live below it
    for (const attempt of [() => store.put('a/b', new Uint8Array([2])), () => store.get('a/b'), () => store.putIfAbsent('a/c', new Uint8Array([3]))]) {
      const e = await attempt().then(
        () => undefined,
        (err: unknown) => err as { code?: string; retryable?: boolean; message: string },
      );
      expect(e, 'no error').toBeDefined();
      expect(e).toMatchObject({ code: 'unavailable', retryable: true });
      expect(e!.message).toMatch(/the local object store .* failed: (ENOTDIR|EEXIST) \(a part of the path is not a folder\)/);
    }
  });
});

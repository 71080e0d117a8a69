/** Helpers shared by the backup tests: reading the backup bucket, MinIO versions, polling. */
import { createHash, randomBytes } from 'node:crypto';
import { Client } from 'minio';
import { expect, inject } from 'vitest';
import type { Manifest } from '../../src/backups/manifest.js';
import { manifestKey } from '../../src/backups/manifest.js';
import type { ObjectStore } from '../../src/storage/store.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import type { TestVault } from '../support/vault.js';
import { ok } from '../support/http.js';
import { awaitErasure, callVault } from '../erasure/fixtures.js';

export const sha256Hex = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

export const hex = (n = 4) => randomBytes(n).toString('hex');

/** Environment for a vault on the shared MinIO with fresh live and backup buckets. */
export function minioEnv(): { env: Record<string, string>; bucket: string; backupBucket: string } {
  const minio = inject('minio');
  const tag = hex();
  const bucket = `lethe-live-${tag}`;
  const backupBucket = `lethe-bak-${tag}`;
  return {
    bucket,
    backupBucket,
    env: { S3_ENDPOINT: minio.endpoint, S3_ACCESS_KEY: minio.accessKey, S3_SECRET_KEY: minio.secretKey, S3_BUCKET: bucket, S3_BACKUP_BUCKET: backupBucket },
  };
}

export function minioClient(): Client {
  const minio = inject('minio');
  const url = new URL(minio.endpoint);
  return new Client({ endPoint: url.hostname, port: Number(url.port), useSSL: false, accessKey: minio.accessKey, secretKey: minio.secretKey });
}

export interface ObjectVersion {
  readonly name: string;
  readonly versionId: string;
  readonly etag: string;
}

/** Every stored version (delete markers left out) of the objects under `prefix`. */
export async function allVersions(client: Client, bucket: string, prefix: string): Promise<ObjectVersion[]> {
  return new Promise((resolve, reject) => {
    const out: ObjectVersion[] = [];
    const stream = client.listObjects(bucket, prefix, true, { IncludeVersion: true });
    stream.on('data', (v) => {
      const o = v as { name?: string; versionId?: string; etag?: string; isDeleteMarker?: boolean };
      if (o.name && o.versionId && !o.isDeleteMarker) out.push({ name: o.name, versionId: o.versionId, etag: o.etag ?? '' });
    });
    stream.on('error', reject);
    stream.on('end', () => resolve(out));
  });
}

export async function getVersion(client: Client, bucket: string, name: string, versionId: string): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const c of await client.getObject(bucket, name, { versionId })) chunks.push(c as Buffer);
  return new Uint8Array(Buffer.concat(chunks));
}

/** How many stored versions each object under `prefix` has. */
export async function versionCounts(client: Client, bucket: string, prefix: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const v of await allVersions(client, bucket, prefix)) counts.set(v.name, (counts.get(v.name) ?? 0) + 1);
  return counts;
}

export async function keysUnder(store: ObjectStore, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list(prefix)) out.push(o.key);
  return out;
}

export async function readJson<T>(store: ObjectStore, key: string): Promise<T> {
  return JSON.parse(Buffer.from(await store.get(key)).toString('utf8')) as T;
}

/** The manifest as it stands in the backup bucket (not through the service). */
export function storedManifest(store: ObjectStore, backupId: string): Promise<Manifest> {
  return readJson<Manifest>(store, manifestKey(backupId));
}

/** Polls `probe` until `ok` holds; fails naming `what` and the last value seen. */
export async function until<T>(what: string, probe: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last seen: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The forms a key could take on disk or on the wire. */
export function encodings(key: Uint8Array): Array<[string, Buffer]> {
  const b = Buffer.from(key);
  return [
    ['raw', b],
    ['base64url', Buffer.from(b.toString('base64url'))],
    ['base64', Buffer.from(b.toString('base64'))],
    ['hex', Buffer.from(b.toString('hex'))],
  ];
}

export const keyState = (m: Manifest, keyId: string) => m.keys.find((k) => k.keyId === keyId);

/** Whether the backup bucket's ledger chain (ledger/chain/) holds a destruction of `keyId` (read without the MAC key). */
export async function ledgerHolds(store: ObjectStore, keyId: string): Promise<boolean> {
  for await (const o of store.list('ledger/chain/')) {
    const record = JSON.parse(Buffer.from(await store.get(o.key)).toString('utf8')) as { destructions?: Array<{ keyId: string }> };
    if (record.destructions?.some((d) => d.keyId === keyId)) return true;
  }
  return false;
}

/** The chain record (its object key) holding the destruction of `keyId`, if any. */
export async function ledgerRecordOf(store: ObjectStore, keyId: string): Promise<string | undefined> {
  for await (const o of store.list('ledger/chain/')) {
    const record = JSON.parse(Buffer.from(await store.get(o.key)).toString('utf8')) as { destructions?: Array<{ keyId: string }> };
    if (record.destructions?.some((d) => d.keyId === keyId)) return o.key;
  }
  return undefined;
}

/**
 * Restores `backupId` of `source` into a fresh database and bucket as the CLI runs it (no
 * listener, no worker), then opens a vault serving the result; the database is pushed
 * onto `targets` for the caller to drop.
 */
export async function restoreIntoFresh(source: TestVault, backupId: string, targets: TestDatabase[]) {
  const db = await createTestDatabase();
  targets.push(db);
  const fresh = { DATABASE_URL: db.url, S3_BUCKET: `lethe-rst-${hex(4)}` };
  const restorer = await source.reopen({ listen: false }, fresh);
  const result = await restorer.backups.restore(backupId, { actor: 'test' });
  await restorer.close();
  const restored = await source.reopen({}, fresh);
  return { result, restored, db };
}

/** Appending to and forgetting from `source` over its HTTP app: a forget is followed until it completes. */
export function vaultCalls(source: () => TestVault) {
  const call = () => callVault(source().app);
  return {
    call,
    append: async (subject: string, text: string) =>
      (await ok<{ entryId: string }>(call()('POST', `/v1/subjects/${subject}/entries`, { body: { text } }), 201)).entryId,
    forget: async (entryId: string) => {
      const { erasureId } = await ok<{ erasureId: string }>(call()('DELETE', `/v1/entries/${entryId}`, { role: 'eraser' }), 202);
      expect((await awaitErasure(call(), erasureId, 120_000)).status).toBe('completed');
    },
  };
}

/**
 * Write-ahead destruction records, on PostgreSQL and a MinIO of this file's own
 * (stopped and started again): a destruction is answered `destroyed` only once its
 * record is durable in the backup bucket's ledger chain. While the store is down the
 * key is unusable but reported pending (202); once the store is back the background
 * retry makes it durable without anyone asking. The invariant: no destruction ever
 * answered `destroyed` is undone by losing the database and restoring any backup.
 * The same on the local store (the embedded default's folder made unwritable), and
 * with the service killed (-9) between the PostgreSQL change and the ledger write.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { minioBinary, type MinioServer, startMinio } from '../../infra/minio-server.js';
import type { App } from '../../src/app/open.js';
import { openDb, queryRows } from '../../src/db/client.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { CLI, runCli, startService, type RunningService } from '../support/process.js';
import { openTestApp, requestInit, type TestApp, testEnv, tempDir, TOKENS } from '../support/vault.js';

const tag = () => randomBytes(4).toString('hex');

async function until<T>(what: string, read: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function durableAt(app: App, keyId: string): Promise<Date | string | null | undefined> {
  const [row] = await queryRows<{ durable_at: Date | string | null }>(app.db.db, sql`select durable_at from destruction_ledger where key_id = ${keyId}`);
  return row ? row.durable_at : undefined;
}

describe('a key destroyed while the backup store (MinIO) is down', () => {
  let minio: MinioServer;
  let tv: TestApp;
  const targets: TestDatabase[] = [];
  let backupId = '';
  let a: { entryId: string; keyId: string };
  let b: { entryId: string; keyId: string; text: string };

  beforeAll(async () => {
    minio = await startMinio(minioBinary());
    tv = await openTestApp({
      extraEnv: {
        S3_ENDPOINT: minio.endpoint,
        S3_ACCESS_KEY: minio.accessKey,
        S3_SECRET_KEY: minio.secretKey,
        S3_BUCKET: `lethe-wal-${tag()}`,
        S3_BACKUP_BUCKET: `lethe-wal-bak-${tag()}`,
      },
    });
    a = await tv.app.log.append('user:wal-a', { text: `A lives at ${tag()}` }, 'writer');
    const text = `B stays ${tag()}`;
    b = { ...(await tv.app.log.append('user:wal-b', { text }, 'writer')), text };
    backupId = (await tv.app.backups.run()).backupId;
  }, 120_000);
  afterAll(async () => {
    await tv?.close();
    for (const db of targets) await db.drop().catch(() => {});
    await minio?.stop();
  });

  it('answers 202 destruction_pending while the store is down (the key already unusable), then destroyed once the retry lands; a restore of the earlier backup keeps it erased', async () => {
    await minio.stop({ keepData: true });
    let restarted = false;
    try {
      const reply = await tv.call('POST', `/v1/admin/keys/${a.keyId}/destroy`, { role: 'admin', body: { reason: 'break-glass' } });
      expect(reply.status).toBe(202);
      const body = (await reply.json()) as { state: string; pending: string };
      expect(body.state).toBe('destruction_pending');
      expect(body.pending).toMatch(/not yet durable in the backup store's ledger/);
      // unusable: no lease, no read, no append under it
      expect(await tv.app.keys.validity([a.keyId])).toEqual({ [a.keyId]: 'destruction_pending' });
      await expect(tv.app.log.get(a.entryId)).rejects.toMatchObject({ code: 'key_destroyed' });
      expect(await durableAt(tv.app, a.keyId)).toBeNull();

      minio = await startMinio(minioBinary(), minio);
      restarted = true;
      // nobody asks again: the background retry (backoff from 1 s) makes it durable
      await until(
        'the destruction to become durable',
        () => durableAt(tv.app, a.keyId),
        (d) => d !== null && d !== undefined,
        60_000,
      );
      expect(await tv.app.keys.validity([a.keyId])).toEqual({ [a.keyId]: 'destroyed' });
      const again = await tv.call('POST', `/v1/admin/keys/${a.keyId}/destroy`, { role: 'admin', body: { reason: 'break-glass' } });
      expect(again.status).toBe(200);
      expect(((await again.json()) as { state: string }).state).toBe('destroyed');
    } finally {
      if (!restarted) minio = await startMinio(minioBinary(), minio);
    }

    // the database is lost; the backup taken before the destruction is restored
    const db = await createTestDatabase();
    targets.push(db);
    const restored = await tv.reopen({}, { DATABASE_URL: db.url, S3_BUCKET: `lethe-wal-r-${tag()}` });
    const result = await restored.backups.restore(backupId, { actor: 'test' });
    expect(result).toMatchObject({ ledger: 'replayed', warnings: [] });
    await expect(restored.log.get(a.entryId)).rejects.toMatchObject({ code: 'key_destroyed' });
    expect((await restored.log.get(b.entryId)).text).toBe(b.text);
    expect(await restored.keys.validity([a.keyId])).toEqual({ [a.keyId]: 'destroyed' });
  }, 180_000);
});

describe('a key destroyed while the local backup folder cannot be written (embedded default)', () => {
  let tv: TestApp;

  beforeAll(async () => {
    tv = await openTestApp({ embedded: true });
  }, 120_000);
  afterAll(async () => {
    await tv?.close();
  });

  it('is pending while the folder refuses writes, durable once it accepts them, and the restore of an earlier backup keeps it erased', async () => {
    const a = await tv.app.log.append('user:wal-fs-a', { text: `A fs ${tag()}` }, 'writer');
    const text = `B fs ${tag()}`;
    const b = await tv.app.log.append('user:wal-fs-b', { text }, 'writer');
    const { backupId } = await tv.app.backups.run();
    const summary = await tv.app.artifacts.write({ kind: 'summary', text: `B said ${text}`, sources: [b.entryId] }, 'writer');

    // the ledger's folder becomes a file: every put under ledger/ fails (root ignores chmod, not this)
    const ledgerDir = path.join(tv.dataDir, 'objects', tv.config.backupBucket, 'ledger');
    renameSync(ledgerDir, `${ledgerDir}.away`);
    writeFileSync(ledgerDir, 'not a folder');
    try {
      const reply = await tv.call('POST', `/v1/admin/keys/${a.keyId}/destroy`, { role: 'admin', body: { reason: 'break-glass' } });
      expect(reply.status).toBe(202);
      expect(await tv.app.keys.validity([a.keyId])).toEqual({ [a.keyId]: 'destruction_pending' });
      // a regeneration destroys the old version's key: answered 202, pending, too
      const regenerated = await tv.call('POST', `/v1/artifacts/${summary.artifactId}/regenerate`, { role: 'writer' });
      expect(regenerated.status).toBe(202);
      expect(await regenerated.json()).toMatchObject({ regenerated: [{ artifactId: summary.artifactId, version: 2 }], destruction: 'pending' });
    } finally {
      rmSync(ledgerDir, { force: true });
      renameSync(`${ledgerDir}.away`, ledgerDir);
    }
    await until(
      'the destruction to become durable',
      () => durableAt(tv.app, a.keyId),
      (d) => d !== null && d !== undefined,
      60_000,
    );
    expect(await tv.app.keys.validity([a.keyId])).toEqual({ [a.keyId]: 'destroyed' });

    // the database is lost: a fresh embedded database (a fresh data dir) with the same keyring and backup folder
    const bucketDir = path.join(tv.dataDir, 'objects', tv.config.backupBucket);
    const copyDir = tempDir();
    const target = await reopenFresh(tv, copyDir, bucketDir);
    try {
      expect(await target.backups.restore(backupId, { actor: 'test' })).toMatchObject({ ledger: 'replayed', warnings: [] });
      await expect(target.log.get(a.entryId)).rejects.toMatchObject({ code: 'key_destroyed' });
      expect((await target.log.get(b.entryId)).text).toBe(text);
    } finally {
      await target.close();
      rmSync(copyDir, { recursive: true, force: true });
    }
  }, 180_000);
});

/**
 * A vault with a fresh embedded database and live folder in `dataDir`, the same root
 * key and keyring, and the original backup folder (a symlink).
 */
async function reopenFresh(tv: TestApp, dataDir: string, bucketDir: string): Promise<App> {
  const { symlinkSync, cpSync } = await import('node:fs');
  mkdirSync(path.join(dataDir, 'objects'), { recursive: true, mode: 0o700 });
  symlinkSync(bucketDir, path.join(dataDir, 'objects', tv.config.backupBucket));
  cpSync(path.join(tv.dataDir, 'keyring'), path.join(dataDir, 'keyring'), { recursive: true });
  return tv.reopen({}, { LETHE_DATA_DIR: dataDir });
}

describe('the service killed (-9) between the PostgreSQL change and the ledger write', () => {
  let minio: MinioServer;
  let db: TestDatabase;
  const targets: TestDatabase[] = [];
  let service: RunningService | undefined;
  let env: Record<string, string>;
  const dataDir = tempDir();

  beforeAll(async () => {
    minio = await startMinio(minioBinary());
    db = await createTestDatabase();
    env = testEnv({
      databaseUrl: db.url,
      dataDir,
      extra: {
        S3_ENDPOINT: minio.endpoint,
        S3_ACCESS_KEY: minio.accessKey,
        S3_SECRET_KEY: minio.secretKey,
        S3_BUCKET: `lethe-walk-${tag()}`,
        S3_BACKUP_BUCKET: `lethe-walk-bak-${tag()}`,
      },
    });
  }, 120_000);
  afterAll(async () => {
    await service?.stop().catch(() => {});
    await db?.drop().catch(() => {});
    for (const t of targets) await t.drop().catch(() => {});
    await minio?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('never answered the destruction; after a restart the catch-up makes it durable, and a restore of the earlier backup keeps the key erased', async () => {
    const call = (url: string, method: string, p: string, o: Parameters<typeof requestInit>[1] = {}) => fetch(`${url}${p}`, requestInit(method, o));
    service = await startService(process.execPath, [...CLI, 'serve'], { ...env, LETHE_FAILPOINT: 'ledger-before-store' });
    const a = (await (await call(service.url, 'POST', '/v1/subjects/user:kill-a/entries', { role: 'writer', body: { text: `A ${tag()}` } })).json()) as {
      entryId: string;
      keyId: string;
    };
    expect(a.keyId).toMatch(/^key_/);
    // a backup from the CLI (its own process, no failpoint) before the destruction
    const backup = await runCli(['backup', 'run'], { ...env, LETHE_URL: service.url, LETHE_TOKENS: `backup=${TOKENS.backup}` });
    expect(backup.code, backup.stderr).toBe(0);
    // NDJSON progress lines, the summary last
    const { backupId } = JSON.parse(backup.stdout.trim().split('\n').at(-1)!) as { backupId: string };

    // the destroy call dies with the process: the key row is gone, the ledger write never started
    const died = await call(service.url, 'POST', `/v1/admin/keys/${a.keyId}/destroy`, { role: 'admin', body: { reason: 'kill' } }).catch((e: unknown) => e);
    expect(died).toBeInstanceOf(Error);
    await service.exited;
    service = undefined;

    const direct = await openDb({ databaseUrl: db.url, dataDir, poolSize: 1 });
    try {
      const rows = await queryRows<{ durable_at: Date | null }>(direct.db, sql`select durable_at from destruction_ledger where key_id = ${a.keyId}`);
      expect(rows).toEqual([{ durable_at: null }]);
    } finally {
      await direct.close();
    }

    // restarted without the failpoint: the start-up catch-up writes the record
    service = await startService(process.execPath, [...CLI, 'serve'], env);
    const url = service.url;
    await until(
      'the destruction to become durable',
      async () =>
        ((await (await call(url, 'POST', '/v1/keys/validity', { role: 'backup', body: { keyIds: [a.keyId] } })).json()) as { keys: Record<string, string> })
          .keys[a.keyId],
      (s) => s === 'destroyed',
      60_000,
    );
    await service.stop();
    service = undefined;

    // the database is lost: restore the earlier backup into a fresh one
    const fresh = await createTestDatabase();
    targets.push(fresh);
    const restoredEnv = { ...env, DATABASE_URL: fresh.url, S3_BUCKET: `lethe-walk-r-${tag()}` };
    const restore = await runCli(['backup', 'restore', backupId], restoredEnv);
    expect(restore.code, restore.stderr).toBe(0);
    expect(JSON.parse(restore.stdout)).toMatchObject({ ledger: 'replayed' });
    service = await startService(process.execPath, [...CLI, 'serve'], restoredEnv);
    const read = await call(service.url, 'GET', `/v1/entries/${a.entryId}`, { role: 'writer' });
    expect(read.status).toBe(410);
  }, 240_000);
});

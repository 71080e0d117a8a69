/**
 * The writer client against a service whose heads roll every 8 entries (src/vault/
 * key-shards.ts), on PostgreSQL and MinIO: hundreds of concurrent appends to one subject
 * follow the key through every roll — each is stored once, under the key it was sealed
 * under, and reads back; none is refused by the indexer (a frame sealed under a DEK the
 * writer had already let go would be).
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startServer, type RunningServer } from '../../src/app/serve.js';
import { LetheWriter } from '../../src/client/index.js';
import { loadConfig } from '../../src/config/index.js';
import { queryRows } from '../../src/db/client.js';
import { createLogger } from '../../src/observability/logger.js';
import { S3ObjectStore } from '../../src/storage/s3.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { TOKENS, tempDir, testEnv } from '../support/vault.js';

describe('the writer client across head rolls', () => {
  let db: TestDatabase;
  let server: RunningServer;
  const bucket = `lethe-wshard-${randomBytes(4).toString('hex')}`;
  const minio = inject('minio');

  beforeAll(async () => {
    db = await createTestDatabase();
    const env = testEnv({
      databaseUrl: db.url,
      dataDir: tempDir(),
      extra: {
        PORT: '0',
        S3_ENDPOINT: minio.endpoint,
        S3_ACCESS_KEY: minio.accessKey,
        S3_SECRET_KEY: minio.secretKey,
        S3_BUCKET: bucket,
        S3_BACKUP_BUCKET: `${bucket}-bak`,
        LETHE_KEY_SHARD_ENTRIES: '8',
      },
    });
    server = await startServer(loadConfig(env), createLogger('silent'));
  });
  afterAll(async () => {
    await server?.close();
    await db?.drop();
  });

  it('600 concurrent appends to one subject: every one stored once and readable, none refused, spread over many keys', { timeout: 180_000 }, async () => {
    const subject = `user:wshard-${randomBytes(4).toString('hex')}`;
    const writer = new LetheWriter({
      baseUrl: `http://127.0.0.1:${server.port}`,
      token: TOKENS.writer,
      store: new S3ObjectStore({ ...minio, bucket }),
      segmentMaxAgeMs: 20,
      reserveBlock: 64,
    });
    const texts = Array.from({ length: 600 }, (_, i) => `note ${i} ${randomBytes(6).toString('hex')}`);
    const appended = await Promise.all(texts.map((text) => writer.append(subject, { text })));
    await writer.close();
    expect(new Set(appended.map((a) => a.entryId)).size).toBe(600);
    const app = server.app;
    await app.log.indexer.waitIndexed({ subjectHash: app.keys.subjectHash(subject), timeoutMs: 60_000 });
    const [refused] = await queryRows<{ n: string }>(
      app.db.db,
      sql`select count(*) as n from log_entries where subject_hash = ${app.keys.subjectHash(subject)} and refused is not null`,
    );
    expect(Number(refused!.n)).toBe(0);
    const { entries } = await app.log.read(subject);
    expect(entries.map((e) => e.text).sort()).toEqual([...texts].sort());
    // spread over keys of about a shard each: a roll wastes few of the numbers a writer reserved
    const keys = (await app.keys.keysOf(app.keys.subjectHash(subject))).length;
    expect(keys).toBeGreaterThan(600 / 16);
    expect(keys).toBeLessThan((600 / 8) * 1.5);
  });

  it('an entry the writer seals names its store item at registration: the service finds it by one lookup and lists its namespace', {
    timeout: 60_000,
  }, async () => {
    const subject = `user:witem-${randomBytes(4).toString('hex')}`;
    const writer = new LetheWriter({
      baseUrl: `http://127.0.0.1:${server.port}`,
      token: TOKENS.writer,
      store: new S3ObjectStore({ ...minio, bucket }),
      segmentMaxAgeMs: 10,
    });
    const namespace = ['memories', 'prefs'];
    const held = await writer.append(subject, { text: 'prefers the window seat', metadata: { ns: namespace }, item: { namespace, key: 'seat' } });
    await writer.append(subject, { text: 'no item here' });
    await writer.close();
    const app = server.app;
    const found = await app.log.lookupItem(subject, { namespace, key: 'seat' });
    expect(found.map((e) => e.entryId)).toEqual([held.entryId]);
    expect(await app.log.lookupItem(subject, { namespace, key: 'aisle' })).toEqual([]);
    const listed = await app.log.namespaceEntries({ subject, limit: 10, offset: 0 });
    expect(listed.map((e) => e.metadata)).toEqual([{ ns: namespace }]);
    // the index holds keyed hashes, never the labels
    const [row] = await queryRows<{ item_hash: Buffer | null }>(app.db.db, sql`select item_hash from log_entries where entry_id = ${held.entryId}`);
    expect(row!.item_hash).not.toBeNull();
    expect(Buffer.from(row!.item_hash!).toString()).not.toContain('seat');
  });
});

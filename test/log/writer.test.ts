/** The writer client against a real service on PostgreSQL and a real, versioned MinIO. */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { Client } from 'minio';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { LetheWriter } from '../../src/client/index.js';
import { loadConfig } from '../../src/config/index.js';
import { queryRows } from '../../src/db/client.js';
import { startServer, type RunningServer } from '../../src/app/serve.js';
import { fsck } from '../../src/log/maintenance.js';
import { openEntry } from '../../src/log/frame.js';
import { decodeSegment } from '../../src/log/segment.js';
import { createLogger } from '../../src/observability/logger.js';
import { S3ObjectStore } from '../../src/storage/s3.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { filesContaining } from '../support/files.js';
import { spawnProcess } from '../support/process.js';
import { TOKENS, tempDir, testEnv } from '../support/vault.js';
import { leasedDeks, wiped } from '../support/leased-deks.js';

// the DEKs the writer leases, to check it zeroes them (test/support/leased-deks.ts)
vi.mock('../../src/crypto/index.js', async (original) =>
  (await import('../support/leased-deks.js')).trackLeasedDeks(await original<typeof import('../../src/crypto/index.js')>()),
);

const SUBJECTS = Array.from({ length: 12 }, (_, i) => `user:w${i}`);

describe('the writer client', () => {
  let db: TestDatabase;
  let server: RunningServer;
  let store: S3ObjectStore;
  const bucket = `lethe-writer-${randomBytes(4).toString('hex')}`;
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
      },
    });
    server = await startServer(loadConfig(env), createLogger('silent'));
    store = new S3ObjectStore({ ...minio, bucket });
  });
  afterAll(async () => {
    await server?.close();
    await db?.drop();
  });

  const writer = (extra: Partial<ConstructorParameters<typeof LetheWriter>[0]> = {}) =>
    new LetheWriter({ baseUrl: `http://127.0.0.1:${server.port}`, token: TOKENS.writer, store, segmentMaxAgeMs: 20, reserveBlock: 4, ...extra });

  it('interleaves many subjects in shared segments; destroying one key leaves its frames unreadable everywhere and the others intact', async () => {
    const w = writer();
    const texts = new Map<string, string[]>();
    const appended = await Promise.all(
      SUBJECTS.flatMap((s) =>
        Array.from({ length: 5 }, (_, i) => {
          const text = `${s} canary-${randomBytes(6).toString('hex')} ${i}`;
          texts.set(s, [...(texts.get(s) ?? []), text]);
          return w.append(s, { text }).then((r) => ({ ...r, subject: s, text }));
        }),
      ),
    );
    await w.close();
    const vault = server.app;
    const shared = await queryRows<{ n: string }>(
      vault.db.db,
      sql`select count(*) as n from (select segment from log_entries group by segment having count(distinct subject_hash) > 1) x`,
    );
    expect(Number(shared[0]!.n)).toBeGreaterThan(0);
    for (const s of SUBJECTS) {
      const entries = await vault.log.list(s);
      expect(entries.map((e) => e.text).sort()).toEqual([...texts.get(s)!].sort());
      expect(entries.map((e) => e.seq)).toEqual([...entries.map((e) => e.seq)].sort((a, b) => a - b));
    }

    const rawCopy = new Map<string, Uint8Array>();
    for await (const o of store.list('log/')) rawCopy.set(o.key, await store.get(o.key));
    const victim = 'user:w3';
    const victimKey = appended.find((a) => a.subject === victim)!.keyId;
    // overwrite one shared segment with itself, so its earlier bytes become a noncurrent version
    const [victimSegment] = await queryRows<{ segment: string }>(vault.db.db, sql`select segment from log_entries where key_id = ${victimKey} limit 1`);
    await store.put(victimSegment!.segment, rawCopy.get(victimSegment!.segment)!);
    await vault.keys.destroyKey(victimKey, { reason: 'writer test', actor: 'admin' });

    const url = new URL(minio.endpoint);
    const client = new Client({ endPoint: url.hostname, port: Number(url.port), useSSL: false, accessKey: minio.accessKey, secretKey: minio.secretKey });
    const versions = await new Promise<Array<{ versionId: string; isLatest: boolean }>>((resolve, reject) => {
      const out: Array<{ versionId: string; isLatest: boolean }> = [];
      const stream = client.listObjects(bucket, victimSegment!.segment, true, { IncludeVersion: true });
      stream.on('data', (v) => out.push(v as never));
      stream.on('error', reject);
      stream.on('end', () => resolve(out));
    });
    const old = versions.find((v) => !v.isLatest)!;
    const chunks: Buffer[] = [];
    for await (const c of await client.getObject(bucket, victimSegment!.segment, { versionId: old.versionId })) chunks.push(c as Buffer);

    const live = await queryRows<{ key_id: string }>(vault.db.db, sql`select key_id from subject_keys`);
    const deks = await Promise.all(live.map(async (r) => ({ keyId: r.key_id, dek: (await vault.keys.dekFor(r.key_id)).dek })));
    const rows = await queryRows<{ entry_id: string; key_id: string; seq: number; segment: string; frame_offset: number; wrapped_key: Uint8Array | null }>(
      vault.db.db,
      sql`select entry_id, key_id, seq, segment, frame_offset, wrapped_key from log_entries`,
    );
    let victimFrames = 0;
    const current: Array<[string, Uint8Array]> = [];
    for await (const o of store.list('log/')) current.push([o.key, await store.get(o.key)]);
    const sources: Array<readonly [string, Uint8Array]> = [...current, ...rawCopy, [victimSegment!.segment, new Uint8Array(Buffer.concat(chunks))]];
    for (const [name, bytes] of sources) {
      const frames = decodeSegment(bytes);
      for (const row of rows.filter((r) => r.segment === name)) {
        const frame = frames.find((f) => f.offset === row.frame_offset)!;
        const ids = { keyId: row.key_id, entryId: row.entry_id, seq: Number(row.seq) };
        if (row.key_id === victimKey) {
          victimFrames += 1;
          for (const { dek } of deks) expect(() => openEntry(dek, ids, row.wrapped_key, frame.envelope)).toThrow();
        } else {
          const own = deks.find((d) => d.keyId === row.key_id)!;
          expect(openEntry(own.dek, ids, row.wrapped_key, frame.envelope).text).toBe(appended.find((a) => a.entryId === row.entry_id)!.text);
        }
      }
    }
    expect(victimFrames).toBeGreaterThanOrEqual(11); // 5 current + 5 in the raw copy + at least one noncurrent
    await expect(vault.log.list(victim)).rejects.toMatchObject({ code: 'subject_erased' });
  });

  it('a canary written through the writer is in no plain bytes at rest: not in the MinIO data directory, not in a pg_dump', async () => {
    const canary = `CANARY-${randomBytes(8).toString('hex')}`;
    const w = writer();
    await w.append('user:canary', { text: `the secret is ${canary}`, metadata: { note: canary } });
    await w.close();
    const dumpFile = path.join(tempDir(), 'dump.sql');
    execFileSync('pg_dump', ['--format=plain', `--file=${dumpFile}`, db.url]);
    expect(readFileSync(dumpFile, 'utf8')).not.toContain(canary);
    for await (const o of store.list('')) expect(Buffer.from(await store.get(o.key)).includes(Buffer.from(canary))).toBe(false);
    const onDisk = filesContaining(minio.dataDir, canary);
    expect(onDisk.filesRead).toBeGreaterThan(0);
    expect(onDisk.hits).toEqual([]);
    expect((await server.app.log.list('user:canary'))[0]!.text).toBe(`the secret is ${canary}`);
  });

  it('a writer killed between upload and registration acknowledges nothing; fsck reports the orphan and repairs it', async () => {
    const ok = writer();
    const kept = await ok.append('user:crash', { text: 'acknowledged' });
    await ok.close();
    const crash = spawnProcess(process.execPath, ['--import', 'tsx', 'test/support/crash-writer.ts'], {
      CRASH_BASE_URL: `http://127.0.0.1:${server.port}`,
      CRASH_TOKEN: TOKENS.writer,
      CRASH_S3: JSON.stringify({ endpoint: minio.endpoint, accessKey: minio.accessKey, secretKey: minio.secretKey, bucket }),
      CRASH_SUBJECT: 'user:crash',
    });
    await crash.exited;
    expect(crash.child.signalCode).toBe('SIGKILL');
    expect(crash.stdout()).toMatch(/^uploaded log\/seg_/);
    expect(crash.stdout()).not.toContain('acknowledged');
    const deps = { db: server.app.db.db, objects: server.app.objects };
    const found = await fsck(deps);
    expect(found.orphans.map((o) => [o.segment, o.action])).toEqual([[crash.stdout().split(' ')[1]!.trim(), 'reported']]);
    const report = await fsck(deps, { repair: true, graceSeconds: 0 });
    expect(report.ok).toBe(true);
    expect(report.orphans.map((o) => o.action)).toEqual(['deleted']);
    expect((await fsck(deps)).orphans).toEqual([]);
    expect((await server.app.log.list('user:crash')).map((e) => [e.entryId, e.text])).toEqual([[kept.entryId, 'acknowledged']]);
  }, 60_000);

  it('an append for a subject whose key is destroyed in flight (not erased: the subject lives on) is sealed again under its new key', async () => {
    const w = writer();
    const first = await w.append('user:flight', { text: 'one' });
    await server.app.keys.destroyKey(first.keyId, { reason: 'in flight', actor: 'admin' });
    // the writer still holds the old lease and block: the registration refuses the frame sealed under
    // the destroyed key (key_destroyed), and the writer seals it again under the subject's new key
    const second = await w.append('user:flight', { text: 'two' });
    expect(second.keyId).not.toBe(first.keyId);
    const third = await w.append('user:flight', { text: 'three' });
    expect(third.keyId).toBe(second.keyId);
    await w.close();
    expect((await server.app.log.list('user:flight')).map((e) => e.text)).toEqual(['two', 'three']);
  });

  it('renews a lease before it lapses, and drops (zeroes) DEKs whose lease ended or when it closes', async () => {
    const short = await createTestDatabase();
    const env = testEnv({
      databaseUrl: short.url,
      dataDir: tempDir(),
      extra: {
        PORT: '0',
        LETHE_LEASE_TTL_SECONDS: '2',
        S3_ENDPOINT: minio.endpoint,
        S3_ACCESS_KEY: minio.accessKey,
        S3_SECRET_KEY: minio.secretKey,
        S3_BUCKET: `${bucket}-ttl`,
        S3_BACKUP_BUCKET: `${bucket}-ttl-bak`,
      },
    });
    const svc = await startServer(loadConfig(env), createLogger('silent'));
    try {
      const w = new LetheWriter({
        baseUrl: `http://127.0.0.1:${svc.port}`,
        token: TOKENS.writer,
        store: new S3ObjectStore({ ...minio, bucket: `${bucket}-ttl` }),
        segmentMaxAgeMs: 10,
      });
      const before = leasedDeks.length;
      const deks = () => leasedDeks.slice(before);
      const first = await w.append('user:ttl', { text: 'one' });
      expect(deks()).toHaveLength(1);
      expect(deks()[0]!.copies).toHaveLength(1);
      // the private copy the append sealed with is zeroed at once; the held DEK is not
      expect(deks()[0]!.copies.every((c) => c.every((x) => x === 0))).toBe(true);
      expect(wiped(deks()[0]!)).toBe(false);
      await new Promise((r) => setTimeout(r, 1700)); // past the renewal point (TTL - TTL/5)
      await w.append('user:ttl', { text: 'two' });
      // the renewal replaced the first DEK: zeroed
      expect(deks().map(wiped)).toEqual([true, false]);
      const leases = await queryRows<{ n: string }>(
        svc.app.db.db,
        sql`select count(*) as n from audit_log where action = 'key.lease' and key_id = ${first.keyId}`,
      );
      expect(Number(leases[0]!.n)).toBe(2);
      expect(w.leasesHeld).toBe(1);
      await new Promise((r) => setTimeout(r, 3200)); // lease over; the sweep drops it
      expect(w.leasesHeld).toBe(0);
      expect(deks().map(wiped)).toEqual([true, true]);
      await w.append('user:ttl', { text: 'three' });
      expect(w.leasesHeld).toBe(1);
      expect(deks().map(wiped)).toEqual([true, true, false]);
      await w.close();
      expect(w.leasesHeld).toBe(0);
      expect(deks().map(wiped)).toEqual([true, true, true]);
      expect((await svc.app.log.list('user:ttl')).map((e) => e.text)).toEqual(['one', 'two', 'three']);
    } finally {
      await svc.close();
      await short.drop();
    }
  });
});

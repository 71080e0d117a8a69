/**
 * The writer client when registration answers are lost, against a real service on
 * PostgreSQL and a real MinIO, through a tiny HTTP proxy that can forward a
 * registration and then drop the connection before the answer (or answer 502, or
 * drop it before forwarding): the writer's retries reuse the same entry ids and
 * places, so nothing is stored twice; when retries are exhausted the error is
 * `LetheOutcomeUnknownError`, and `retry` settles it without a duplicate.
 */
import { randomBytes } from 'node:crypto';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LetheOutcomeUnknownError, LetheWriter, ServiceClient, ServiceError, UnreachableError } from '../../src/client/index.js';
import { attemptOutcome } from '../../src/client/outcome.js';
import { loadConfig } from '../../src/config/index.js';
import { queryRows } from '../../src/db/client.js';
import { startServer, type RunningServer } from '../../src/app/serve.js';
import { isLetheError } from '../../src/errors.js';
import { createLogger } from '../../src/observability/logger.js';
import { S3ObjectStore } from '../../src/storage/s3.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { minioEnv, TOKENS, tempDir, testEnv } from '../support/vault.js';

/** What the proxy does to the next registrations (`POST /v1/segments`). */
type Fault = 'drop-after' | 'bad-gateway-after' | 'drop-before';

describe('the writer client when answers are lost', () => {
  let db: TestDatabase;
  let server: RunningServer;
  let proxy: Server;
  let proxyUrl = '';
  let store: S3ObjectStore;
  let faults: Fault[] = [];
  let registrations = 0;

  beforeAll(async () => {
    db = await createTestDatabase();
    const env = testEnv({ databaseUrl: db.url, dataDir: tempDir(), extra: { PORT: '0', ...minioEnv('lethe-wretry') } });
    const config = loadConfig(env);
    server = await startServer(config, createLogger('silent'));
    store = new S3ObjectStore({ ...config.s3!, bucket: config.bucket });
    proxy = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = Buffer.concat(chunks);
      const isRegistration = req.method === 'POST' && req.url === '/v1/segments';
      const fault = isRegistration ? faults.shift() : undefined;
      if (isRegistration) registrations++;
      if (fault === 'drop-before') {
        req.socket.destroy();
        return;
      }
      const upstream = httpRequest(
        { host: '127.0.0.1', port: server.port, method: req.method, path: req.url, headers: { ...req.headers, host: `127.0.0.1:${server.port}` } },
        (up) => {
          const answer: Buffer[] = [];
          up.on('data', (c: Buffer) => answer.push(c));
          up.on('end', () => {
            // the service has answered (and committed): now lose its answer
            if (fault === 'drop-after') req.socket.destroy();
            else if (fault === 'bad-gateway-after') res.writeHead(502, { 'content-type': 'text/plain' }).end('bad gateway');
            else res.writeHead(up.statusCode ?? 502, up.headers).end(Buffer.concat(answer));
          });
        },
      );
      upstream.on('error', () => req.socket.destroy());
      upstream.end(body);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    proxy?.closeAllConnections();
    await new Promise((r) => proxy?.close(r));
    await server?.close();
    await db?.drop();
  });
  beforeEach(() => {
    faults = [];
    registrations = 0;
  });

  const writer = (extra: Partial<ConstructorParameters<typeof LetheWriter>[0]> = {}) =>
    new LetheWriter({ baseUrl: proxyUrl, token: TOKENS.writer, store, segmentMaxAgeMs: 10, reserveBlock: 4, retryDelayMs: 10, ...extra });
  const indexedOf = async (ids: readonly string[]) =>
    Number((await queryRows<{ n: string }>(server.app.db.db, sql`select count(*) as n from log_entries where entry_id in ${ids}`))[0]!.n);
  const tag = () => randomBytes(5).toString('hex');

  it('a registration whose answer was lost is retried with the same ids: every append stored once', async () => {
    for (const fault of ['drop-after', 'bad-gateway-after', 'drop-before'] as const) {
      const subject = `user:wr-${fault}-${tag()}`;
      faults = [fault, fault];
      registrations = 0;
      const w = writer({ segmentMaxAgeMs: 200 }); // the three appends in one segment
      const texts = [`first ${tag()}`, `second ${tag()}`, `third ${tag()}`];
      const appended = await Promise.all(texts.map((text) => w.append(subject, { text })));
      await w.close();
      expect(registrations, fault).toBe(3);
      const entries = await server.app.log.list(subject);
      expect(entries.map((e) => e.entryId).sort(), fault).toEqual(appended.map((a) => a.entryId).sort());
      expect(entries.map((e) => e.text).sort(), fault).toEqual([...texts].sort());
    }
  });

  it('when every attempt goes unanswered the append rejects with LetheOutcomeUnknownError, and retry settles it without a duplicate', async () => {
    const subject = `user:wr-unknown-${tag()}`;
    faults = ['drop-after', 'bad-gateway-after', 'drop-after'];
    const w = writer({ attempts: 3 });
    const err = await w.append(subject, { text: `maybe stored ${tag()}` }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(LetheOutcomeUnknownError);
    const unknown = err as LetheOutcomeUnknownError;
    expect(unknown.code).toBe('unavailable');
    expect(unknown.retryable).toBe(true);
    expect(unknown.entryIds).toHaveLength(1);
    expect(unknown.message).not.toContain(subject);
    expect(registrations).toBe(3);
    // it was in fact stored (the proxy forwarded every attempt): the retry learns so, and adds nothing
    expect(await indexedOf(unknown.entryIds)).toBe(1);
    const settled = await w.retry(unknown);
    expect(settled.map((s) => s.entryId)).toEqual(unknown.entryIds);
    expect((await server.app.log.list(subject)).map((e) => e.entryId)).toEqual(unknown.entryIds);
    await w.close();
  });

  it('an append whose registration never reached the service is registered by the retry', async () => {
    const subject = `user:wr-never-${tag()}`;
    faults = ['drop-before', 'drop-before'];
    const w = writer({ attempts: 2 });
    const texts = [`one ${tag()}`, `two ${tag()}`];
    const errors = await Promise.all(
      texts.map((text) =>
        w.append(subject, { text }).then(
          () => undefined,
          (e: unknown) => e,
        ),
      ),
    );
    expect(errors.every((e) => e instanceof LetheOutcomeUnknownError)).toBe(true);
    const ids = errors.flatMap((e) => (e as LetheOutcomeUnknownError).entryIds);
    expect(new Set(ids).size).toBe(2);
    expect(await indexedOf(ids)).toBe(0);
    // settled one by one: each retry registers its own entry; a second retry changes nothing
    for (const e of errors) await w.retry(e as LetheOutcomeUnknownError);
    await w.retry(errors[0] as LetheOutcomeUnknownError);
    const entries = await server.app.log.list(subject);
    expect(entries.map((e) => e.entryId).sort()).toEqual([...ids].sort());
    expect(entries.map((e) => e.text).sort()).toEqual([...texts].sort());
    await w.close();
  });

  it('an attempt that was never sent, or refused, is not an unknown outcome', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const refused = await new ServiceClient({ baseUrl: `http://127.0.0.1:${port}`, token: TOKENS.writer }).json('GET', '/healthz').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(UnreachableError);
    expect(attemptOutcome(refused)).toBe('not_sent');
    const client = new ServiceClient({ baseUrl: `http://127.0.0.1:${server.port}`, token: TOKENS.writer });
    const invalid = await client.json('POST', '/v1/segments', { body: { segment: 'nope', entries: [] } }).catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(ServiceError);
    expect(attemptOutcome(invalid)).toBe('refused');
    faults = ['bad-gateway-after'];
    const viaProxy = new ServiceClient({ baseUrl: proxyUrl, token: TOKENS.writer });
    const gateway = await viaProxy.json('POST', '/v1/segments', { body: { segment: 'nope', entries: [] } }).catch((e: unknown) => e);
    expect(attemptOutcome(gateway)).toBe('unknown');
  });

  it('refuses, before sealing anything, an entry the service would refuse', async () => {
    const w = writer();
    const subject = `user:wr-bad-${tag()}`;
    for (const entry of [
      { text: 'x', kind: '' },
      { text: 'x', kind: 'k'.repeat(65) },
      { text: 'x', metadata: [1] as unknown as Record<string, unknown> },
      { text: 'x', metadata: { big: 'm'.repeat(17 * 1024) } },
    ]) {
      const e = await w.append(subject, entry).catch((x: unknown) => x);
      expect(isLetheError(e, 'validation_failed'), JSON.stringify(entry).slice(0, 60)).toBe(true);
    }
    expect(isLetheError(await w.append(subject, { text: 't'.repeat(64 * 1024 + 1) }).catch((x: unknown) => x), 'payload_too_large')).toBe(true);
    await w.close();
    expect(registrations).toBe(0);
  });

  it('refuses, before sealing, metadata too deep to write as JSON, NUL and lone surrogates, with validation_failed (never a RangeError)', async () => {
    const w = writer();
    const subject = `user:wr-deep-${tag()}`;
    const nested = (depth: number): Record<string, unknown> => {
      let v: Record<string, unknown> = { leaf: 1 };
      for (let i = 1; i < depth; i++) v = { a: v };
      return v;
    };
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic['self'] = cyclic;
    const cases: Array<{ entry: { text: string; kind?: string; metadata?: Record<string, unknown> }; says: RegExp }> = [
      { entry: { text: 'x', metadata: nested(10_000) }, says: /^metadata: JSON nested deeper than 32 levels/ },
      { entry: { text: 'x', metadata: nested(32) }, says: /^metadata: JSON nested deeper than 32 levels/ },
      { entry: { text: 'x', metadata: cyclic }, says: /^metadata: JSON nested deeper/ },
      { entry: { text: 'x', kind: 'no\u0000te' }, says: /^kind: must not contain NUL/ },
      { entry: { text: 'x', metadata: { 'k\uD800ey': 1 } }, says: /^metadata: a key must not contain an unpaired UTF-16 surrogate/ },
      { entry: { text: 'x', metadata: { a: { b: 'lone \uDC00' } } }, says: /^metadata\.a\.b: must not contain an unpaired UTF-16 surrogate/ },
      { entry: { text: 'nul \u0000' }, says: /^text: must not contain NUL/ },
    ];
    for (const c of cases) {
      const e = await w.append(subject, c.entry).catch((x: unknown) => x);
      expect(e).not.toBeInstanceOf(RangeError);
      expect(isLetheError(e, 'validation_failed'), String(e)).toBe(true);
      expect((e as Error).message).toMatch(c.says);
    }
    // 31 levels of metadata (32 counting the entry) is what the service admits
    expect((await w.append(subject, { text: 'at the limit', metadata: nested(31) })).entryId).toMatch(/^entry_/);
    await w.close();
    expect(registrations).toBe(1);
  });
});

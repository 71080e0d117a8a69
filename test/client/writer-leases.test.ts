/**
 * The writer's leases end when it is done with them — a real `lethe serve` on
 * PostgreSQL with its erasure worker running, segments on MinIO:
 * - close() releases every lease it holds: an erasure of the subject right after it
 *   finishes within seconds, with the lease TTL at its default 300 s (measured);
 * - close() while the subject's erasure waits at drain_leases (its key destroyed a
 *   moment before) ends the drain at once;
 * - an idle writer releases its leases and zeroes its DEKs after `idleTimeoutMs`, and
 *   leases again on the next append;
 * - a renewed lease releases the one it replaces;
 * - a service that does not answer does not hang close(): it returns after about
 *   `releaseTimeoutMs` naming the unreleased lease; closing again releases it.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { LetheWriter, type WriterOptions } from '../../src/client/index.js';
import { loadConfig } from '../../src/config/index.js';
import { queryRows } from '../../src/db/client.js';
import { startServer, type RunningServer } from '../../src/app/serve.js';
import { createLogger } from '../../src/observability/logger.js';
import { S3ObjectStore } from '../../src/storage/s3.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { TOKENS, tempDir, testEnv } from '../support/vault.js';
import { leasedDeks, wiped } from '../support/leased-deks.js';

// the DEKs the writer leases, to check it zeroes them (test/support/leased-deks.ts)
vi.mock('../../src/crypto/index.js', async (original) =>
  (await import('../support/leased-deks.js')).trackLeasedDeks(await original<typeof import('../../src/crypto/index.js')>()),
);

const tag = () => randomBytes(5).toString('hex');
const minio = inject('minio');

interface ErasureBody {
  status: string;
  finishedAt?: string;
  steps: Array<{ name: string; status: string; detail?: string; finishedAt?: string }>;
  residuals: Array<{ kind: string; until?: string }>;
}

/** A lethe service of its own: database, buckets, and the environment `extra` adds. */
async function service(extra: Record<string, string> = {}): Promise<{ server: RunningServer; db: TestDatabase; store: S3ObjectStore; close(): Promise<void> }> {
  const db = await createTestDatabase();
  const bucket = `lethe-wlease-${tag()}`;
  const env = testEnv({
    databaseUrl: db.url,
    dataDir: tempDir(),
    extra: {
      PORT: '0',
      LETHE_ERASURE_POLL_MS: '1000',
      S3_ENDPOINT: minio.endpoint,
      S3_ACCESS_KEY: minio.accessKey,
      S3_SECRET_KEY: minio.secretKey,
      S3_BUCKET: bucket,
      S3_BACKUP_BUCKET: `${bucket}-bak`,
      ...extra,
    },
  });
  const server = await startServer(loadConfig(env), createLogger('silent'));
  return {
    server,
    db,
    store: new S3ObjectStore({ ...minio, bucket }),
    async close() {
      await server.close();
      await db.drop();
    },
  };
}

async function api<T>(server: RunningServer, method: string, path: string, role: keyof typeof TOKENS, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`http://127.0.0.1:${server.port}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKENS[role]}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

const erasure = (server: RunningServer, id: string) => api<ErasureBody>(server, 'GET', `/v1/erasures/${id}`, 'eraser').then((r) => r.body);
const finished = (server: RunningServer, id: string, timeoutMs: number) =>
  waitFor(
    'the erasure to finish',
    async () => {
      const v = await erasure(server, id);
      return v.status === 'running' || v.status === 'pending' ? undefined : v;
    },
    timeoutMs,
  );

async function leaseRows(server: RunningServer, keyId: string): Promise<Array<{ lease_id: string; released: boolean }>> {
  return queryRows(
    server.app.db.db,
    sql`select l.detail::json ->> 'leaseId' as lease_id,
               exists (select 1 from audit_log r where r.action = 'key.lease.release' and r.detail::json ->> 'leaseId' = l.detail::json ->> 'leaseId') as released
          from audit_log l where l.action = 'key.lease' and l.key_id = ${keyId} order by l.seq`,
  );
}

describe('the writer releases its leases (lease TTL at its default, 300 s)', () => {
  let svc: Awaited<ReturnType<typeof service>>;
  beforeAll(async () => {
    svc = await service();
    expect(svc.server.app.config.leaseTtlSeconds).toBe(300);
  });
  afterAll(async () => {
    await svc?.close();
  });

  const writer = (extra: Partial<WriterOptions> = {}) =>
    new LetheWriter({ baseUrl: `http://127.0.0.1:${svc.server.port}`, token: TOKENS.writer, store: svc.store, segmentMaxAgeMs: 20, reserveBlock: 4, ...extra });

  it('close() releases every lease: an erasure of the subject right after finishes within seconds', async () => {
    const w = writer();
    const s = `user:close-${tag()}`;
    const other = `user:close-other-${tag()}`;
    const [a] = await Promise.all([
      w.append(s, { text: 'Marta takes the 7:40 ferry to the island on Fridays.' }),
      w.append(other, { text: 'Unrelated note about the ferry timetable.' }),
    ]);
    expect(w.leasesHeld).toBe(2);
    const report = await w.close();
    expect(report).toEqual({ released: 2, unreleased: [] });
    expect(w.leasesHeld).toBe(0);
    expect(await leaseRows(svc.server, a!.keyId)).toEqual([{ lease_id: expect.any(String), released: true }]);

    const started = Date.now();
    const req = await api<{ erasureId: string }>(svc.server, 'POST', '/v1/erasures', 'eraser', { subject: s });
    expect(req.status).toBe(202);
    const v = await finished(svc.server, req.body.erasureId, 60_000);
    const elapsed = Date.parse(v.finishedAt!) - started;
    console.log(`erasure after the writer's close(): finished ${elapsed} ms after the request (lease TTL 300 s)`);
    expect(v.status).toBe('completed');
    expect(elapsed).toBeLessThan(30_000);
    expect(v.steps.find((st) => st.name === 'drain_leases')?.detail).toMatch(/^every lease ended, the last released by its writer at /);
    expect(v.residuals.find((r) => r.kind === 'lease')).toBeUndefined();
  }, 120_000);

  it('close() while the erasure waits at drain_leases (its key just destroyed) ends the drain at once', async () => {
    const w = writer();
    const s = `user:close-drain-${tag()}`;
    const { keyId } = await w.append(s, { text: 'Jonas hides the shed key under the third flowerpot.' });
    const req = await api<{ erasureId: string }>(svc.server, 'POST', '/v1/erasures', 'eraser', { subject: s });
    expect(req.status).toBe(202);
    // the worker runs it up to drain_leases, where it parks behind the writer's lease (300 s)
    await waitFor(
      'the erasure to park at drain_leases',
      async () => {
        const v = await erasure(svc.server, req.body.erasureId);
        const drain = v.steps.find((st) => st.name === 'drain_leases');
        return drain?.status === 'running' && /waiting for key leases/.test(drain.detail ?? '') ? v : undefined;
      },
      60_000,
    );
    expect((await api(svc.server, 'POST', '/v1/keys/validity', 'backup', { keyIds: [keyId] })).body).toEqual({
      keys: { [keyId]: expect.stringMatching(/^(destroyed|destruction_pending)$/) },
    });

    const closedAt = Date.now();
    expect(await w.close()).toEqual({ released: 1, unreleased: [] });
    const v = await finished(svc.server, req.body.erasureId, 60_000);
    const drainedAt = Date.parse(v.steps.find((st) => st.name === 'drain_leases')!.finishedAt!);
    console.log(
      `close() during drain_leases: the drain ended ${drainedAt - closedAt} ms and the erasure ${Date.parse(v.finishedAt!) - closedAt} ms after close() (lease TTL 300 s)`,
    );
    expect(v.status).toBe('completed');
    expect(drainedAt - closedAt).toBeLessThan(5_000);
    expect(v.residuals.find((r) => r.kind === 'lease')).toMatchObject({ until: expect.any(String) });
    expect(Date.parse(v.residuals.find((r) => r.kind === 'lease')!.until!)).toBeLessThan(closedAt + 5_000);
  }, 120_000);

  it('an idle writer releases its leases and zeroes its DEKs after idleTimeoutMs, and leases again on the next append', async () => {
    for (const bad of [0, -1, Number.NaN]) expect(() => writer({ idleTimeoutMs: bad })).toThrow(/idleTimeoutMs must be a positive number/);
    expect(() => writer({ releaseTimeoutMs: 0 })).toThrow(/releaseTimeoutMs must be a positive number/);
    const w = writer({ idleTimeoutMs: 300 });
    const s = `user:idle-${tag()}`;
    const before = leasedDeks.length;
    const deks = () => leasedDeks.slice(before);
    const first = await w.append(s, { text: 'first note' });
    expect(w.leasesHeld).toBe(1);
    expect(deks().map(wiped)).toEqual([false]);
    const idleSince = Date.now();
    await waitFor('the idle writer to drop its lease', async () => (w.leasesHeld === 0 ? true : undefined), 5_000, 20);
    expect(deks().map(wiped)).toEqual([true]);
    expect(Date.now() - idleSince).toBeGreaterThanOrEqual(200); // idle from the end of its last upload (the sweep runs every 75 ms)
    await waitFor('the release row', async () => ((await leaseRows(svc.server, first.keyId)).every((r) => r.released) ? true : undefined), 5_000);
    expect((await svc.server.app.keys.leases(first.keyId)).outstandingUntil).toBeNull();

    const second = await w.append(s, { text: 'second note' });
    expect(second.keyId).toBe(first.keyId);
    expect(w.leasesHeld).toBe(1);
    expect(deks().map(wiped)).toEqual([true, false]);
    const rows = await leaseRows(svc.server, first.keyId);
    expect(rows.map((r) => r.released)).toEqual([true, false]);
    // appending keeps it busy: no release while appends come faster than the idle timeout
    for (let i = 0; i < 5; i++) {
      await w.append(s, { text: `busy ${i}` });
      await new Promise((r) => setTimeout(r, 100));
    }
    expect((await leaseRows(svc.server, first.keyId)).map((r) => r.released)).toEqual([true, false]);
    expect(await w.close()).toEqual({ released: 1, unreleased: [] });
    // every DEK and every copy an append sealed with
    expect(deks().map(wiped)).toEqual([true, true]);
    expect(deks().flatMap((d) => d.copies)).toHaveLength(7);
    expect((await svc.server.app.log.list(s)).map((e) => e.text)).toEqual(['first note', 'second note', 'busy 0', 'busy 1', 'busy 2', 'busy 3', 'busy 4']);
  }, 60_000);

  it('close() does not hang on a service that does not answer: it names the unreleased lease; closing again releases it', async () => {
    const proxy = await freezingProxy(svc.server.port);
    try {
      const w = new LetheWriter({ baseUrl: proxy.url, token: TOKENS.writer, store: svc.store, segmentMaxAgeMs: 20, releaseTimeoutMs: 500 });
      const s = `user:frozen-${tag()}`;
      const { keyId } = await w.append(s, { text: 'written before the service froze' });
      proxy.freeze(true);
      const started = Date.now();
      const report = await w.close();
      const took = Date.now() - started;
      console.log(`close() against a service that does not answer returned after ${took} ms (releaseTimeoutMs 500)`);
      expect(took).toBeLessThan(3_000);
      expect(w.leasesHeld).toBe(0); // the DEK is zeroed whatever the service does
      expect(report.released).toBe(0);
      expect(report.unreleased).toEqual([
        { subject: s, leaseId: expect.stringMatching(/^lease_/), expiresAt: expect.any(Date), error: expect.objectContaining({ code: 'unavailable' }) },
      ]);
      expect((await leaseRows(svc.server, keyId)).map((r) => r.released)).toEqual([false]);

      proxy.freeze(false);
      // closing again releases it; on a loaded machine one answer may miss the 500 ms, so close until none is left (a release is idempotent)
      let again = await w.close();
      let released = again.released;
      for (let tries = 1; again.unreleased.length > 0 && tries < 10; tries++) {
        again = await w.close();
        released += again.released;
      }
      expect({ released, unreleased: again.unreleased }).toEqual({ released: 1, unreleased: [] });
      expect(await leaseRows(svc.server, keyId)).toEqual([{ lease_id: report.unreleased[0]!.leaseId, released: true }]);
    } finally {
      await proxy.close();
    }
  }, 60_000);
});

// TTL 20 s: the writer renews at 16 s; the second append at 16.3 s leaves 3.7 s before the first
// lease expires (a writer never releases an expired lease: 2 s, then 10 s, failed on a loaded machine)
describe('renewal (lease TTL 20 s)', () => {
  let svc: Awaited<ReturnType<typeof service>>;
  beforeAll(async () => {
    svc = await service({ LETHE_LEASE_TTL_SECONDS: '20' });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('a renewed lease releases the one it replaces', async () => {
    const w = new LetheWriter({ baseUrl: `http://127.0.0.1:${svc.server.port}`, token: TOKENS.writer, store: svc.store, segmentMaxAgeMs: 10 });
    const s = `user:renew-${tag()}`;
    const first = await w.append(s, { text: 'one' });
    await new Promise((r) => setTimeout(r, 16_300)); // past the renewal point (TTL - TTL/5), before the expiry
    await w.append(s, { text: 'two' });
    const rows = await waitFor(
      'the replaced lease to be released',
      async () => {
        const r = await leaseRows(svc.server, first.keyId);
        return r.length === 2 && r[0]!.released ? r : undefined;
        // the release is sent after the renewal answers, off the append's path: seconds on a busy machine (only a release counts, never an expiry)
      },
      5_000,
      20,
    );
    expect(rows.map((r) => r.released)).toEqual([true, false]);
    // close releases the current lease; the replaced one's release counts too when its answer had not reached the writer yet
    const closed = await w.close();
    expect(closed.unreleased).toEqual([]);
    expect([1, 2]).toContain(closed.released);
    expect((await leaseRows(svc.server, first.keyId)).map((r) => r.released)).toEqual([true, true]);
  }, 45_000);
});

/** An HTTP proxy to the service that, frozen, takes requests and never answers them. */
async function freezingProxy(port: number): Promise<{ url: string; freeze(on: boolean): void; close(): Promise<void> }> {
  let frozen = false;
  const held: ServerResponse[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (frozen) {
      held.push(res);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([k, v]) => typeof v === 'string' && k !== 'host' && k !== 'connection' && k !== 'content-length'),
      ) as Record<string, string>;
      fetch(`http://127.0.0.1:${port}${req.url}`, { method: req.method!, headers, ...(chunks.length ? { body: Buffer.concat(chunks) } : {}) })
        .then(async (upstream) => {
          const body = Buffer.from(await upstream.arrayBuffer());
          res.writeHead(
            upstream.status,
            Object.fromEntries([...upstream.headers].filter(([k]) => k !== 'content-encoding' && k !== 'transfer-encoding' && k !== 'content-length')),
          );
          res.end(body);
        })
        .catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    freeze(on) {
      frozen = on;
    },
    async close() {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

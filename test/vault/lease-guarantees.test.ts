/**
 * Two guarantees of key leases (SECURITY.md: "A lease is granted only if the key is
 * still active when its audit row commits"), each checked where it is easiest to break:
 * - an erasure requested while 64 clients lease the subject's key in a loop (PostgreSQL,
 *   lease TTL 3 s): every granted lease has its `key.lease` audit row, none is granted on
 *   the key once the erasure was accepted or after its destruction, what the erasure
 *   recorded about leases (the destruction's leasedUntil, drain_leases, the lease residual
 *   signed into the certificate) covers the latest expiry handed out, and every refusal is
 *   a clean problem document;
 * - a `lethe serve` child process whose PostgreSQL traffic is held (Toxiproxy) while lease
 *   requests wait for their answer, then SIGKILLed: none of those requests gets a DEK, the
 *   audit chain still verifies, and every DEK a client ever received has its audit row.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApp } from '../../src/app/open.js';
import { loadConfig } from '../../src/config/index.js';
import { queryRows } from '../../src/db/client.js';
import { createLogger } from '../../src/observability/logger.js';
import { type Answer, answer, sleep, toxiproxy } from '../faults/support.js';
import type { TcpProxy } from '../../infra/toxiproxy-client.js';
import { ok } from '../support/http.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { CLI, type RunningService, startService } from '../support/process.js';
import { openTestApp, type TestApp, tempDir, testEnv } from '../support/vault.js';

const tag = () => randomBytes(5).toString('hex');

interface Granted {
  readonly keyId: string;
  readonly leaseId: string;
  readonly expiresAt: string;
  /** performance.now() when the request was sent and when its answer came. */
  readonly sentAt: number;
  readonly answeredAt: number;
}
interface Refused {
  readonly status: number;
  readonly code: string | undefined;
  readonly contentType: string | null;
  readonly sentAt: number;
}
interface ErasureBody {
  status: string;
  steps: Array<{ name: string; status: string; detail?: string; finishedAt?: string }>;
  residuals: Array<{ kind: string; until?: string }>;
  certificate?: { payload: { residuals?: Array<{ kind: string; until?: string }> } };
}

const CLIENTS = 64;

function countBy(keys: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const k of keys) counts[k] = (counts[k] ?? 0) + 1;
  return counts;
}

describe('an erasure racing leasing clients (PostgreSQL, lease TTL 3 s)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await openTestApp({ app: { erasureWorker: false }, extraEnv: { LETHE_LEASE_TTL_SECONDS: '3' } });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it('an erasure racing 64 leasing clients never misses a lease', { timeout: 60_000 }, async () => {
    const s = `user:lease-race-${tag()}`;
    await ok(t.call('POST', `/v1/subjects/${s}/entries`, { role: 'writer', body: { text: 'Ravi hides the shed key under the third flowerpot.' } }), 201);

    const granted: Granted[] = [];
    const refused: Refused[] = [];
    let running = true;
    const clients = Array.from({ length: CLIENTS }, async () => {
      while (running) {
        const sentAt = performance.now();
        const res = await t.call('POST', `/v1/subjects/${s}/key/lease`, { role: 'writer' });
        const text = await res.text();
        if (res.status === 200) {
          const body = JSON.parse(text) as { keyId: string; leaseId: string; expiresAt: string; dek: string };
          expect(body.dek).toEqual(expect.any(String));
          granted.push({ keyId: body.keyId, leaseId: body.leaseId, expiresAt: body.expiresAt, sentAt, answeredAt: performance.now() });
        } else {
          let code: string | undefined;
          try {
            code = (JSON.parse(text) as { code?: string }).code;
          } catch {
            // not JSON: the check below names it
          }
          refused.push({ status: res.status, code, contentType: res.headers.get('content-type'), sentAt });
          // a refused client backs off a moment (the erasure's own statements need the event loop too)
          await sleep(20);
        }
      }
    });

    // the clients lease for a while, then the erasure is asked for while they go on, and driven to its end
    while (granted.length < 4 * CLIENTS) await sleep(5);
    const requestSentAt = performance.now();
    const { erasureId } = await ok<{ erasureId: string }>(t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject: s } }), 202);
    const acceptedAt = performance.now();
    let v: ErasureBody;
    try {
      await t.app.erasures.settle(erasureId, 45_000);
      v = await ok<ErasureBody>(t.call('GET', `/v1/erasures/${erasureId}`, { role: 'eraser' }), 200);
    } finally {
      running = false;
      await Promise.all(clients);
    }
    expect(v.status, JSON.stringify(v.steps)).toBe('completed');

    const [destruction] = await queryRows<{ key_id: string; leased_until: Date | string | null }>(
      t.app.db.db,
      sql`select d.key_id, d.leased_until from destruction_ledger d
           where d.key_id in (select key_id from audit_log where action = 'key.destroy' and detail::json ->> 'reason' like ${`erasure ${erasureId}%`})`,
    );
    expect(destruction, 'the erasure destroyed no key').toBeDefined();
    const erased = destruction!.key_id;
    const onErased = granted.filter((g) => g.keyId === erased);
    console.log(
      `lease race: ${granted.length} granted (${onErased.length} on the erased key), ${refused.length} refused ` +
        `${JSON.stringify(countBy(refused.map((r) => `${r.status} ${r.code}`)))}`,
    );

    // positive controls: the race happened — leases were granted on the erased key, requests were in flight
    // when the erasure was asked for, and leases were refused during it
    expect(onErased.length).toBeGreaterThan(0);
    expect(
      granted.filter((g) => g.sentAt < requestSentAt && g.answeredAt > requestSentAt).length + refused.filter((r) => r.sentAt < requestSentAt).length,
    ).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);

    // the subject is erased: no lease, on the old key or a new one, went to a request sent after the erasure was accepted
    // (the request fences the key: a lease batch that ignored the fence, or a cached DEK handed out unchecked, fails here)
    expect(granted.filter((g) => g.keyId !== erased)).toEqual([]);
    expect(granted.filter((g) => g.sentAt > acceptedAt)).toEqual([]);

    // every refusal is a clean problem document: the erasure in progress, or the subject erased — never a 5xx
    for (const r of refused) {
      expect(r.contentType, JSON.stringify(r)).toMatch(/^application\/problem\+json/);
      expect([`409 erasure_in_progress`, `410 subject_erased`, `409 subject_erased`], JSON.stringify(r)).toContain(`${r.status} ${r.code}`);
    }

    // every granted lease has its key.lease audit row, with its key and expiry (a DEK handed out before or without its
    // audit row fails here), and the chain verifies
    const rows = await queryRows<{ lease_id: string; key_id: string; expires_at: string; seq: string }>(
      t.app.db.db,
      sql`select detail::json ->> 'leaseId' as lease_id, key_id, detail::json ->> 'expiresAt' as expires_at, seq::text as seq
            from audit_log where action = 'key.lease' and key_id = ${erased}`,
    );
    const audited = new Map(rows.map((r) => [r.lease_id, r]));
    const unaudited = granted.filter((g) => {
      const row = audited.get(g.leaseId);
      return !row || row.key_id !== g.keyId || Date.parse(row.expires_at) !== Date.parse(g.expiresAt);
    });
    expect(unaudited, 'granted leases without their key.lease audit row').toEqual([]);
    expect(await t.app.audit.verify(t.app.db.db)).toMatchObject({ ok: true });

    // no lease of the key was recorded after its destruction in the chain
    const [destroyRow] = await queryRows<{ seq: string }>(
      t.app.db.db,
      sql`select seq::text as seq from audit_log where action = 'key.destroy' and key_id = ${erased}`,
    );
    expect(rows.filter((r) => BigInt(r.seq) > BigInt(destroyRow!.seq))).toEqual([]);

    // what the erasure recorded covers every lease it granted: the destruction's leasedUntil (a destruction that read the
    // leases before the last lease batch committed records too early an expiry), drain_leases (ended no earlier than the
    // last expiry: nothing was released), the lease residual and the certificate's signed copy of it
    const lastExpiry = Math.max(...onErased.map((g) => Date.parse(g.expiresAt)));
    const leasedUntil = destruction!.leased_until ? new Date(destruction!.leased_until).getTime() : -1;
    expect(leasedUntil, 'destruction_ledger.leased_until').toBeGreaterThanOrEqual(lastExpiry);
    const drain = v.steps.find((st) => st.name === 'drain_leases')!;
    expect(drain).toMatchObject({ status: 'done', detail: expect.stringMatching(/^every lease expired/) });
    expect(Date.parse(drain.finishedAt!)).toBeGreaterThanOrEqual(lastExpiry);
    const residual = v.residuals.find((r) => r.kind === 'lease');
    expect(Date.parse(residual?.until ?? ''), 'lease residual').toBeGreaterThanOrEqual(lastExpiry);
    const signed = v.certificate?.payload.residuals?.find((r) => r.kind === 'lease');
    expect(signed?.until).toBe(residual!.until);
  });
});

describe('a lethe serve killed while its lease answers are held (PostgreSQL through Toxiproxy)', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let env: Record<string, string>;
  const services: RunningService[] = [];
  const serve = async () => {
    const s = await startService(process.execPath, [...CLI, 'serve'], env);
    services.push(s);
    return s;
  };
  beforeAll(async () => {
    db = await createTestDatabase('lethe_lcrash');
    const u = new URL(db.url);
    proxy = await toxiproxy().create(`lease_crash_${tag()}`, `${u.hostname}:${u.port || '5432'}`);
    u.hostname = proxy.host;
    u.port = String(proxy.port);
    env = testEnv({
      databaseUrl: u.toString(),
      dataDir: tempDir('lethe-lcrash-'),
      extra: { LETHE_LEASE_TTL_SECONDS: '60', LETHE_DB_POOL_SIZE: '1', LETHE_INDEXER: 'false' },
    });
  }, 60_000);
  afterAll(async () => {
    for (const s of services) await s.stop().catch(() => {});
    await proxy?.delete().catch(() => {});
    await db?.drop();
    if (env) rmSync(env.LETHE_DATA_DIR!, { recursive: true, force: true });
  });

  it('a crash between audit and answer never hands out an unaudited DEK', { timeout: 180_000 }, async () => {
    const subjects = [`user:lcrash-a-${tag()}`, `user:lcrash-b-${tag()}`];
    const received: Array<{ keyId: string; leaseId: string; dek: string }> = [];
    const leaseOn = async (svc: RunningService, subject: string, timeoutMs = 20_000) => {
      const r = await answer(svc, 'POST', `/v1/subjects/${subject}/key/lease`, { role: 'writer', timeoutMs });
      if (r.status === 200) received.push(r.body as { keyId: string; leaseId: string; dek: string });
      return r;
    };
    const direct = postgres(db.url, { max: 1, onnotice: () => {} });
    const leaseRows = async () => (await direct<{ n: number }[]>`select count(*)::int as n from audit_log where action = 'key.lease'`)[0]!.n;
    try {
      const first = await serve();
      // positive control: leases answered through the proxy, one after the other and at once
      for (const s of subjects) expect((await leaseOn(first, s)).status).toBe(200);
      expect((await Promise.all(Array.from({ length: 16 }, (_, i) => leaseOn(first, subjects[i % 2]!)))).map((r) => r.status)).toEqual(Array(16).fill(200));
      expect(await leaseRows()).toBe(received.length);

      // PostgreSQL's answers are held (the statements still reach it): a lease batch commits its audit rows and the
      // service never hears so. Once one has, the service is killed while the requests wait. (A round in which no batch
      // reached PostgreSQL — it waited on a read that is held too — is let go and tried again: its answers are leases.
      // The service has one pooled connection and no indexer: postgres.js asks PostgreSQL to describe a statement before
      // it first runs it on a connection, and with several connections a batch landing on one that had not run it
      // waited on that held description, round after round; on the one connection the positive control prepared it.)
      let held: Answer[] = [];
      let committedWhileHeld = 0;
      let receivedBefore = 0;
      let rounds = 0;
      const grantedWhileHeld: Answer[] = [];
      for (; rounds < 20 && committedWhileHeld === 0 && grantedWhileHeld.length === 0; rounds++) {
        receivedBefore = received.length;
        const rowsBefore = await leaseRows();
        const toxic = await proxy.add({ type: 'timeout', attributes: { timeout: 0 } }, { stream: 'downstream' });
        let holding = true;
        const pending = Array.from({ length: 16 }, (_, i) =>
          leaseOn(first, subjects[i % 2]!, 60_000).then((a) => {
            if (holding && a.status === 200) grantedWhileHeld.push(a);
            return a;
          }),
        );
        // a batch on a connection that prepared its statement commits within milliseconds
        const deadline = Date.now() + 2_000;
        while ((await leaseRows()) === rowsBefore && Date.now() < deadline) await sleep(50);
        committedWhileHeld = (await leaseRows()) - rowsBefore;
        if (committedWhileHeld === 0) {
          holding = false;
          await proxy.remove(toxic);
          await Promise.all(pending);
          continue;
        }
        await sleep(200);
        process.kill(-first.child.pid!, 'SIGKILL');
        await first.exited;
        held = await Promise.all(pending);
        // what the dead service committed, counted once it is dead: batches may have committed after the first one
        committedWhileHeld = (await leaseRows()) - rowsBefore;
      }
      console.log(
        `lease crash: ${committedWhileHeld} lease audit row(s) committed while PostgreSQL's answers were held (round ${rounds}); the held requests got ${JSON.stringify(countBy(held.map((a) => `${a.status}${a.code ? ` ${a.code}` : ''}`)))}`,
      );
      // no DEK left the service while PostgreSQL's answers were held: a lease answered before its audit row's commit was
      // confirmed (not awaited, or answered from the cache) would be answered here
      expect(grantedWhileHeld).toEqual([]);
      // positive control: the crash fell between the audit rows' commit and the answer
      expect(committedWhileHeld).toBeGreaterThan(0);
      expect(first.child.signalCode).toBe('SIGKILL');
      // no held request got a DEK: each lost its connection (status 0) or was refused
      expect(held.filter((a) => a.status === 200)).toEqual([]);
      expect(received).toHaveLength(receivedBefore);

      // the proxy healed, a new service takes leases again, extending the chain the dead one left
      await proxy.clear();
      const second = await serve();
      for (const s of subjects) expect((await leaseOn(second, s)).status).toBe(200);

      // every DEK a client ever received has its key.lease audit row on its key; the chain verifies
      const rows = await direct<{ lease_id: string; key_id: string }[]>`
        select detail::json ->> 'leaseId' as lease_id, key_id from audit_log where action = 'key.lease'`;
      const audited = new Map(rows.map((r) => [r.lease_id, r.key_id]));
      expect(received.filter((r) => audited.get(r.leaseId) !== r.keyId)).toEqual([]);
      // …and the leases audited but never answered are the ones the dead service committed while its answers were held
      expect(rows.length).toBe(received.length + committedWhileHeld);
      const app = await openApp(loadConfig({ ...env, DATABASE_URL: db.url }), { logger: createLogger('silent'), erasureWorker: false });
      try {
        expect(await app.audit.verify(app.db.db)).toMatchObject({ ok: true });
      } finally {
        await app.close();
      }
    } finally {
      await proxy.clear().catch(() => {});
      await direct.end({ timeout: 1 });
    }
  });
});

/**
 * lethe on a PostgreSQL primary and standby kept by pg_auto_failover
 * (infra/pg-failover.ts), `DATABASE_URL` naming both nodes with
 * `target_session_attrs=primary`. The primary is killed (SIGKILL) while 16 clients
 * append and lease. Invariants: every request answers — 200/201, or 503 problem+json
 * with Retry-After while no node takes writes, never another status — within 20 s;
 * every append acknowledged before, during or after the switch reads back from the new
 * primary (replication is synchronous while both nodes are up); once a node takes
 * writes again every client's appends land, the replica event listener reconnects
 * (/readyz ready) and an erasure completes.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PgFailover, startPgFailover } from '../../infra/pg-failover.js';
import { isLetheError } from '../../src/errors.js';
import { until } from '../support/until.js';
import { openTestApp, type TestApp } from '../support/vault.js';

const tag = () => randomBytes(4).toString('hex');
const CLIENTS = 16;

interface Answer {
  readonly status: number;
  readonly ms: number;
  readonly problem: boolean;
  readonly retryAfter: string | null;
}

describe('lethe on PostgreSQL with failover (pg_auto_failover)', () => {
  let pair: PgFailover;
  let t: TestApp;
  const subjects = Array.from({ length: CLIENTS }, (_, k) => `user:failover-${k}-${tag()}`);
  const acknowledged = new Map<string, string[]>(subjects.map((s) => [s, []]));

  beforeAll(async () => {
    pair = await startPgFailover();
    t = await openTestApp({ extraEnv: { DATABASE_URL: pair.url, LETHE_LEASE_TTL_SECONDS: '1' }, app: { erasureWorker: false } });
  }, 300_000);
  afterAll(async () => {
    await t?.close().catch(() => {});
    await pair?.stop();
  }, 60_000);

  const timed = async (call: () => Promise<Response>): Promise<{ res: Response; answer: Answer }> => {
    const started = Date.now();
    const res = await call();
    return {
      res,
      answer: {
        status: res.status,
        ms: Date.now() - started,
        problem: res.headers.get('content-type') === 'application/problem+json',
        retryAfter: res.headers.get('retry-after'),
      },
    };
  };

  it('16 clients append and lease while the primary is killed: 2xx or 503 with Retry-After, each within 20 s; nothing acknowledged is lost', {
    timeout: 180_000,
  }, async () => {
    const answers: Answer[] = [];
    let switched = false;
    let stopped = false;
    let landedAfter = 0;
    const client = async (subject: string) => {
      let n = 0;
      let afterSwitch = 0;
      // until this client has had 5 appends land after a node took writes again
      while (afterSwitch < 5 && !stopped) {
        // random words: no two subjects' entries alike, so the erasure's probe finds no near copy elsewhere
        const text = `${tag()} ${tag()} ${tag()} ${n++}`;
        const append = await timed(() => t.call('POST', `/v1/subjects/${encodeURIComponent(subject)}/entries`, { body: { text } }));
        answers.push(append.answer);
        if (append.res.status === 201) {
          acknowledged.get(subject)!.push(text);
          if (switched) afterSwitch++;
        }
        const lease = await timed(() => t.call('POST', `/v1/subjects/${encodeURIComponent(subject)}/key/lease`, { role: 'writer' }));
        answers.push(lease.answer);
        if (append.res.status !== 201) await new Promise((r) => setTimeout(r, 200));
      }
      if (afterSwitch >= 5) landedAfter++;
    };
    const clients = subjects.map(client);
    try {
      // the kill comes once every client has an acknowledged append and the standby confirms commits
      await until('an acknowledged append from every client', async () => [...acknowledged.values()].every((texts) => texts.length > 0));
      await pair.replicatingSynchronously();
      const before = await pair.primary();
      expect(before).toBe(0);
      await pair.kill(0);
      await pair.failedOver(0);
      switched = true;
      await until('5 appends landed after the switch from every client', async () => landedAfter === CLIENTS, 90_000);
    } finally {
      stopped = true;
      await Promise.allSettled(clients);
    }

    expect(landedAfter).toBe(CLIENTS);
    const statuses = new Set(answers.map((a) => a.status));
    for (const s of statuses) expect([200, 201, 503]).toContain(s);
    expect(answers.filter((a) => a.status === 503).every((a) => a.problem && a.retryAfter !== null)).toBe(true);
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(20_000);
    for (const subject of subjects) {
      const listed = (await t.app.log.list(subject)).map((e) => e.text);
      // every acknowledged append is there, in order; an append that answered 503 may have committed too
      expect(listed.filter((text) => acknowledged.get(subject)!.includes(text))).toEqual(acknowledged.get(subject));
    }
  });

  it('after the switch: ready again (the event listener reconnected), and an erasure completes', { timeout: 120_000 }, async () => {
    await until('readiness', async () => (await t.call('GET', '/readyz', { role: 'none' })).status === 200);
    const ready = (await (await t.call('GET', '/readyz', { role: 'none' })).json()) as { checks: Record<string, string> };
    expect(ready.checks).toMatchObject({ database: 'ok', listener: 'ok' });
    const erased = subjects[0]!;
    const { erasureId } = await t.app.erasures.request({ subject: erased }, 'eraser');
    const view = await t.app.erasures.settle(erasureId);
    expect(view.status, JSON.stringify({ probe: view.probe, residuals: view.residuals.map((r) => r.kind) })).toBe('completed');
    await expect(t.app.log.list(erased)).rejects.toSatisfy((e) => isLetheError(e, 'subject_erased'));
    expect((await t.app.log.list(subjects[1]!)).length).toBeGreaterThan(0);
  });
});

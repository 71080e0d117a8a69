/**
 * PostgreSQL connections cut under two replicas while they work (issue 14, scenario a).
 *
 * Two `lethe serve` processes reach PostgreSQL through a Toxiproxy proxy. While
 * writers append and lease on both, an erasure runs and a KEK rotation is asked for,
 * the replicas' connections are cut three ways, one after the other:
 *
 *   1. pg_terminate_backend of every lethe backend of the database, 16 times at 0.5 s;
 *   2. a reset_peer toxic: every connection, open or new, reset by the proxy (2 s);
 *   3. the proxy disabled: connections closed and refused (2 s), then enabled again.
 *
 * Invariants, asserted once the fault clears:
 *   - every request answers (a 503 is an answer) within 20 s, during the fault too;
 *   - no process exits: both replicas still run and answer /healthz; /readyz says
 *     `database: failed` (503) while the proxy is down, 200 again afterwards;
 *   - nothing acknowledged is lost: every append answered 201 is readable, with its
 *     text, through either replica;
 *   - the erasure finishes `completed`, the rotation can be completed;
 *   - no destroyed key is served: from the moment the erasure was accepted no replica
 *     leases the subject's old key, and both answer it `destroyed` afterwards;
 *   - both replicas serve appends again;
 *   - an append retried with its Idempotency-Key across cut connections and abandoned
 *     answers is stored exactly once, under one entry id.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Answer,
  answer,
  awaitErasureSettled,
  erasureTimeline,
  expectBothAlive,
  type FaultCluster,
  sleep,
  startFaultCluster,
  terminateLetheBackends,
  until,
} from './support.js';

const KEEP = Array.from({ length: 6 }, (_, i) => `user:fault-db-keep-${i}`);
const GONE = 'user:fault-db-gone';

interface Acked {
  readonly entryId: string;
  readonly subject: string;
  readonly text: string;
}

describe('PostgreSQL connections reset under two replicas', () => {
  let cluster: FaultCluster;

  beforeAll(async () => {
    cluster = await startFaultCluster('db');
  }, 120_000);
  afterAll(async () => {
    await cluster?.heal().catch(() => {});
    await cluster?.stop();
  });

  it('during appends, leases, an erasure and a KEK rotation: no process exits, nothing acknowledged is lost, the erasure completes, no destroyed key is served', {
    timeout: 180_000,
  }, async () => {
    const { a, b, replicas } = cluster;
    const acked: Acked[] = [];
    let seq = 0;
    const append = async (replica: number, subject: string): Promise<Answer> => {
      const text = `fault-db entry ${seq++} of ${subject} ${Math.random().toString(36).slice(2)}`;
      const r = await answer(replicas[replica % 2]!, 'POST', `/v1/subjects/${subject}/entries`, { body: { text }, timeoutMs: 20_000 });
      if (r.status === 201) acked.push({ entryId: (r.body as { entryId: string }).entryId, subject, text });
      return r;
    };

    // before the fault: every subject has entries; the erased subject's key is cached on both replicas
    for (const [i, s] of [...KEEP, GONE].entries()) expect((await append(i, s)).status).toBe(201);
    const leasedA = await answer(a, 'POST', `/v1/subjects/${GONE}/key/lease`);
    const leasedB = await answer(b, 'POST', `/v1/subjects/${GONE}/key/lease`);
    expect(leasedA.status).toBe(200);
    const goneKeyId = (leasedA.body as { keyId: string }).keyId;
    expect((leasedB.body as { keyId: string }).keyId).toBe(goneKeyId);

    // the workload: appends and leases on both replicas, and leases of the subject being erased
    let running = true;
    const statuses = new Map<string, number>();
    const unanswered: string[] = [];
    const faultStart = Date.now();
    const count = (what: string, r: Answer, replica: 'a' | 'b') => {
      const k = `${what} ${r.status}${r.code ? ` ${r.code}` : ''}`;
      statuses.set(k, (statuses.get(k) ?? 0) + 1);
      if (r.status === 0)
        unanswered.push(
          `${what} on replica ${replica}, sent ${((Date.now() - r.ms - faultStart) / 1000).toFixed(1)} s into the fault: ${r.error} (${Math.round(r.ms)} ms)`,
        );
    };
    let erasureAcceptedAt: number | undefined;
    const servedDestroyed: string[] = [];
    const workers = [
      ...[0, 1, 2, 3].map(async (w) => {
        for (let i = 0; running; i++) {
          count('append', await append(w + i, KEEP[(w + i) % KEEP.length]!), (w + i) % 2 ? 'b' : 'a');
          count(
            'lease',
            await answer(replicas[(w + i + 1) % 2]!, 'POST', `/v1/subjects/${KEEP[i % KEEP.length]}/key/lease`, { timeoutMs: 20_000 }),
            (w + i + 1) % 2 ? 'b' : 'a',
          );
        }
      }),
      (async () => {
        for (let i = 0; running; i++) {
          const startedAt = Date.now();
          const r = await answer(replicas[i % 2]!, 'POST', `/v1/subjects/${GONE}/key/lease`, { timeoutMs: 20_000 });
          count('lease-erased-subject', r, i % 2 ? 'b' : 'a');
          if (r.status === 200 && erasureAcceptedAt !== undefined && startedAt > erasureAcceptedAt && (r.body as { keyId: string }).keyId === goneKeyId) {
            servedDestroyed.push(`replica ${i % 2 === 0 ? 'a' : 'b'} leased ${goneKeyId} ${startedAt - erasureAcceptedAt} ms after the erasure was accepted`);
          }
          await sleep(100);
        }
      })(),
    ];

    // the erasure and the rotation are asked for while the connections are being cut; asked again until answered
    let erasureId: string | undefined;
    const erasureRequest = (async () => {
      await sleep(500);
      const deadline = Date.now() + 60_000;
      while (erasureId === undefined && Date.now() < deadline) {
        const r = await answer(a, 'POST', '/v1/erasures', { role: 'eraser', body: { subject: GONE, reason: 'fault test' }, timeoutMs: 20_000 });
        count('erasure request', r, 'a');
        if (r.status === 202 || r.status === 200) {
          erasureAcceptedAt ??= Date.now();
          erasureId = (r.body as { erasureId: string }).erasureId;
        } else await sleep(250);
      }
    })();
    let rotated: Answer | undefined;
    const rotation = (async () => {
      await sleep(1000);
      const deadline = Date.now() + 60_000;
      while (rotated?.status !== 200 && Date.now() < deadline) {
        rotated = await answer(b, 'POST', '/v1/admin/kek/rotate', { role: 'admin', timeoutMs: 30_000 });
        count('rotate', rotated, 'b');
        if (rotated.status !== 200) await sleep(250);
      }
    })();

    // the faults (the workload stops whatever happens, so nothing outlives the test)
    let terminated = 0;
    let readiness: Answer[] = [];
    let clearedAt = 0;
    try {
      // 1. sixteen pg_terminate_backend rounds, 0.5 s apart
      for (let i = 0; i < 16; i++) {
        terminated += await terminateLetheBackends(cluster.db.name);
        await sleep(500);
      }
      // 2. every connection reset by the proxy for 2 s
      const reset = await cluster.pg.add({ type: 'reset_peer', attributes: { timeout: 0 } });
      await sleep(2000);
      await cluster.pg.remove(reset);
      // 3. the proxy down for 2 s: both replicas say they are not ready, and stay alive
      await cluster.pg.down();
      const downAt = Date.now();
      readiness = await Promise.all(replicas.map((s) => answer(s, 'GET', '/readyz', { role: 'none', timeoutMs: 5_000 })));
      await sleep(Math.max(0, 2000 - (Date.now() - downAt)));
      await cluster.pg.up();
      clearedAt = Date.now();

      // the workload goes on a little after the fault cleared, then stops
      await sleep(3000);
    } finally {
      running = false;
    }
    await Promise.all([...workers, erasureRequest, rotation]);
    console.log(`fault-db: ${terminated} backends terminated; answers ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
    expect(terminated, 'pg_terminate_backend found no lethe backend to kill').toBeGreaterThan(0);
    expect(
      readiness.map((r) => [r.status, (r.body as { checks?: { database?: string } } | undefined)?.checks?.database]),
      'readyz while the database is unreachable',
    ).toEqual([
      [503, 'failed'],
      [503, 'failed'],
    ]);
    // every request answers within 20 s, fault or not (a 503 is an answer; a hang is not)
    expect.soft(unanswered, 'requests that got no answer within 20 s').toEqual([]);

    // no process exits, and both are ready again
    await expectBothAlive(cluster);
    for (const s of replicas)
      await until(
        'readyz after the fault',
        () => answer(s, 'GET', '/readyz', { role: 'none', timeoutMs: 5_000 }),
        (r) => r.status === 200,
        20_000,
      );

    // both replicas serve appends again
    for (const [i, s] of [a, b].entries()) {
      await until(
        `replica ${i === 0 ? 'a' : 'b'} appends after the fault`,
        () => append(i, KEEP[0]!),
        (r) => r.status === 201,
        30_000,
      );
    }

    // nothing acknowledged is lost: each 201 is readable, with its text, through both replicas
    expect(acked.length).toBeGreaterThan(KEEP.length + 1);
    for (const [name, replica] of [
      ['a', a],
      ['b', b],
    ] as const) {
      for (const subject of KEEP) {
        const r = await until(
          `read ${subject} on ${name}`,
          () => answer(replica, 'GET', `/v1/subjects/${subject}/entries?limit=1000`),
          (x) => x.status === 200,
          20_000,
        );
        const stored = new Map((r.body as { entries: Array<{ entryId: string; text: string }> }).entries.map((e) => [e.entryId, e.text]));
        const lost = acked.filter((e) => e.subject === subject && stored.get(e.entryId) !== e.text);
        expect(lost, `acknowledged appends of ${subject} missing or changed on replica ${name}`).toEqual([]);
      }
    }

    // the erasure finishes once the fault has cleared
    expect(erasureId, 'the erasure request was never accepted').toBeDefined();
    const view = await awaitErasureSettled(cluster, erasureId!, 90_000);
    expect(view.status, JSON.stringify(view.steps.map((s) => [s.name, s.status, s.detail]))).toBe('completed');
    console.log(
      `fault-db: erasure finished ${view.finishedAt ? ((Date.parse(view.finishedAt) - clearedAt) / 1000).toFixed(1) : '?'} s after the fault cleared; steps ` +
        JSON.stringify(view.steps.map((s) => [s.name, s.status, s.startedAt && s.finishedAt ? Date.parse(s.finishedAt) - Date.parse(s.startedAt) : null])) +
        `\n  ${(await erasureTimeline(cluster, erasureId!)).join('\n  ')}`,
    );

    // the rotation can be completed
    if (rotated?.status !== 200) {
      rotated = await until(
        'KEK rotation after the fault',
        () => answer(b, 'POST', '/v1/admin/kek/rotate', { role: 'admin', timeoutMs: 30_000 }),
        (r) => r.status === 200,
        30_000,
      );
    }
    expect(rotated.status).toBe(200);

    // no destroyed key served: not during the fault, not after it, on neither replica
    expect.soft(servedDestroyed, "leases of the erased subject's old key after its erasure was accepted").toEqual([]);
    for (const [name, replica] of [
      ['a', a],
      ['b', b],
    ] as const) {
      // an erased subject gets no key at all: not the destroyed one, not a new one
      const lease = await answer(replica, 'POST', `/v1/subjects/${GONE}/key/lease`);
      expect([lease.status, lease.code], `replica ${name} answered a lease of the erased subject with ${JSON.stringify(lease.body)}`).toEqual([
        410,
        'subject_erased',
      ]);
      const validity = await answer(replica, 'POST', '/v1/keys/validity', { role: 'backup', body: { keyIds: [goneKeyId] } });
      expect(validity.status).toBe(200);
      expect(validity.body, `replica ${name}`).toEqual({ keys: { [goneKeyId]: 'destroyed' } });
    }
  });

  it('appends retried with their Idempotency-Key while connections are cut (and while the client gives up on answers) are each stored exactly once, with the same entry id on every retry', {
    timeout: 120_000,
  }, async () => {
    const { a, b, replicas } = cluster;
    const subject = 'user:fault-db-once';
    const keys = Array.from({ length: 60 }, (_, i) => `fault-once-${i}-${Math.random().toString(36).slice(2, 8)}`);
    const outcomes = new Map<string, { entryId: string; attempts: number; seen: Set<string> }>();
    let faulting = true;
    const faults = (async () => {
      for (let i = 0; i < 10; i++) {
        await terminateLetheBackends(cluster.db.name);
        await sleep(300);
      }
      const reset = await cluster.pg.add({ type: 'reset_peer', attributes: { timeout: 0 } });
      await sleep(1500);
      await cluster.pg.remove(reset);
      faulting = false;
    })();
    // four writers; each append is tried until it answers 201 or 200 (a replay), alternating replicas; while the
    // fault lasts, the first tries give up after a random 30–300 ms (an outcome the client never learns)
    let next = 0;
    await Promise.all(
      [0, 1, 2, 3].map(async () => {
        while (next < keys.length) {
          const i = next++;
          const key = keys[i]!;
          const text = `once ${i} ${key}`;
          const seen = new Set<string>();
          let attempts = 0;
          const deadline = Date.now() + 60_000;
          for (;;) {
            attempts++;
            const timeoutMs = faulting && attempts <= 2 ? 30 + Math.floor(Math.random() * 270) : 20_000;
            const r = await answer(replicas[(i + attempts) % 2]!, 'POST', `/v1/subjects/${subject}/entries`, {
              body: { text },
              headers: { 'idempotency-key': key },
              timeoutMs,
            });
            if (r.status === 200 || r.status === 201) seen.add((r.body as { entryId: string }).entryId);
            if (r.status === 201 || r.status === 200) {
              outcomes.set(key, { entryId: (r.body as { entryId: string }).entryId, attempts, seen });
              break;
            }
            expect([0, 503], `append ${i} attempt ${attempts}: ${r.status} ${JSON.stringify(r.body)}`).toContain(r.status);
            if (Date.now() > deadline) throw new Error(`append ${i} never succeeded: last ${r.status} ${r.error ?? JSON.stringify(r.body)}`);
            await sleep(100);
          }
        }
      }),
    );
    await faults;
    await expectBothAlive(cluster);
    const retried = [...outcomes.values()].filter((o) => o.attempts > 1).length;
    console.log(`fault-db once: ${keys.length} appends, ${retried} needed more than one try`);
    // without retries the test proves nothing about them: the faults must have cost some appends a try
    expect(retried, 'no append needed a second try: the faults missed every append').toBeGreaterThan(0);

    // one entry id per key, however many answers carried one
    expect([...outcomes].filter(([, o]) => o.seen.size !== 1).map(([k, o]) => [k, [...o.seen]])).toEqual([]);
    // stored exactly once each, on both replicas' reads
    for (const replica of [a, b]) {
      const r = await until(
        'read after the fault',
        () => answer(replica, 'GET', `/v1/subjects/${subject}/entries?limit=1000`),
        (x) => x.status === 200,
        20_000,
      );
      const entries = (r.body as { entries: Array<{ entryId: string; text: string }> }).entries;
      const perText = new Map<string, number>();
      for (const e of entries) perText.set(e.text, (perText.get(e.text) ?? 0) + 1);
      expect(
        [...perText].filter(([, n]) => n !== 1),
        'entries stored more than once',
      ).toEqual([]);
      expect(entries.length).toBe(keys.length);
      expect(new Set(entries.map((e) => e.entryId))).toEqual(new Set([...outcomes.values()].map((o) => o.entryId)));
    }
  });
});

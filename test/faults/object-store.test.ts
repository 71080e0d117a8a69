/**
 * The object store stalled, then down, under two replicas (issue 14, scenario b).
 *
 * Two `lethe serve` processes reach MinIO through a Toxiproxy proxy (PostgreSQL
 * through another, left healthy). Entries are appended, then:
 *
 *   1. stall: a `timeout` toxic with timeout 0 in both directions — connections open,
 *      no byte ever answered (what a hung S3 endpoint looks like) — for 12 s;
 *   2. down: the proxy disabled, connections closed and refused, for 4 s.
 *
 * During each, on both replicas: appends, a backup and an erasure request. Invariants:
 *   - every request answers within a bound (BOUND_MS) — an append or a backup that
 *     cannot reach the store answers 503 `unavailable`, never hangs; /healthz answers
 *     200 and /readyz 503;
 *   - once the store is back: appends succeed on both replicas, the erasure finishes
 *     `completed`, a backup can be taken, every append acknowledged before is readable,
 *     and both processes still run.
 *
 * Then the store stalled again during an erasure, at points the service's answers mark
 * rather than a poll's timing: from the request until a step before drain_leases has met
 * it (fingerprint fails an attempt when the replica running it has not cached the
 * entries' frames; else destroy parks until its destruction record is durable in the
 * backup ledger), and from the erasure parking at drain_leases (behind a lease the test holds, then
 * releases) until a later step (propagate) has failed one or parked. A step that needs
 * the store retries or waits, none fails the erasure, and it completes; which steps met
 * the stall is read from the erasure's own timeline (its events stream).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STEP_NAMES } from '../../src/erasure/machine.js';
import type { RunningService } from '../support/process.js';
import { type Answer, answer, awaitErasureSettled, call, expectBothAlive, type FaultCluster, sleep, startFaultCluster, until } from './support.js';

/** How long any request may take while the store is stalled or down (LETHE_STORE_TIMEOUT_MS is 2 s in FAULT_ENV). */
const BOUND_MS = 10_000;
const KEEP = 'user:fault-s3-keep';
const GONE = 'user:fault-s3-gone';
const STEPS: readonly string[] = STEP_NAMES;

/** An erasure's timeline as its events stream replays it (a finished erasure's stream ends with `end`). */
async function transitions(
  service: RunningService,
  erasureId: string,
): Promise<Array<{ fromStep: string | null; toStep: string | null; status: string; detail: string | null }>> {
  const res = await call(service, 'GET', `/v1/erasures/${erasureId}/events`, { role: 'eraser', timeoutMs: 10_000 });
  expect(res.status).toBe(200);
  const text = await res.text();
  expect(text).toMatch(/^event: end$/m);
  return text
    .split('\n\n')
    .filter((block) => /^event: step$/m.test(block))
    .map((block) => JSON.parse(/^data: (.*)$/m.exec(block)![1]!) as { fromStep: string | null; toStep: string | null; status: string; detail: string | null });
}

describe('object store stalled and down under two replicas', () => {
  let cluster: FaultCluster;

  beforeAll(async () => {
    // leases outlast the stepwise test's erasure up to drain_leases (FAULT_ENV's 2 s would not)
    cluster = await startFaultCluster('s3', { LETHE_LEASE_TTL_SECONDS: '300' });
  }, 120_000);
  afterAll(async () => {
    await cluster?.heal().catch(() => {});
    await cluster?.stop();
  });

  it('appends, a backup and an erasure answer 503 unavailable within the bound while the store is stalled or down; afterwards appends succeed, the erasure completes, a backup is taken, nothing acknowledged is lost', {
    timeout: 180_000,
  }, async () => {
    const { a, b, replicas } = cluster;
    const acked: Array<{ entryId: string; text: string }> = [];
    let n = 0;
    const append = async (replica: number, subject: string): Promise<Answer> => {
      const text = `fault-s3 entry ${n++} ${Math.random().toString(36).slice(2)}`;
      const r = await answer(replicas[replica % 2]!, 'POST', `/v1/subjects/${subject}/entries`, { body: { text }, timeoutMs: BOUND_MS + 5_000 });
      if (r.status === 201 && subject === KEEP) acked.push({ entryId: (r.body as { entryId: string }).entryId, text });
      return r;
    };
    for (let i = 0; i < 4; i++) expect((await append(i, KEEP)).status).toBe(201);
    for (let i = 0; i < 3; i++) expect((await append(i, GONE)).status).toBe(201);
    expect((await answer(a, 'POST', '/v1/backups', { role: 'backup', timeoutMs: 30_000 })).status, 'a backup before the fault').toBe(201);

    const late: string[] = [];
    const seen: string[] = [];
    const within = (what: string, r: Answer) => {
      seen.push(`${what}: ${r.status}${r.code ? ` ${r.code}` : ''} in ${Math.round(r.ms)} ms`);
      if (r.status === 0 || r.ms > BOUND_MS) late.push(`${what}: ${r.error ?? `${r.status} after ${Math.round(r.ms)} ms`}`);
      return r;
    };
    const wrong: string[] = [];
    const unavailable = (what: string, r: Answer) => {
      within(what, r);
      if (r.status !== 0 && (r.status !== 503 || r.code !== 'unavailable')) wrong.push(`${what}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
    };

    let erasureId: string | undefined;
    /** Appends, a backup and the erasure request on both replicas at once, each checked against the bound. */
    const duringFault = async (phase: string) => {
      // the fault is in place: MinIO does not answer through the proxy
      const direct = await fetch(`http://${cluster.s3.listen}/minio/health/live`, { signal: AbortSignal.timeout(1_000) }).then(
        (r) => `answered ${r.status}`,
        (e: Error) => e.name,
      );
      expect(direct, `${phase}: MinIO still answers through the proxy`).not.toMatch(/^answered/);
      await Promise.all([
        ...[0, 1].map(async (i) => unavailable(`${phase}: append on ${i ? 'b' : 'a'}`, await append(i, KEEP))),
        ...[0, 1].map(async (i) =>
          unavailable(
            `${phase}: backup on ${i ? 'b' : 'a'}`,
            await answer(replicas[i]!, 'POST', '/v1/backups', { role: 'backup', timeoutMs: BOUND_MS + 5_000 }),
          ),
        ),
        (async () => {
          // asking for an erasure needs the database alone: accepted (or the same one, once open)
          const r = within(
            `${phase}: erasure request`,
            await answer(b, 'POST', '/v1/erasures', { role: 'eraser', body: { subject: GONE, reason: 'fault test' }, timeoutMs: BOUND_MS + 5_000 }),
          );
          expect([200, 202], `${phase}: erasure request ${JSON.stringify(r.body)}`).toContain(r.status);
          erasureId ??= (r.body as { erasureId: string }).erasureId;
        })(),
        ...[0, 1].map(async (i) => {
          const s = replicas[i]!;
          expect(within(`${phase}: healthz`, await answer(s, 'GET', '/healthz', { role: 'none', timeoutMs: BOUND_MS + 5_000 })).status).toBe(200);
          const ready = within(`${phase}: readyz`, await answer(s, 'GET', '/readyz', { role: 'none', timeoutMs: BOUND_MS + 5_000 }));
          expect(ready.status, `${phase}: readyz ${JSON.stringify(ready.body)}`).toBe(503);
        }),
      ]);
    };

    // 1. stalled: connections accepted, nothing answered
    const stall = await cluster.s3.addBoth({ type: 'timeout', attributes: { timeout: 0 } });
    const stallStarted = Date.now();
    await duringFault('stalled');
    await sleep(Math.max(0, 12_000 - (Date.now() - stallStarted)));
    for (const t of stall) await cluster.s3.remove(t);

    // 2. down: connections closed and refused
    await cluster.s3.down();
    const downStarted = Date.now();
    await duringFault('down');
    await sleep(Math.max(0, 4_000 - (Date.now() - downStarted)));
    await cluster.s3.up();
    const clearedAt = Date.now();

    console.log(`fault-s3 answers during the fault:\n  ${seen.join('\n  ')}`);
    expect.soft(late, 'requests that did not answer within the bound').toEqual([]);
    expect.soft(wrong, 'appends and backups must answer 503 unavailable while the store does not answer').toEqual([]);

    // afterwards: both processes run; appends succeed on both
    await expectBothAlive(cluster);
    for (const i of [0, 1])
      await until(
        `append on ${i ? 'b' : 'a'} after the fault`,
        () => append(i, KEEP),
        (r) => r.status === 201,
        30_000,
      );

    // the erasure finishes
    expect(erasureId).toBeDefined();
    const view = await awaitErasureSettled(cluster, erasureId!, 90_000);
    expect(view.status, JSON.stringify(view.steps.map((s) => [s.name, s.status, s.detail]))).toBe('completed');
    console.log(
      `fault-s3: erasure finished ${view.finishedAt ? ((Date.parse(view.finishedAt) - clearedAt) / 1000).toFixed(1) : '?'} s after the store came back`,
    );

    // a backup can be taken
    await until(
      'backup after the fault',
      () => answer(a, 'POST', '/v1/backups', { role: 'backup', timeoutMs: 30_000 }),
      (r) => r.status === 201,
      30_000,
    );

    // nothing acknowledged is lost
    for (const [name, replica] of [
      ['a', a],
      ['b', b],
    ] as const) {
      const r = await answer(replica, 'GET', `/v1/subjects/${KEEP}/entries?limit=1000`);
      expect(r.status).toBe(200);
      const stored = new Map((r.body as { entries: Array<{ entryId: string; text: string }> }).entries.map((e) => [e.entryId, e.text]));
      expect(
        acked.filter((e) => stored.get(e.entryId) !== e.text),
        `acknowledged appends missing on replica ${name}`,
      ).toEqual([]);
    }
  });

  it('the store stalled again at two steps of an erasure: a step that needs it retries or waits (never fails) while it is stalled, and the erasure completes', {
    timeout: 180_000,
  }, async () => {
    const { a } = cluster;
    const subject = 'user:fault-s3-stepwise';
    // the subject's own words: nothing the other tests wrote shares them, so the probe finds nothing left
    const texts = [
      'Rows a wooden skiff across Loch Fyne every Sunday before the ferry runs.',
      'Keeps bees behind the old granary and sells heather honey at Inveraray market.',
      'Collects brass ship barometers and repairs their aneroid capsules by lamplight.',
    ];
    for (const text of texts) expect((await answer(a, 'POST', `/v1/subjects/${subject}/entries`, { body: { text } })).status).toBe(201);
    // a backup holds the subject: propagation has a backup to reach (through the ledger chain)
    expect((await answer(a, 'POST', '/v1/backups', { role: 'backup', timeoutMs: 30_000 })).status).toBe(201);

    // the store stalls twice, each time while the erasure is at a step the test can tell from the service's
    // answers, never from how fast it polls: from the request on (fingerprint reads the subject's entries, from
    // the store unless the replica running it cached their frames as they were appended; destroy then waits for
    // the backup ledger), and from the moment the erasure parks at drain_leases behind a lease this test holds
    // until it releases it (the steps after it — propagate writes to the backup store — meet it)
    const leased = await answer(a, 'POST', `/v1/subjects/${subject}/key/lease`);
    expect(leased.status).toBe(200);
    const leaseId = (leased.body as { leaseId: string }).leaseId;
    /** Reads the erasure until `want` holds of its running step and its failed attempts at it (the service's answers). */
    const untilErasure = async (
      what: string,
      erasureId: string,
      want: (running: { name: string; detail?: string } | undefined, attempts: number) => boolean,
    ) => {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const r = await answer(a, 'GET', `/v1/erasures/${erasureId}`, { role: 'eraser', timeoutMs: 5_000 });
        const v = r.body as { steps: Array<{ name: string; status: string; detail?: string }>; retry?: { attempts: number } };
        if (
          r.status === 200 &&
          want(
            v.steps.find((st) => st.status === 'running'),
            v.retry?.attempts ?? 0,
          )
        )
          return;
        if (Date.now() > deadline) throw new Error(`${what}: not within 60 s; last answer ${r.status} ${JSON.stringify(r.body)}`);
        await sleep(100);
      }
    };
    let stall = await cluster.s3.addBoth({ type: 'timeout', attributes: { timeout: 0 } });
    let erasureId = '';
    try {
      const requested = await answer(a, 'POST', '/v1/erasures', { role: 'eraser', body: { subject } });
      expect(requested.status).toBe(202);
      erasureId = (requested.body as { erasureId: string }).erasureId;
      // 1. fingerprint fails an attempt on the stalled store (recorded as its retry), or destroy parks waiting for it: then the stall lifts
      await untilErasure(
        'fingerprint to fail an attempt on the stalled store, or destroy to wait for it',
        erasureId,
        (running, attempts) =>
          (running?.name === 'fingerprint' && attempts > 0) ||
          (running?.name === 'destroy' && /not yet durable in the backup store's ledger \(the backup store/.test(running.detail ?? '')),
      );
      for (const t of stall) await cluster.s3.remove(t);
      stall = [];
      // 2. parked at drain_leases behind the lease: the store stalls again, then the lease is released
      await untilErasure(
        'the erasure to park at drain_leases',
        erasureId,
        (running) => running?.name === 'drain_leases' && /waiting for key leases/.test(running.detail ?? ''),
      );
      stall = await cluster.s3.addBoth({ type: 'timeout', attributes: { timeout: 0 } });
      expect((await answer(a, 'DELETE', `/v1/subjects/${subject}/key/lease/${leaseId}`, { timeoutMs: 10_000 })).status).toBe(204);
      // 3. a step after drain_leases fails an attempt on the stalled store (or parks, waiting for it): then the stall lifts for good
      await untilErasure(
        'a step after drain_leases to fail an attempt on the stalled store',
        erasureId,
        (running, attempts) =>
          running !== undefined && STEPS.indexOf(running.name) > STEPS.indexOf('drain_leases') && (attempts > 0 || /store/.test(running.detail ?? '')),
      );
      for (const t of stall) await cluster.s3.remove(t);
      stall = [];
    } finally {
      for (const t of stall) await cluster.s3.remove(t).catch(() => {});
    }
    const settled = await awaitErasureSettled(cluster, erasureId, 90_000);
    expect(settled.status, JSON.stringify(settled.steps)).toBe('completed');

    // the service's own record of which steps met the stall: a failed attempt or a park is a transition from a
    // step to itself, and this one names the store (the timeline the events stream replays)
    const timeline = await transitions(a, erasureId);
    const met = timeline.filter((t) => t.fromStep !== null && t.fromStep === t.toStep && /store/.test(t.detail ?? '')).map((t) => t.fromStep!);
    console.log(`fault-s3: steps that met the stalled store, as the erasure's timeline records them: ${JSON.stringify(met)}`);
    // the first step that needs the store met the stall and retried or waited: fingerprint (the entries' frames read
    // from the store) or, when the replica running it had them cached, destroy (its record durable in the backup ledger)
    expect(['fingerprint', 'destroy']).toContain(met[0]);
    // and a step after drain_leases met the second one, none of them failing the erasure
    expect(
      met.some((step) => STEPS.indexOf(step) > STEPS.indexOf('drain_leases')),
      JSON.stringify(timeline),
    ).toBe(true);
    expect(new Set(met).size).toBeGreaterThanOrEqual(2);
    await expectBothAlive(cluster);
  });
});

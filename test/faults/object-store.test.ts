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
 * Then the store stalled again at each step of an erasure (held 3 s past the 2 s store
 * timeout while the step runs, lifted until the next one starts): a step that needs the
 * store retries (fingerprint, propagate) or waits (destroy, for the ledger's
 * durability), none fails the erasure, and it completes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Answer, answer, awaitErasureSettled, expectBothAlive, type FaultCluster, sleep, startFaultCluster, until } from './support.js';

/** How long any request may take while the store is stalled or down (LETHE_STORE_TIMEOUT_MS is 2 s in FAULT_ENV). */
const BOUND_MS = 10_000;
const KEEP = 'user:fault-s3-keep';
const GONE = 'user:fault-s3-gone';

describe('object store stalled and down under two replicas', () => {
  let cluster: FaultCluster;

  beforeAll(async () => {
    cluster = await startFaultCluster('s3');
  }, 120_000);
  afterAll(async () => {
    await cluster?.heal().catch(() => {});
    await cluster?.stop();
  });

  it(
    'appends, a backup and an erasure answer 503 unavailable within the bound while the store is stalled or down; afterwards appends succeed, the erasure completes, a backup is taken, nothing acknowledged is lost',
    { timeout: 180_000 },
    async () => {
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
            unavailable(`${phase}: backup on ${i ? 'b' : 'a'}`, await answer(replicas[i]!, 'POST', '/v1/backups', { role: 'backup', timeoutMs: BOUND_MS + 5_000 })),
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
      for (const i of [0, 1]) await until(`append on ${i ? 'b' : 'a'} after the fault`, () => append(i, KEEP), (r) => r.status === 201, 30_000);

      // the erasure finishes
      expect(erasureId).toBeDefined();
      const view = await awaitErasureSettled(cluster, erasureId!, 90_000);
      expect(view.status, JSON.stringify(view.steps.map((s) => [s.name, s.status, s.detail]))).toBe('completed');
      console.log(`fault-s3: erasure finished ${view.finishedAt ? ((Date.parse(view.finishedAt) - clearedAt) / 1000).toFixed(1) : '?'} s after the store came back`);

      // a backup can be taken
      await until('backup after the fault', () => answer(a, 'POST', '/v1/backups', { role: 'backup', timeoutMs: 30_000 }), (r) => r.status === 201, 30_000);

      // nothing acknowledged is lost
      for (const [name, replica] of [
        ['a', a],
        ['b', b],
      ] as const) {
        const r = await answer(replica, 'GET', `/v1/subjects/${KEEP}/entries?limit=1000`);
        expect(r.status).toBe(200);
        const stored = new Map((r.body as { entries: Array<{ entryId: string; text: string }> }).entries.map((e) => [e.entryId, e.text]));
        expect(acked.filter((e) => stored.get(e.entryId) !== e.text), `acknowledged appends missing on replica ${name}`).toEqual([]);
      }
    },
  );

  it(
    'the store stalled again at each step of an erasure: a step that needs it retries or waits (never fails) while it is stalled, and the erasure completes',
    { timeout: 180_000 },
    async () => {
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

      // stalled from the request on; each step that starts meets a stalled store for 3 s (past the 2 s store
      // timeout), then the stall lifts until the next step starts
      const HOLD_MS = 3000;
      let stall = await cluster.s3.addBoth({ type: 'timeout', attributes: { timeout: 0 } });
      let held: { step: string; since: number } | undefined;
      let lifted: string | undefined;
      const met: Array<{ step: string; retried: boolean }> = [];
      try {
        const requested = await answer(a, 'POST', '/v1/erasures', { role: 'eraser', body: { subject } });
        expect(requested.status).toBe(202);
        const erasureId = (requested.body as { erasureId: string }).erasureId;
        const deadline = Date.now() + 150_000;
        for (;;) {
          const r = await answer(a, 'GET', `/v1/erasures/${erasureId}`, { role: 'eraser', timeoutMs: 5_000 });
          const view = r.body as { status: string; steps: Array<{ name: string; status: string }>; retry?: { attempts: number; lastError?: string } };
          if (r.status === 200 && view.status !== 'pending' && view.status !== 'running') {
            expect(view.status, JSON.stringify(view.steps)).toBe('completed');
            break;
          }
          const running = r.status === 200 ? view.steps.find((st) => st.status === 'running')?.name : undefined;
          if (stall.length > 0 && running) {
            if (held?.step !== running) held = { step: running, since: Date.now() };
            else if (Date.now() - held.since > HOLD_MS) {
              met.push({ step: running, retried: (view.retry?.attempts ?? 0) > 0 });
              lifted = running;
              for (const t of stall) await cluster.s3.remove(t);
              stall = [];
            }
          } else if (stall.length === 0 && running && running !== lifted) {
            stall = await cluster.s3.addBoth({ type: 'timeout', attributes: { timeout: 0 } });
            held = { step: running, since: Date.now() };
          }
          if (Date.now() > deadline) throw new Error(`erasure ${erasureId} did not finish; steps held on a stalled store: ${JSON.stringify(met)}`);
          await sleep(100);
        }
      } finally {
        for (const t of stall) await cluster.s3.remove(t).catch(() => {});
      }
      console.log(`fault-s3: steps held on a stalled store: ${JSON.stringify(met)}`);
      // the first step reads the subject's entries from the store: it met the stall, failed an attempt and retried
      expect(met[0]).toEqual({ step: 'fingerprint', retried: true });
      // and the steps after it met one too (as the poll caught them), none of them failing the erasure
      expect(new Set(met.map((m) => m.step)).size).toBeGreaterThanOrEqual(2);
      await expectBothAlive(cluster);
    },
  );
});

/**
 * The writer client while PostgreSQL connections are cut and the object store stalls
 * (issue 14): a LetheWriter seals and uploads through the MinIO proxy and registers
 * through replica a, whose database connections go through the PostgreSQL proxy.
 *
 * Faults, one after the other while appends flow: pg_terminate_backend of the
 * replicas' backends 8 times at 0.5 s, every database connection reset from the next
 * registration on (at least 1.5 s, until an append's outcome is unknown), the
 * object store stalled for 3 s (a `timeout` toxic), then down for 2 s.
 *
 * Invariants, once the fault clears:
 *   - an append that resolved is stored, readable with its text, exactly once;
 *   - an append that rejected with LetheOutcomeUnknownError is settled by
 *     `writer.retry(error)`: afterwards it is stored exactly once;
 *   - an append that rejected otherwise stored nothing: no text is readable that no
 *     resolved or settled append wrote;
 *   - no append hangs: each settles within a bound;
 *   - both replicas still run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LetheOutcomeUnknownError, LetheWriter } from '../../src/client/index.js';
import { S3ObjectStore } from '../../src/client/s3.js';
import { TOKENS } from '../support/vault.js';
import { answer, expectBothAlive, type FaultCluster, sleep, startFaultCluster, terminateLetheBackends, until } from './support.js';

const SUBJECTS = Array.from({ length: 8 }, (_, i) => `user:fault-writer-${i}`);
/** How long one append may take to settle (resolve or reject), faults included. */
const SETTLE_BOUND_MS = 45_000;

describe('the writer client under database and object-store faults', () => {
  let cluster: FaultCluster;
  let writer: LetheWriter | undefined;

  beforeAll(async () => {
    cluster = await startFaultCluster('writer');
  }, 120_000);
  afterAll(async () => {
    await writer?.close().catch(() => {});
    await cluster?.heal().catch(() => {});
    await cluster?.stop();
  });

  it('resolved appends are stored once, outcome-unknown ones are settled by retry, other rejections stored nothing, none hangs', {
    timeout: 180_000,
  }, async () => {
    const { a, b, env } = cluster;
    writer = new LetheWriter({
      baseUrl: a.url,
      token: TOKENS.writer,
      store: new S3ObjectStore({
        endpoint: env.S3_ENDPOINT!,
        accessKey: env.S3_ACCESS_KEY!,
        secretKey: env.S3_SECRET_KEY!,
        bucket: env.S3_BUCKET!,
        timeoutMs: 2_000,
      }),
      segmentMaxAgeMs: 20,
      requestTimeoutMs: 5_000,
      retryDelayMs: 100,
      // the database reset starts as a segment is about to be registered: that segment's registration meets it
      beforeRegister: async () => {
        const start = resetAtNextRegistration;
        resetAtNextRegistration = undefined;
        await start?.();
      },
    });
    const w = writer;
    const resolved = new Map<string, string>(); // text → entry id
    const unknown: Array<{ text: string; error: LetheOutcomeUnknownError }> = [];
    const rejected = new Map<string, string>(); // text → error
    const slow: string[] = [];
    let resetAtNextRegistration: (() => Promise<void>) | undefined;
    let running = true;
    let n = 0;
    const appender = async () => {
      const inFlight: Promise<void>[] = [];
      while (running) {
        const i = n++;
        const text = `writer fault entry ${i} ${Math.random().toString(36).slice(2)}`;
        const t0 = performance.now();
        const p = w.append(SUBJECTS[i % SUBJECTS.length]!, { text }).then(
          (r) => void resolved.set(text, r.entryId),
          (e: unknown) => {
            if (e instanceof LetheOutcomeUnknownError) unknown.push({ text, error: e });
            else rejected.set(text, `${(e as { code?: string }).code ?? ''} ${(e as Error).message}`);
          },
        );
        inFlight.push(p.then(() => void (performance.now() - t0 > SETTLE_BOUND_MS && slow.push(`${text}: ${Math.round(performance.now() - t0)} ms`))));
        await sleep(10);
      }
      await Promise.all(inFlight);
    };
    const appenders = [appender(), appender()];

    try {
      await sleep(500);
      for (let i = 0; i < 8; i++) {
        await terminateLetheBackends(cluster.db.name);
        await sleep(500);
      }
      // every database connection reset, from the next registration on, for 1.5 s and until an append's outcome is
      // unknown: that registration's attempts all meet it (answered 503 or not at all), so its appends reject with
      // LetheOutcomeUnknownError whatever the timing, and retry() below has some to settle
      const reset = await new Promise<string>((resolve, reject) => {
        resetAtNextRegistration = () => cluster.pg.add({ type: 'reset_peer', attributes: { timeout: 0 } }).then(resolve, reject);
      });
      await sleep(1500);
      for (const deadline = Date.now() + 30_000; unknown.length === 0 && Date.now() < deadline; ) await sleep(50);
      await cluster.pg.remove(reset);
      const stall = await cluster.s3.addBoth({ type: 'timeout', attributes: { timeout: 0 } });
      await sleep(3000);
      for (const t of stall) await cluster.s3.remove(t);
      await cluster.s3.down();
      await sleep(2000);
      await cluster.s3.up();
      await sleep(2000);
    } finally {
      running = false;
    }
    await Promise.all(appenders);
    console.log(
      `fault-writer: ${n} appends: ${resolved.size} resolved, ${unknown.length} outcome unknown, ${rejected.size} rejected ` +
        `(${JSON.stringify([...new Set(rejected.values())].slice(0, 5))})`,
    );
    expect(slow, 'appends that took longer than the bound to settle').toEqual([]);
    await expectBothAlive(cluster);

    expect(unknown.length, 'no append ended outcome unknown: retry() was not exercised').toBeGreaterThan(0);
    // every outcome-unknown append settled by retry, once the fault is gone
    for (const u of unknown) {
      const deadline = Date.now() + 30_000;
      for (;;) {
        try {
          const [r] = await w.retry(u.error);
          resolved.set(u.text, r!.entryId);
          break;
        } catch (e) {
          if (!(e instanceof LetheOutcomeUnknownError) || Date.now() > deadline) throw e;
          await sleep(500);
        }
      }
    }
    expect(resolved.size, 'no append resolved at all').toBeGreaterThan(0);

    // stored exactly once each; nothing stored that no resolved append wrote
    for (const [name, replica] of [
      ['a', a],
      ['b', b],
    ] as const) {
      const stored = new Map<string, string[]>();
      for (const subject of SUBJECTS) {
        const r = await until(
          `read ${subject} on ${name}`,
          () => answer(replica, 'GET', `/v1/subjects/${subject}/entries?limit=1000`),
          (x) => x.status === 200 || x.status === 404,
          20_000,
        );
        if (r.status === 404) continue;
        for (const e of (r.body as { entries: Array<{ entryId: string; text: string }> }).entries)
          stored.set(e.text, [...(stored.get(e.text) ?? []), e.entryId]);
      }
      const missing = [...resolved].filter(([text, id]) => stored.get(text)?.length !== 1 || stored.get(text)![0] !== id);
      expect(missing, `resolved appends not stored exactly once (replica ${name})`).toEqual([]);
      const extra = [...stored.keys()].filter((text) => !resolved.has(text));
      expect(
        extra.map((t) => `${t}: rejected with ${rejected.get(t) ?? '(never settled)'}`),
        `stored entries of appends that rejected (replica ${name})`,
      ).toEqual([]);
    }
  });
});

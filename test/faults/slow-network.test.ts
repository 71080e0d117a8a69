/**
 * A slow network (issue 14, scenario c): 5 ms of latency added by Toxiproxy on every
 * PostgreSQL and MinIO connection of two replicas and of a writer client (the
 * condition `BENCH_ONLY=faults npm run bench` measures throughput under).
 *
 * Invariants: latency alone fails nothing and loses nothing — every append through the
 * writer client (sealing locally, uploading through the slow store, registering through
 * replica a) and through the service (replica b) resolves, each is readable with its
 * text through the other replica, and an erasure under the same latency completes and
 * leaves the erased subject unreadable on both.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LetheWriter } from '../../src/client/index.js';
import { S3ObjectStore } from '../../src/client/s3.js';
import { TOKENS } from '../support/vault.js';
import { answer, awaitErasureSettled, expectBothAlive, type FaultCluster, startFaultCluster } from './support.js';

const SUBJECTS = Array.from({ length: 10 }, (_, i) => `user:fault-slow-${i}`);
const WRITER_ENTRIES = 300;
const SERVICE_ENTRIES = 40;

describe('a slow network: 5 ms on every database and object-store connection', () => {
  let cluster: FaultCluster;
  let writer: LetheWriter | undefined;

  beforeAll(async () => {
    cluster = await startFaultCluster('slow');
    await cluster.pg.add({ type: 'latency', attributes: { latency: 5 } });
    await cluster.s3.add({ type: 'latency', attributes: { latency: 5 } });
  }, 120_000);
  afterAll(async () => {
    await writer?.close().catch(() => {});
    await cluster?.heal().catch(() => {});
    await cluster?.stop();
  });

  it('appends through the writer client and the service all resolve and are readable on the other replica; an erasure completes', {
    timeout: 120_000,
  }, async () => {
    const { a, b, env } = cluster;
    writer = new LetheWriter({
      baseUrl: a.url,
      token: TOKENS.writer,
      store: new S3ObjectStore({ endpoint: env.S3_ENDPOINT!, accessKey: env.S3_ACCESS_KEY!, secretKey: env.S3_SECRET_KEY!, bucket: env.S3_BUCKET! }),
      segmentMaxAgeMs: 20,
    });
    const w = writer;
    const expected = new Map<string, { subject: string; text: string }>();
    const t0 = performance.now();
    const results = await Promise.allSettled(
      Array.from({ length: WRITER_ENTRIES }, async (_, i) => {
        const subject = SUBJECTS[i % SUBJECTS.length]!;
        const text = `slow writer entry ${i} ${Math.random().toString(36).slice(2)}`;
        const r = await w.append(subject, { text });
        expected.set(r.entryId, { subject, text });
      }),
    );
    const writerSeconds = (performance.now() - t0) / 1000;
    expect(results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason))).toEqual([]);

    for (let i = 0; i < SERVICE_ENTRIES; i++) {
      const subject = SUBJECTS[i % SUBJECTS.length]!;
      const text = `slow service entry ${i}`;
      const r = await answer(b, 'POST', `/v1/subjects/${subject}/entries`, { body: { text } });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      expected.set((r.body as { entryId: string }).entryId, { subject, text });
    }
    console.log(`fault-slow: ${WRITER_ENTRIES} writer appends in ${writerSeconds.toFixed(2)} s under 5 ms latency`);

    // each readable with its text through the other replica
    for (const subject of SUBJECTS) {
      for (const [name, replica] of [
        ['a', a],
        ['b', b],
      ] as const) {
        const r = await answer(replica, 'GET', `/v1/subjects/${subject}/entries?limit=1000`);
        expect(r.status).toBe(200);
        const stored = new Map((r.body as { entries: Array<{ entryId: string; text: string }> }).entries.map((e) => [e.entryId, e.text]));
        const want = [...expected].filter(([, e]) => e.subject === subject);
        expect(
          want.filter(([id, e]) => stored.get(id) !== e.text).map(([id]) => id),
          `${subject} on replica ${name}`,
        ).toEqual([]);
        expect(stored.size).toBe(want.length);
      }
    }

    // an erasure under the same latency completes
    const gone = SUBJECTS[0]!;
    const requested = await answer(a, 'POST', '/v1/erasures', { role: 'eraser', body: { subject: gone, reason: 'slow network test' } });
    expect(requested.status, JSON.stringify(requested.body)).toBe(202);
    const view = await awaitErasureSettled(cluster, (requested.body as { erasureId: string }).erasureId, 60_000);
    expect(view.status, JSON.stringify(view.steps.map((s) => [s.name, s.status, s.detail]))).toBe('completed');
    for (const replica of [a, b]) expect((await answer(replica, 'GET', `/v1/subjects/${gone}/entries`)).status).toBe(410);
    await expectBothAlive(cluster);
  });
});

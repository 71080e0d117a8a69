/**
 * The whole cluster under load and failures (infra/cluster/cluster.ts): three `lethe
 * serve` replicas over six index shards (two each), a PostgreSQL primary and standby
 * kept by pg_auto_failover, and an erasure-coded MinIO cluster of four servers. Sixteen
 * clients append, lease, search and erase while (a) the PostgreSQL primary is killed,
 * (b) one MinIO server is killed, and (c) a replica holding shards is SIGKILLed.
 *
 * Invariants:
 * - every request a live replica receives answers within 20 s, with 2xx, or 503
 *   problem+json with Retry-After (a client then tries again, or another replica);
 * - no acknowledged append is lost: each reads back after the failures;
 * - a search for a subject whose entry was indexed before the failures either finds
 *   it, or says it is partial and names the missing shard — never silently short;
 * - every erasure requested during the failures completes, its probe covering every
 *   shard (its coverage whole, so no shard uncovered), and its subject is unreadable
 *   on every replica.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LetheCluster, startCluster } from '../../infra/cluster/cluster.js';
import { until } from '../support/until.js';
import { TOKENS, TOKENS_ENV } from '../support/vault.js';

const CLIENTS = 16;
const SEEDED = 24;
const ERASED = 6;
const REQUEST_MS = 20_000;
const headers = (role: keyof typeof TOKENS) => ({ authorization: `Bearer ${TOKENS[role]}`, 'content-type': 'application/json' });

/** Words no template shares (a shared template would read as near copies to the probe). */
const words = (n: number) =>
  Array.from({ length: n }, () =>
    randomBytes(5)
      .toString('base64url')
      .replace(/[^a-z]/gi, 'q')
      .toLowerCase(),
  ).join(' ');

type Answer = { replica: number; status: number; ms: number; problem: boolean; retryAfter: string | null; body: unknown };
type Search = { hits: Array<{ text: string }>; partial?: boolean; shards?: { missing: number[] } };

describe('a cluster of three replicas, six shards, PostgreSQL with failover and a MinIO cluster', () => {
  let cluster: LetheCluster;
  const dead = new Set<number>();
  const answers: Answer[] = [];
  /** Requests to a replica that was killed: no answer is owed by a dead process. */
  let toDead = 0;
  const violations: string[] = [];
  const seeded = new Map<string, string>();
  const acknowledged = new Map<string, string[]>();
  const erasures: Array<{ subject: string; erasureId: string }> = [];

  /** One request to replica `i` (a live one), timed; what it answered, or undefined when the replica died under it. */
  async function call(i: number, method: string, path: string, role: keyof typeof TOKENS, body?: unknown): Promise<Answer | undefined> {
    const started = Date.now();
    try {
      const res = await fetch(`${cluster.replicas[i]!.url}${path}`, {
        method,
        headers: headers(role),
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(REQUEST_MS + 5_000),
      });
      const text = await res.text();
      const a: Answer = {
        replica: i,
        status: res.status,
        ms: Date.now() - started,
        problem: (res.headers.get('content-type') ?? '').includes('problem+json'),
        retryAfter: res.headers.get('retry-after'),
        body: text ? JSON.parse(text) : undefined,
      };
      answers.push(a);
      return a;
    } catch (e) {
      if (dead.has(i)) {
        toDead++;
        return undefined;
      }
      violations.push(`${method} ${path} on replica ${i}: no answer after ${Date.now() - started} ms (${String(e)})`);
      return undefined;
    }
  }

  const live = () => [0, 1, 2].filter((i) => !dead.has(i));

  beforeAll(async () => {
    cluster = await startCluster({ replicas: 3, shards: 6, env: { LETHE_TOKENS: TOKENS_ENV, LETHE_ERASURE_POLL_MS: '200' } });
    await until('every shard held and ready', async () => {
      const ready = await Promise.all(
        cluster.replicas.map(async (r) => ((await (await fetch(`${r.url}/readyz`)).json()) as { shards?: { answering: number[] } }).shards),
      );
      return ready.reduce((n, s) => n + (s?.answering.length ?? 0), 0) === 6 && ready.every((s) => s?.answering.length === 2);
    });
    // subjects searched for during the failures, and subjects erased during them
    for (let s = 0; s < SEEDED + ERASED; s++) {
      const subject = `user:cluster-${s}`;
      const text = `${words(1)}marker ${words(10)}`;
      const a = await call(s % 3, 'POST', `/v1/subjects/${subject}/entries`, 'writer', { text });
      expect(a?.status).toBe(201);
      seeded.set(subject, text);
    }
    // indexed on their owners (loaded over NOTIFY) before the failures start
    await until('every seeded entry searchable', async () => {
      for (const [subject, text] of seeded) {
        const a = await call(0, 'POST', '/v1/search', 'writer', { query: text.split(' ')[0], subject, k: 3 });
        if (!(a?.body as Search | undefined)?.hits.some((h) => h.text === text)) return false;
      }
      return true;
    });
    answers.length = 0;
  }, 600_000);

  afterAll(async () => {
    await cluster?.stop();
  }, 120_000);

  it('16 clients through a PostgreSQL failover, a MinIO server and a replica killed: every invariant holds', { timeout: 600_000 }, async () => {
    let stop = false;
    let round = 0;
    let partial = 0;
    const client = async (c: number) => {
      const own = `user:client-${c}`;
      acknowledged.set(own, []);
      for (let n = 0; !stop; n++) {
        const targets = live();
        const i = targets[(c + n) % targets.length]!;
        const op = (c + n) % 4;
        if (op === 0) {
          const text = `${words(8)} ${c}-${n}`;
          const a = await call(i, 'POST', `/v1/subjects/${own}/entries`, 'writer', { text });
          if (a?.status === 201) acknowledged.get(own)!.push(text);
        } else if (op === 1) {
          await call(i, 'POST', `/v1/subjects/${own}/key/lease`, 'writer');
        } else {
          const subject = `user:cluster-${(c * 7 + n) % SEEDED}`;
          const text = seeded.get(subject)!;
          const a = await call(i, 'POST', '/v1/search', 'writer', { query: text.split(' ')[0], subject, k: 3 });
          const body = a?.body as Search | undefined;
          if (a?.status === 200 && !body!.partial && !body!.hits.some((h) => h.text === text))
            violations.push(`a search for ${subject} on replica ${i} missed its entry without saying it was partial`);
          if (a?.status === 200 && body!.partial && !(body!.shards!.missing.length > 0)) violations.push('a partial search named no missing shard');
          if (a?.status === 200 && body!.partial) partial++;
        }
        round++;
      }
    };
    const clients = Array.from({ length: CLIENTS }, (_, c) => client(c));
    const erase = async (k: number) => {
      const subject = `user:cluster-${SEEDED + k}`;
      for (;;) {
        const targets = live();
        const a = await call(targets[k % targets.length]!, 'POST', '/v1/erasures', 'eraser', { subject });
        if (a?.status === 202 || a?.status === 200) {
          erasures.push({ subject, erasureId: (a.body as { erasureId: string }).erasureId });
          return;
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    };
    const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
    try {
      await pause(3_000);
      // (a) the PostgreSQL primary
      await erase(0);
      const primary = (await cluster.pg.primary())!;
      await cluster.pg.kill(primary);
      await erase(1);
      await cluster.pg.failedOver(primary, 60_000);
      await pause(5_000);
      // (b) a MinIO server
      await erase(2);
      await cluster.minio.kill(0);
      await erase(3);
      await pause(5_000);
      // (c) a replica holding shards: its shards are missing until the others take them over
      await erase(4);
      dead.add(0);
      await cluster.kill(0);
      await erase(5);
      await until(
        'the dead replica’s shards taken over and searchable',
        async () => {
          const ready = await Promise.all(
            live().map(async (i) => ((await (await fetch(`${cluster.replicas[i]!.url}/readyz`)).json()) as { shards?: { answering: number[] } }).shards),
          );
          return ready.reduce((n, s) => n + (s?.answering.length ?? 0), 0) === 6;
        },
        90_000,
      );
      await pause(5_000);
    } finally {
      stop = true;
      await Promise.all(clients);
    }
    expect(round).toBeGreaterThan(100);

    // every answer within the bound, and of the kinds a client can act on
    expect(violations).toEqual([]);
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(REQUEST_MS);
    for (const a of answers) {
      if (a.status >= 200 && a.status < 300) continue;
      expect(a.status, JSON.stringify(a.body)).toBe(503);
      expect(a.problem && a.retryAfter !== null).toBe(true);
    }
    // no acknowledged append lost
    for (const [subject, texts] of acknowledged) {
      const a = await call(1, 'GET', `/v1/subjects/${subject}/entries?limit=1000`, 'writer');
      expect(a?.status).toBe(200);
      const listed = new Set((a!.body as { entries: Array<{ text: string }> }).entries.map((e) => e.text));
      for (const text of texts) expect(listed.has(text), `${subject}: ${text}`).toBe(true);
    }
    // every erasure completes, its probe covering every shard, and its subject is unreadable everywhere
    expect(erasures).toHaveLength(ERASED);
    for (const { subject, erasureId } of erasures) {
      let view: { status: string; probe: { coverage?: { indexed: number; stored: number } } } | undefined;
      await until(
        `the erasure of ${subject}`,
        async () => {
          const a = await call(1, 'GET', `/v1/erasures/${erasureId}`, 'eraser');
          view = a?.body as typeof view;
          return view?.status === 'completed' || view?.status === 'incomplete' || view?.status === 'failed';
        },
        180_000,
      );
      expect(view!.status, JSON.stringify(view)).toBe('completed');
      expect(view!.probe.coverage!.indexed).toBe(view!.probe.coverage!.stored);
      for (const i of live()) expect((await call(i, 'GET', `/v1/subjects/${subject}/entries`, 'writer'))?.status).toBe(410);
    }
    const statuses = new Map<number, number>();
    for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
    console.log(
      JSON.stringify({
        requests: answers.length,
        toDead,
        partialSearches: partial,
        statuses: Object.fromEntries(statuses),
        slowestMs: Math.max(...answers.map((a) => a.ms)),
      }),
    );
  });
});

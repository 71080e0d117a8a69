/**
 * GET /v1/erasures/{id}/events without load (src/erasure/watchers.ts): streams on one
 * erasure share one watcher per replica (the `lethe_erasure_watchers` gauge), woken by
 * the notification each transition commits with; events arrive in order and the
 * stream ends with the `end` event; a stream opened after the erasure finished gets
 * the whole timeline and ends; a token holds at most LETHE_SSE_STREAMS_PER_TOKEN
 * streams (429 `too_many_streams` with Retry-After); a client that disconnects leaves
 * (watchers and streams back to 0). On real PostgreSQL, in process and with two
 * `lethe serve` processes on one database — a transition committed by replica A
 * reaches a stream on replica B by notification (B's fallback poll is ten minutes) —
 * and on the embedded PGlite.
 *
 * In process the worker is off: erasures are driven with `settle`, and held open at
 * drain_leases by a writer's lease.
 */
import { randomBytes } from 'node:crypto';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TERMINAL_STATUSES } from '../../src/erasure/machine.js';
import type { ErasureTransition } from '../../src/erasure/view.js';
import { expectProblem, ok } from '../support/http.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { CLI, type RunningService, startService } from '../support/process.js';
import { openTestApp, type TestApp, type TestRole, TOKENS, tempDir, testEnv } from '../support/vault.js';

const tag = () => randomBytes(5).toString('hex');
const CAP = 3;

interface SseEvent {
  readonly event: string;
  readonly id?: string;
  readonly data: string;
}

/** An open events stream, parsed as it arrives. */
class Stream {
  readonly events: SseEvent[] = [];
  readonly finished: Promise<void>;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  #buffer = '';
  #changed: () => void = () => {};

  constructor(readonly res: Response) {
    this.#reader = res.body!.getReader();
    this.finished = this.#pump();
  }

  async #pump(): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { done, value } = await this.#reader.read();
        if (done) break;
        this.#buffer += decoder.decode(value, { stream: true });
        let at: number;
        while ((at = this.#buffer.indexOf('\n\n')) >= 0) {
          this.events.push(parseBlock(this.#buffer.slice(0, at)));
          this.#buffer = this.#buffer.slice(at + 2);
        }
        this.#changed();
      }
    } catch {
      // cancelled
    } finally {
      this.#changed();
    }
  }

  get steps(): Array<ErasureTransition & { eventId: string }> {
    return this.events.filter((e) => e.event === 'step').map((e) => ({ ...(JSON.parse(e.data) as ErasureTransition), eventId: e.id ?? '' }));
  }

  get end(): SseEvent | undefined {
    return this.events.find((e) => e.event === 'end');
  }

  /** Waits until `check` holds (re-checked on every chunk), at most `ms`. */
  async until(check: () => boolean, what: string, ms = 20_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!check()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`stream: ${what} not seen in ${ms} ms; events ${JSON.stringify(this.events.map((e) => e.event))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 200));
        this.#changed = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  /** The client goes away. */
  async cancel(): Promise<void> {
    await this.#reader.cancel();
  }
}

function parseBlock(block: string): SseEvent {
  let event = 'message';
  let id: string | undefined;
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    const at = line.indexOf(':');
    const field = at < 0 ? line : line.slice(0, at);
    const value = at < 0 ? '' : line.slice(at + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'id') id = value;
    else if (field === 'data') data.push(value);
  }
  return { event, ...(id !== undefined ? { id } : {}), data: data.join('\n') };
}

/** A sample of a metric in the Prometheus text (0 when absent). */
function sample(text: string, name: string, labels = ''): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

/** Polls `read` until it answers `want` (at most 5 s); answers the last value. */
async function settles(read: () => Promise<number>, want: number): Promise<number> {
  const deadline = Date.now() + 5000;
  let value = await read();
  while (value !== want && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 25));
    value = await read();
  }
  return value;
}

/** `n` times `role`. */
function roles(n: number, role: TestRole): TestRole[] {
  return Array.from({ length: n }, () => role);
}

function expectOrdered(steps: ReadonlyArray<{ id: number }>): void {
  for (let i = 1; i < steps.length; i++) expect(steps[i]!.id).toBeGreaterThan(steps[i - 1]!.id);
}

describe('events streams in one process (PostgreSQL)', () => {
  let t: TestApp;
  /** The erasure the first test runs to its end. */
  let finishedId = '';

  beforeAll(async () => {
    t = await openTestApp({ app: { erasureWorker: false }, extraEnv: { LETHE_SSE_STREAMS_PER_TOKEN: String(CAP), LETHE_LEASE_TTL_SECONDS: '1' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  const metrics = async () => (await t.call('GET', '/metrics', { role: 'none' })).text();
  const watchers = async () => sample(await metrics(), 'lethe_erasure_watchers');
  const open = async () => sample(await metrics(), 'lethe_erasure_event_streams');
  const stream = async (erasureId: string, role: TestRole = 'eraser', headers: Record<string, string> = {}) => {
    const res = await t.call('GET', `/v1/erasures/${erasureId}/events`, { role, headers });
    expect(res.status, res.status === 200 ? '' : await res.clone().text()).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    return new Stream(res);
  };

  /** An erasure held open at drain_leases by a writer's lease (LETHE_LEASE_TTL_SECONDS=1: `settle` ends it). */
  async function heldOpen(): Promise<string> {
    const s = `user:sse-${tag()}`;
    const appended = await t.call('POST', `/v1/subjects/${s}/entries`, { role: 'writer', body: { text: `Notes of ${s} about the allotment.` } });
    expect(appended.status).toBe(201);
    expect((await t.call('POST', `/v1/subjects/${s}/key/lease`, { role: 'writer' })).status).toBe(200);
    const { erasureId } = await ok<{ erasureId: string }>(t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject: s } }), 202);
    return erasureId;
  }

  it('streams on one erasure share one watcher, get every event in order, end together, and leave nothing behind', async () => {
    const erasureId = await heldOpen();
    expect(await watchers()).toBe(0);
    const streams = [await stream(erasureId), await stream(erasureId), await stream(erasureId)];
    for (const s of streams) await s.until(() => s.steps.length > 0, 'the request transition');
    expect(await watchers()).toBe(1);
    expect(await open()).toBe(CAP);
    expect(t.app.erasures.watchers.size).toBe(1);

    // the token holds its cap: a fourth stream is refused, and not counted
    const refused = await t.call('GET', `/v1/erasures/${erasureId}/events`, { role: 'eraser' });
    expect(refused.headers.get('retry-after')).toBe('5');
    const problem = await expectProblem(refused, 429, 'too_many_streams');
    expect(problem.detail).toContain(String(CAP));
    expect(await open()).toBe(CAP);
    // the cap is per token: another token still streams, on the same watcher
    const admin = await stream(erasureId, 'admin');
    await admin.until(() => admin.steps.length > 0, 'the request transition');
    expect(await watchers()).toBe(1);
    expect(await open()).toBe(CAP + 1);

    const before = await metrics();
    const view = await t.app.erasures.settle(erasureId);
    for (const s of [...streams, admin]) await s.until(() => s.end !== undefined, 'the end event');
    await Promise.all([...streams, admin].map((s) => s.finished));

    const timeline = await t.app.erasures.transitions(erasureId);
    expect(timeline.length).toBeGreaterThan(5);
    expect(TERMINAL_STATUSES).toContain(timeline.at(-1)!.status);
    for (const s of [...streams, admin]) {
      expect(s.events.at(-1)!.event).toBe('end');
      expect(s.events.filter((e) => e.event === 'end')).toHaveLength(1);
      expectOrdered(s.steps);
      expect(s.steps.map(({ eventId, ...rest }) => ({ ...rest, eventId: Number(eventId) }))).toEqual(timeline.map((tr) => ({ ...tr, eventId: tr.id })));
      expect(JSON.parse(s.end!.data)).toEqual({ erasureId, status: view.status, class: view.class ?? null, recovered: view.probe.recovered });
    }
    // the watcher read on the notifications the transitions committed with (this replica's own)
    const after = await metrics();
    const refreshes = (text: string, cause: string) => sample(text, 'lethe_erasure_watcher_refreshes_total', `{cause="${cause}"}`);
    expect(refreshes(after, 'notification') - refreshes(before, 'notification')).toBeGreaterThan(0);
    expect(refreshes(after, 'local')).toBe(0);

    expect(await settles(watchers, 0)).toBe(0);
    expect(await settles(open, 0)).toBe(0);
    expect(t.app.erasures.watchers.size).toBe(0);
    finishedId = erasureId;
  });

  it('a stream opened after the erasure finished gets the whole timeline and ends; Last-Event-ID resumes after it', async () => {
    expect(finishedId).not.toBe('');
    const timeline = await t.app.erasures.transitions(finishedId);
    const late = await stream(finishedId);
    await late.finished;
    expect(late.events.at(-1)!.event).toBe('end');
    expect(late.steps.map((s) => s.id)).toEqual(timeline.map((tr) => tr.id));
    const cut = Math.floor(timeline.length / 2);
    const resumed = await stream(finishedId, 'eraser', { 'last-event-id': String(timeline[cut]!.id) });
    await resumed.finished;
    expect(resumed.steps.map((s) => s.id)).toEqual(timeline.slice(cut + 1).map((tr) => tr.id));
    expect(resumed.events.at(-1)!.event).toBe('end');
    expect(await settles(watchers, 0)).toBe(0);
    expect(await settles(open, 0)).toBe(0);
  });

  it('clients that disconnect leave: the watcher stops with the last one, and the token gets its streams back', async () => {
    const erasureId = await heldOpen();
    const first = [await stream(erasureId), await stream(erasureId), await stream(erasureId)];
    for (const s of first) await s.until(() => s.steps.length > 0, 'the request transition');
    expect(await watchers()).toBe(1);
    await first[0]!.cancel();
    expect(await settles(open, CAP - 1)).toBe(CAP - 1);
    expect(await watchers()).toBe(1);
    await Promise.all(first.slice(1).map((s) => s.cancel()));
    expect(await settles(open, 0)).toBe(0);
    expect(await settles(watchers, 0)).toBe(0);

    // the slots came back: the cap's worth of streams again, on a fresh watcher that replays the timeline
    const again = [await stream(erasureId), await stream(erasureId), await stream(erasureId)];
    for (const s of again) await s.until(() => s.steps.length > 0, 'the timeline');
    expect(await watchers()).toBe(1);
    await t.app.erasures.settle(erasureId);
    for (const s of again) await s.finished;
    for (const s of again) expect(s.events.at(-1)!.event).toBe('end');
    expect(await settles(watchers, 0)).toBe(0);
    expect(await settles(open, 0)).toBe(0);
  });

  it('clients that leave over HTTP while the erasure is read before the stream starts give their slots back', async () => {
    const erasureId = await heldOpen();
    // the app on a real Node server: a client's socket can be closed at a precise moment
    let server: ServerType | undefined;
    await new Promise<void>((resolve) => {
      server = serve({ fetch: t.http.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve());
    });
    const { port } = server!.address() as AddressInfo;
    const connections = () => new Promise<number>((resolve, reject) => server!.getConnections((e, n) => (e ? reject(e) : resolve(n))));
    // another session holds the erasures table (as a migration's DDL would): the stream's status read waits on it
    const sql = postgres(t.db!.url, { max: 2, onnotice: () => {} });
    let unblock = () => {};
    let locked = () => {};
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const held = sql.begin(async (tx) => {
      await tx`lock table erasures in access exclusive mode`;
      locked();
      await new Promise<void>((resolve) => (unblock = resolve));
    });
    const clients: Socket[] = [];
    try {
      await Promise.race([isLocked, held]);
      for (const role of ['eraser', 'admin'] as const) {
        for (let i = 0; i < CAP; i++) {
          const socket = connect(port, '127.0.0.1');
          socket.on('error', () => {});
          clients.push(socket);
          await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
          socket.write(
            `GET /v1/erasures/${erasureId}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKENS[role]}\r\nAccept: text/event-stream\r\n\r\n`,
          );
        }
      }
      // every request took its slot and waits on the status read
      const waiting = async () => {
        const [row] = await sql<
          { n: number }[]
        >`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`;
        return row!.n;
      };
      expect(await settles(waiting, 2 * CAP)).toBe(2 * CAP);
      // the clients leave before their streams start, and the server sees them go
      for (const socket of clients) socket.destroy();
      expect(await settles(connections, 0)).toBe(0);
    } finally {
      unblock();
      await held;
      await sql.end({ timeout: 1 });
    }
    try {
      expect(await settles(open, 0)).toBe(0);
      expect(await settles(watchers, 0)).toBe(0);
      // each token streams its cap's worth again
      const again = [...roles(CAP, 'eraser'), ...roles(CAP, 'admin')];
      const streams: Stream[] = [];
      for (const role of again) streams.push(await stream(erasureId, role));
      for (const s of streams) await s.until(() => s.steps.length > 0, 'the request transition');
      expect(await open()).toBe(2 * CAP);
      expect(await watchers()).toBe(1);
      await Promise.all(streams.map((s) => s.cancel()));
      expect(await settles(open, 0)).toBe(0);
      expect(await settles(watchers, 0)).toBe(0);
    } finally {
      await new Promise((r) => server!.close(r));
    }
  });

  it('answers 404 for an unknown erasure without taking a slot', async () => {
    for (let i = 0; i < CAP + 1; i++) {
      await expectProblem(t.call('GET', `/v1/erasures/ers_${'A'.repeat(22)}/events`, { role: 'eraser' }), 404, 'not_found');
    }
    expect(await open()).toBe(0);
    expect(await watchers()).toBe(0);
  });
});

/** An erasure of a subject with one entry, a stream on it that saw the request, and the erasure run to its end in this process. */
async function streamSettledErasure(t: TestApp, subject: string, text: string): Promise<{ erasureId: string; events: Stream }> {
  expect((await t.call('POST', `/v1/subjects/${subject}/entries`, { role: 'writer', body: { text } })).status).toBe(201);
  const { erasureId } = await ok<{ erasureId: string }>(t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject } }), 202);
  const res = await t.call('GET', `/v1/erasures/${erasureId}/events`, { role: 'eraser' });
  expect(res.status).toBe(200);
  const events = new Stream(res);
  await events.until(() => events.steps.length > 0, 'the request transition');
  await t.app.erasures.settle(erasureId);
  return { erasureId, events };
}

describe('events streams on the embedded PGlite', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await openTestApp({ embedded: true, app: { erasureWorker: false } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('wakes on the in-process notification and ends', async () => {
    const { erasureId, events } = await streamSettledErasure(t, `user:sse-embedded-${tag()}`, 'A line about the pier.');
    await events.finished;
    expect(events.events.at(-1)!.event).toBe('end');
    expect(events.steps.map((e) => e.id)).toEqual((await t.app.erasures.transitions(erasureId)).map((tr) => tr.id));
    const text = await (await t.call('GET', '/metrics', { role: 'none' })).text();
    expect(sample(text, 'lethe_erasure_watcher_refreshes_total', '{cause="notification"}')).toBeGreaterThan(0);
    expect(await settles(async () => sample(await (await t.call('GET', '/metrics', { role: 'none' })).text(), 'lethe_erasure_watchers'), 0)).toBe(0);
  });
});

describe('events streams without a notification listener', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await openTestApp({ app: { listen: false, erasureWorker: false } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("this replica's own transitions wake the watcher, and the stream ends", async () => {
    const { erasureId, events } = await streamSettledErasure(t, `user:sse-unlistened-${tag()}`, 'A line about the harbour.');
    // settle drains in this process: the stream ends long before a 5 s fallback poll would end it
    await events.until(() => events.end !== undefined, 'the end event', 4000);
    expect(events.steps.map((e) => e.id)).toEqual((await t.app.erasures.transitions(erasureId)).map((tr) => tr.id));
    const text = await (await t.call('GET', '/metrics', { role: 'none' })).text();
    expect(sample(text, 'lethe_erasure_watcher_refreshes_total', '{cause="local"}')).toBeGreaterThan(0);
    expect(sample(text, 'lethe_erasure_watcher_refreshes_total', '{cause="notification"}')).toBe(0);
  });
});

describe('events streams across two lethe serve processes on one database', () => {
  let db: TestDatabase;
  let a: RunningService;
  let b: RunningService;
  const auth = (role: keyof typeof TOKENS) => ({ authorization: `Bearer ${TOKENS[role]}` });
  const metricsOf = async (service: RunningService) => (await fetch(`${service.url}/metrics`)).text();

  beforeAll(async () => {
    db = await createTestDatabase();
    const env = testEnv({ databaseUrl: db.url, dataDir: tempDir(), extra: { LETHE_LEASE_TTL_SECONDS: '3' } });
    a = await startService(process.execPath, [...CLI, 'serve'], env);
    // B claims no erasure work within the test (its worker looks once a minute) and polls its watchers every ten minutes
    b = await startService(process.execPath, [...CLI, 'serve'], { ...env, LETHE_ERASURE_POLL_MS: '60000', LETHE_SSE_FALLBACK_POLL_MS: '600000' });
  }, 180_000);
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await db?.drop();
  });

  it('a transition committed by replica A reaches a stream on replica B by notification; a disconnect on B releases', async () => {
    const s = `user:sse-replicas-${tag()}`;
    const appended = await fetch(`${a.url}/v1/subjects/${s}/entries`, {
      method: 'POST',
      headers: { ...auth('writer'), 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'Kept on A.' }),
    });
    expect(appended.status).toBe(201);
    // the lease holds the erasure at drain_leases for up to 3 s, while B's streams connect
    expect((await fetch(`${a.url}/v1/subjects/${s}/key/lease`, { method: 'POST', headers: auth('writer') })).status).toBe(200);
    const requested = await fetch(`${a.url}/v1/erasures`, {
      method: 'POST',
      headers: { ...auth('eraser'), 'content-type': 'application/json' },
      body: JSON.stringify({ subject: s }),
    });
    expect(requested.status).toBe(202);
    const { erasureId } = (await requested.json()) as { erasureId: string };

    const opened = Date.now();
    const leaving = new AbortController();
    const kept = new Stream(await fetch(`${b.url}/v1/erasures/${erasureId}/events`, { headers: auth('eraser') }));
    const gone = new Stream(await fetch(`${b.url}/v1/erasures/${erasureId}/events`, { headers: auth('eraser'), signal: leaving.signal }));
    expect(kept.res.status).toBe(200);
    expect(gone.res.status).toBe(200);
    await kept.until(() => kept.steps.length > 0, 'the first transitions');
    await gone.until(() => gone.steps.length > 0, 'the first transitions');
    expect(sample(await metricsOf(b), 'lethe_erasure_watchers')).toBe(1);
    expect(sample(await metricsOf(b), 'lethe_erasure_event_streams')).toBe(2);
    leaving.abort();
    expect(await settles(async () => sample(await metricsOf(b), 'lethe_erasure_event_streams'), 1)).toBe(1);
    expect(sample(await metricsOf(b), 'lethe_erasure_watchers')).toBe(1);

    await kept.until(() => kept.end !== undefined, 'the end event', 60_000);
    await kept.finished;
    const view = (await (await fetch(`${a.url}/v1/erasures/${erasureId}`, { headers: auth('eraser') })).json()) as { status: string; finishedAt?: string };
    // the erasure finished after B's stream opened: what followed reached B while it was connected
    expect(Date.parse(view.finishedAt!)).toBeGreaterThan(opened);
    expect(JSON.parse(kept.end!.data)).toMatchObject({ erasureId, status: view.status });

    // the whole timeline, as a stream on A reads it after the end
    const onA = new Stream(await fetch(`${a.url}/v1/erasures/${erasureId}/events`, { headers: auth('eraser') }));
    await onA.finished;
    expect(kept.steps.map((e) => e.id)).toEqual(onA.steps.map((e) => e.id));
    expectOrdered(kept.steps);

    // every transition was committed by one replica (A: B's worker did not look), and B learned of them only by
    // notification: its fallback poll never ran
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      const rows = await sql<{ replica: string }[]>`select distinct replica from erasure_transitions where erasure_id = ${erasureId}`;
      expect(rows).toHaveLength(1);
    } finally {
      await sql.end({ timeout: 1 });
    }
    const text = await metricsOf(b);
    expect(sample(text, 'lethe_erasure_watcher_refreshes_total', '{cause="notification"}')).toBeGreaterThan(0);
    expect(sample(text, 'lethe_erasure_watcher_refreshes_total', '{cause="poll"}')).toBe(0);
    expect(await settles(async () => sample(await metricsOf(b), 'lethe_erasure_watchers'), 0)).toBe(0);
    expect(await settles(async () => sample(await metricsOf(b), 'lethe_erasure_event_streams'), 0)).toBe(0);
  }, 90_000);
});

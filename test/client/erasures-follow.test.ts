/**
 * Following an erasure's event stream (src/client/erasures.ts) against a tiny local
 * server that misbehaves on purpose: a stream cut mid-way is resumed with
 * Last-Event-ID, a 429 or a 5xx is retried, an error answer (404) is thrown at once,
 * too many breaks in a row end in ErasureProgressLostError, an abort ends it with the
 * abort's reason, and `wait` reads the erasure instead when its events cannot be had.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ErasureProgressLostError, followErasure, Lethe, ServiceClient, ServiceError } from '../../src/client/index.js';

const TOKEN = 'follow-token-0001';
const ID = 'ers_AAAAAAAAAAAAAAAAAAAAAA';

type Handler = (req: IncomingMessage, res: ServerResponse, attempt: number) => void;
let events: Handler = () => {};
let view: Handler = () => {};
const seen: Array<{ url: string; lastEventId: string | undefined }> = [];
let server: Server;
let base = '';

const step = (id: number, fromStep: string | null, toStep: string | null, status = 'running') =>
  `event: step\nid: ${id}\ndata: ${JSON.stringify({ id, fromStep, toStep, status, at: '2026-01-01T00:00:00.000Z', detail: null })}\n\n`;

function problem(res: ServerResponse, status: number, code: string): void {
  res.writeHead(status, { 'content-type': 'application/problem+json' }).end(JSON.stringify({ type: 'about:blank', title: code, status, code, detail: code }));
}

let attempts = 0;
beforeEach(() => {
  attempts = 0;
  seen.length = 0;
});

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ url: req.url ?? '', lastEventId: req.headers['last-event-id'] as string | undefined });
    if (req.url === `/v1/erasures/${ID}/events`) events(req, res, ++attempts);
    else if (req.url === `/v1/erasures/${ID}`) view(req, res, ++attempts);
    else problem(res, 404, 'not_found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
});

const client = () => new ServiceClient({ baseUrl: base, token: TOKEN });

async function collect(options: Parameters<typeof followErasure>[2] = {}): Promise<number[]> {
  const ids: number[] = [];
  for await (const t of followErasure(client(), ID, { retryDelayMs: 1, ...options })) ids.push(t.id);
  return ids;
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection');
}

describe('followErasure', () => {
  it('resumes a stream cut mid-way with Last-Event-ID, and ends at the end event', async () => {
    events = (_req, res, attempt) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (attempt === 1) {
        res.write(step(1, null, 'classify'));
        res.write(step(2, 'classify', 'fingerprint'));
        setTimeout(() => res.destroy(), 20);
      } else res.end(`${step(3, 'fingerprint', null, 'completed')}event: end\ndata: {"status":"completed"}\n\n`);
    };
    expect(await collect()).toEqual([1, 2, 3]);
    expect(seen.map((s) => s.lastEventId)).toEqual([undefined, '2']);
  });

  it('retries a 429 and a 5xx; throws any other error answer at once', async () => {
    events = (_req, res, attempt) => {
      if (attempt === 1) return problem(res, 429, 'too_many_streams');
      if (attempt === 2) return problem(res, 503, 'unavailable');
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`${step(1, null, 'classify')}event: end\ndata: {}\n\n`);
    };
    expect(await collect()).toEqual([1]);
    expect(seen).toHaveLength(3);

    seen.length = 0;
    events = (_req, res) => problem(res, 404, 'not_found');
    const e = await rejection(collect());
    expect(e).toBeInstanceOf(ServiceError);
    expect(e).toMatchObject({ code: 'not_found', status: 404 });
    expect(seen).toHaveLength(1);
  });

  it('gives up after maxBreaks breaks in a row with ErasureProgressLostError (the last event id and why)', async () => {
    events = (_req, res, attempt) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // the first stream gives one event, then every stream ends without the end event
      res.end(attempt === 1 ? step(7, null, 'classify') : '');
    };
    const e = await rejection(collect({ maxBreaks: 3 }));
    expect(e).toBeInstanceOf(ErasureProgressLostError);
    expect(e).toMatchObject({ code: 'unavailable', lastEventId: '7', erasureId: ID });
    expect((e as ErasureProgressLostError).reason).toBe('the stream ended before the erasure did');
    // one stream, then three more breaks allowed: four attempts, each after the first resuming from 7
    expect(seen.map((s) => s.lastEventId)).toEqual([undefined, '7', '7', '7']);
  });

  it('an abort ends it with the abort reason', async () => {
    events = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(step(1, null, 'classify'));
    };
    const controller = new AbortController();
    const ids: number[] = [];
    const reason = new Error('stop following');
    const e = await rejection(
      (async () => {
        for await (const t of followErasure(client(), ID, { signal: controller.signal })) {
          ids.push(t.id);
          controller.abort(reason);
        }
      })(),
    );
    expect(e).toBe(reason);
    expect(ids).toEqual([1]);
  });
});

describe('Erasures.wait', () => {
  it('reads the erasure until it ends when its events cannot be followed', async () => {
    events = (_req, res) => problem(res, 503, 'unavailable');
    let reads = 0;
    view = (_req, res) => {
      reads += 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ erasureId: ID, status: reads < 3 ? 'running' : 'completed', steps: [] }));
    };
    const lethe = new Lethe({ baseUrl: base, token: TOKEN });
    const done = await lethe.erasures.wait(ID, { maxBreaks: 1, retryDelayMs: 1, pollMs: 5 });
    expect(done.status).toBe('completed');
    expect(reads).toBe(3);
    expect(seen.filter((s) => s.url.endsWith('/events'))).toHaveLength(2);
  });
});

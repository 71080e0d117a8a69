/**
 * The service client (src/client/http.ts) against a tiny local node:http server:
 * what a call sends, error answers as typed errors (code, status, detail), an
 * unreachable service, timeouts and aborts, the token kept out of every message,
 * and the SSE and NDJSON readers across chunk boundaries.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readNdjson, readSse, ServiceClient, ServiceError, type SseEvent, UnreachableError } from '../../src/client/index.js';
import { LetheError } from '../../src/errors.js';

const TOKEN = 'tok-ABCdef_123.secret';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void | Promise<void>;
const routes = new Map<string, Handler>();
let server: Server;
let base = '';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Writes the pieces one by one, pausing between them so each tends to arrive as its own chunk. */
async function writeChunks(res: ServerResponse, contentType: string, pieces: ReadonlyArray<string | Uint8Array>): Promise<void> {
  res.writeHead(200, { 'content-type': contentType });
  for (const p of pieces) {
    res.write(p);
    await pause(5);
  }
  res.end();
}

function problem(res: ServerResponse, status: number, fields: Record<string, unknown>): void {
  res.writeHead(status, { 'content-type': 'application/problem+json' }).end(JSON.stringify({ type: 'about:blank', title: 'problem', status, ...fields }));
}

beforeAll(async () => {
  server = createServer(async (req, res) => {
    let body = '';
    for await (const c of req) body += String(c);
    const handler = routes.get(req.url ?? '');
    if (handler) await handler(req, body, res);
    else problem(res, 404, { code: 'not_found', detail: `no route ${req.url}` });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  routes.set('/echo', (req, body, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body }));
  });
  routes.set('/text', (_req, _body, res) => void res.writeHead(200, { 'content-type': 'text/html' }).end('<p>hi</p>'));
  routes.set('/v1/subjects/user%3Aana/key', (_req, _body, res) => problem(res, 409, { code: 'conflict', detail: 'the key is fenced' }));
  routes.set('/busy', (_req, _body, res) => problem(res, 409, { code: 'erasure_in_progress', detail: 'wait' }));
  routes.set('/teapot', (_req, _body, res) => problem(res, 418, { code: 'teapot', detail: 'short and stout' }));
  routes.set('/html500', (_req, _body, res) => void res.writeHead(500, { 'content-type': 'text/html' }).end('<h1>proxy error</h1>'));
  routes.set('/leaky', (req, _body, res) => problem(res, 401, { code: 'unauthorized', detail: `refused ${req.headers.authorization}` }));
  routes.set('/never', () => {
    // holds the request open: only a timeout or an abort ends it
  });
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

const client = (options: { timeoutMs?: number; baseUrl?: string } = {}) => new ServiceClient({ baseUrl: options.baseUrl ?? base, token: TOKEN, ...options });

async function thrown(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection');
}

describe('calls', () => {
  it('send the bearer token, accept JSON by default, a JSON body with its content type, and extra headers; trailing slashes of the base URL are dropped', async () => {
    const echo = await client({ baseUrl: `${base}//` }).json<{ method: string; url: string; headers: Record<string, string>; body: string }>('POST', '/echo', {
      body: { a: 1, b: ['x'] },
      headers: { 'last-event-id': '7' },
    });
    expect(echo).toMatchObject({ method: 'POST', url: '/echo', body: '{"a":1,"b":["x"]}' });
    expect(echo.headers).toMatchObject({
      authorization: `Bearer ${TOKEN}`,
      accept: 'application/json',
      'content-type': 'application/json',
      'last-event-id': '7',
    });
    expect(client({ baseUrl: `${base}/` }).baseUrl).toBe(base);
  });

  it('send no body nor content type without one, and the accept asked for; text() reads the body as text', async () => {
    const echo = await client().json<{ headers: Record<string, string>; body: string }>('GET', '/echo', { accept: 'text/event-stream' });
    expect(echo.body).toBe('');
    expect(echo.headers['content-type']).toBeUndefined();
    expect(echo.headers.accept).toBe('text/event-stream');
    expect(await client().text('GET', '/text', { accept: 'text/html' })).toBe('<p>hi</p>');
  });
});

describe('error answers', () => {
  it('a problem+json answer is a ServiceError (a LetheError) with its code, status and detail; the message names the path only to its second segment', async () => {
    const e = await thrown(client().request('PUT', '/v1/subjects/user%3Aana/key'));
    expect(e).toBeInstanceOf(ServiceError);
    expect(e).toBeInstanceOf(LetheError);
    expect(e).toMatchObject({
      code: 'conflict',
      status: 409,
      detail: 'the key is fenced',
      retryable: false,
      problem: { code: 'conflict', detail: 'the key is fenced' },
    });
    expect((e as Error).message).toBe('PUT /v1/subjects… answered 409: the key is fenced');
    expect((e as Error).message).not.toContain('ana');
  });

  it('a retryable code stays retryable', async () => {
    expect(await thrown(client().json('GET', '/busy'))).toMatchObject({ code: 'erasure_in_progress', status: 409, retryable: true });
  });

  it('a code lethe does not know is unavailable, the answered code kept in the problem', async () => {
    const e = await thrown(client().json('GET', '/teapot'));
    expect(e).toBeInstanceOf(ServiceError);
    expect(e).toMatchObject({ code: 'unavailable', status: 418, detail: 'short and stout', problem: { code: 'teapot' } });
  });

  it('an answer that is not a problem document is unavailable, its detail the start of the body', async () => {
    const e = await thrown(client().text('GET', '/html500'));
    expect(e).toMatchObject({ code: 'unavailable', status: 500, detail: '<h1>proxy error</h1>', problem: undefined });
  });
});

describe('an unreachable service', () => {
  it('a refused connection is an UnreachableError (a LetheError, unavailable, retryable), not a ServiceError', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((resolve) => closed.close(resolve));
    const e = await thrown(client({ baseUrl: url }).json('GET', '/echo'));
    expect(e).toBeInstanceOf(UnreachableError);
    expect(e).toBeInstanceOf(LetheError);
    expect(e).not.toBeInstanceOf(ServiceError);
    expect(e).toMatchObject({ code: 'unavailable', retryable: true, baseUrl: url, message: `the lethe service at ${url} is unreachable` });
    expect((e as UnreachableError).reason).toEqual(expect.any(String));
    expect((e as Error).cause).toBeDefined();
  });

  it('a timeout is an UnreachableError; the caller aborting is its own abort reason', async () => {
    expect(await thrown(client({ timeoutMs: 100 }).request('GET', '/never'))).toBeInstanceOf(UnreachableError);
    expect(await thrown(client().request('GET', '/never', { timeoutMs: 100 }))).toBeInstanceOf(UnreachableError);
    const controller = new AbortController();
    const reason = new Error('the caller gave up');
    setTimeout(() => controller.abort(reason), 50);
    expect(await thrown(client({ timeoutMs: 60_000 }).request('GET', '/never', { signal: controller.signal }))).toBe(reason);
  });
});

describe('the token', () => {
  it('never appears in an error, even when the service echoes it', async () => {
    const e = (await thrown(client().json('GET', '/leaky'))) as ServiceError;
    expect(e).toMatchObject({ code: 'unauthorized', status: 401 });
    for (const text of [e.message, e.detail, JSON.stringify(e.problem), String(e.stack)]) {
      expect(text).not.toContain(TOKEN);
    }
    expect(e.detail).toBe('refused Bearer [token]');
  });

  it('one fetch would refuse (a line break in it) is refused before any request, and not repeated', () => {
    for (const bad of ['tok\nen-secret', 'tok en-secret', '', 'tøken-secret']) {
      let e: unknown;
      try {
        new ServiceClient({ baseUrl: base, token: bad });
      } catch (caught) {
        e = caught;
      }
      expect(e, JSON.stringify(bad)).toMatchObject({ code: 'validation_failed' });
      if (bad) expect((e as Error).message).not.toContain(bad);
    }
  });
});

/** A Response whose body arrives in exactly these chunks. */
function chunked(pieces: ReadonlyArray<string | Uint8Array>): Response {
  const encoder = new TextEncoder();
  return new Response(
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const p of pieces) controller.enqueue(typeof p === 'string' ? encoder.encode(p) : p);
        controller.close();
      },
    }),
  );
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

const SSE_STREAM =
  ': a comment, then a keep-alive\r\n\r\n' +
  'event: step\r\nid: 1\r\ndata: {"a":1}\r\n\r\n' +
  'event: step\nid: 2\ndata: first line\ndata: second line\ndata:no space\n\n' +
  'data: an unnamed event é\r\r' +
  ': comment inside\nevent:end\nretry: 100\nunknown: field\ndata\n\n' +
  'event: cut\ndata: by the end of the stream\n';

const SSE_EVENTS: SseEvent[] = [
  { event: 'step', id: '1', data: '{"a":1}' },
  { event: 'step', id: '2', data: 'first line\nsecond line\nno space' },
  { event: 'message', data: 'an unnamed event é' },
  { event: 'end', data: '' },
];

describe('server-sent events', () => {
  it('from the server: CRLF, LF and CR line ends, comments, multi-line data, ids; an event cut off by the end is dropped', async () => {
    const pieces = SSE_STREAM.match(/[\s\S]{1,9}/g)!;
    routes.set('/events', (_req, _body, res) => writeChunks(res, 'text/event-stream', pieces));
    const res = await client().request('GET', '/events', { accept: 'text/event-stream' });
    expect(await collect(readSse(res))).toEqual(SSE_EVENTS);
  });

  it('whatever the chunk boundaries: split anywhere, a CRLF and a multi-byte character included', async () => {
    const bytes = new TextEncoder().encode(SSE_STREAM);
    for (let at = 0; at <= bytes.length; at++) {
      expect(await collect(readSse(chunked([bytes.subarray(0, at), bytes.subarray(at)]))), `split at ${at}`).toEqual(SSE_EVENTS);
    }
    expect(await collect(readSse(chunked([...bytes].map((b) => new Uint8Array([b])))))).toEqual(SSE_EVENTS);
  });

  it('a blank line that ends the stream with a lone CR still ends its event', async () => {
    expect(await collect(readSse(chunked(['event: end\rdata: x\r', '\r'])))).toEqual([{ event: 'end', data: 'x' }]);
  });
});

describe('NDJSON', () => {
  const lines = [{ progress: { phase: 'objects', done: 1 } }, { progress: { phase: 'keys', done: 2, note: 'ünïcode' } }, { backupId: 'bak_1', objects: 2 }];
  const text = `${JSON.stringify(lines[0])}\n\n${JSON.stringify(lines[1])}\r\n   \n${JSON.stringify(lines[2])}`;

  it('from the server, lines split across chunks, blank lines skipped, the last without its newline', async () => {
    routes.set('/backups', (_req, _body, res) => writeChunks(res, 'application/x-ndjson', text.match(/[\s\S]{1,5}/g)!));
    const res = await client().request('POST', '/backups', { accept: 'application/x-ndjson' });
    expect(await collect(readNdjson(res))).toEqual(lines);
  });

  it('whatever the chunk boundaries', async () => {
    const bytes = new TextEncoder().encode(`${text}\n`);
    for (let at = 0; at <= bytes.length; at++) {
      expect(await collect(readNdjson(chunked([bytes.subarray(0, at), bytes.subarray(at)]))), `split at ${at}`).toEqual(lines);
    }
  });

  it('a line that is not JSON is a SyntaxError; an empty body is no values', async () => {
    await expect(collect(readNdjson(chunked(['{"a":1}\n', 'not json\n'])))).rejects.toBeInstanceOf(SyntaxError);
    expect(await collect(readNdjson(chunked([])))).toEqual([]);
  });
});

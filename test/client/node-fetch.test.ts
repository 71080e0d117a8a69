/**
 * The client's default transport (src/client/node-fetch.ts) against a local node:http
 * server: answers as fetch Responses (status, every header, no body where none may be),
 * streamed answers arriving before their end, a body cut off or stalled past a timeout
 * rejected, kept-alive sockets reused and not holding a process open.
 */
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeFetch } from '../../src/client/node-fetch.js';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;
const routes = new Map<string, Handler>();
let server: Server;
let base = '';
const sockets = new Set<unknown>();

beforeAll(async () => {
  server = createServer(async (req, res) => {
    sockets.add(req.socket);
    let body = '';
    for await (const c of req) body += String(c);
    const handler = routes.get(req.url ?? '');
    if (handler) handler(req, body, res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('nodeFetch', () => {
  it('sends the method, headers and body with its length; answers the status, every header and the body', async () => {
    routes.set('/echo', (req, body, res) => {
      res.setHeader('set-cookie', ['a=1', 'b=2']);
      res.writeHead(201, 'Made', { 'content-type': 'application/json', 'x-seen': `${req.method} ${req.headers['content-length']} ${req.headers['x-one']}` });
      res.end(JSON.stringify({ body }));
    });
    const res = await nodeFetch(`${base}/echo`, { method: 'POST', headers: { 'x-one': 'one' }, body: '{"text":"é"}' });
    expect(res.status).toBe(201);
    expect(res.ok).toBe(true);
    expect(res.statusText).toBe('Made');
    expect(res.headers.get('x-seen')).toBe('POST 13 one');
    expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(await res.json()).toEqual({ body: '{"text":"é"}' });
  });

  it('answers a whole body as a Response read once: text, bytes, a stream or a clone, as the fetch Response does', async () => {
    routes.set('/whole', (_req, _body, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"text":"é"}'));
    const res = await nodeFetch(`${base}/whole`, {});
    expect(res).toBeInstanceOf(Response);
    const copy = res.clone();
    expect(res.bodyUsed).toBe(false);
    expect(await res.text()).toBe('{"text":"é"}');
    expect(res.bodyUsed).toBe(true);
    await expect(res.text()).rejects.toThrow(TypeError);
    expect(() => res.clone()).toThrow(TypeError);
    await expect(res.body!.getReader().read()).rejects.toThrow(TypeError); // not the zeroed buffer
    expect(new TextDecoder().decode(await copy.arrayBuffer())).toBe('{"text":"é"}');
    const blob = await (await nodeFetch(`${base}/whole`, {})).blob();
    expect(blob).toMatchObject({ size: 13, type: 'application/json' });
    expect(await blob.text()).toBe('{"text":"é"}'); // a copy: the answer's own buffer is zeroed once read
    const streamed = await nodeFetch(`${base}/whole`, {});
    expect(streamed.body).toBe(streamed.body); // one stream, however often it is asked for
    expect(await streamed.json()).toEqual({ text: 'é' }); // read through that stream
    const viaReader = await nodeFetch(`${base}/whole`, {});
    expect(new TextDecoder().decode((await viaReader.body!.getReader().read()).value)).toBe('{"text":"é"}');
  });

  it('answers 204 with no body, and error statuses as answers (not rejections)', async () => {
    routes.set('/none', (_req, _body, res) => res.writeHead(204).end());
    routes.set('/gone', (_req, _body, res) => res.writeHead(410, { 'content-type': 'application/problem+json' }).end('{"code":"key_destroyed"}'));
    const none = await nodeFetch(`${base}/none`, { method: 'DELETE' });
    expect(none.status).toBe(204);
    expect(none.body).toBeNull();
    const gone = await nodeFetch(`${base}/gone`, {});
    expect(gone.status).toBe(410);
    expect(gone.ok).toBe(false);
    expect(await gone.json()).toEqual({ code: 'key_destroyed' });
  });

  it('streams an event stream: its first event is read while the server still holds the answer open', async () => {
    let finish: () => void = () => {};
    routes.set('/events', (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n');
      finish = () => res.end('data: last\n\n');
    });
    const res = await nodeFetch(`${base}/events`, { headers: { accept: 'text/event-stream' } });
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe('data: first\n\n');
    finish();
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value);
    expect(rest).toBe('data: last\n\n');
  });

  it('rejects a body cut off before its end, and one stalled past the signal with its reason', async () => {
    routes.set('/cut', (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"partial":');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    await expect(nodeFetch(`${base}/cut`, {})).rejects.toThrow();
    routes.set('/stall', (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"slow":');
    });
    const reason = await nodeFetch(`${base}/stall`, { signal: AbortSignal.timeout(100) }).catch((e: unknown) => e);
    expect((reason as Error).name).toBe('TimeoutError');
    const mine = new AbortController();
    const pending = nodeFetch(`${base}/stall`, { signal: mine.signal });
    setTimeout(() => mine.abort(new Error('stopped by the caller')), 20);
    await expect(pending).rejects.toThrow('stopped by the caller');
  });

  it('refuses what it cannot send, before sending: another scheme, a body that is not a string, a signal already aborted', async () => {
    await expect(nodeFetch('ftp://127.0.0.1/x', {})).rejects.toThrow('ftp:');
    await expect(nodeFetch(`${base}/echo`, { method: 'POST', body: new Uint8Array(3) })).rejects.toThrow('string');
    await expect(nodeFetch(`${base}/echo`, { signal: AbortSignal.abort(new Error('already')) })).rejects.toThrow('already');
  });

  it('reuses a kept-alive socket for calls one after another', async () => {
    routes.set('/ok', (_req, _body, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    sockets.clear();
    for (let i = 0; i < 5; i++) await (await nodeFetch(`${base}/ok`, {})).json();
    expect(sockets.size).toBe(1);
  });

  it('lets one signal watch many calls at once without a listener-leak warning', async () => {
    routes.set('/ok', (_req, _body, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const shared = new AbortController().signal;
      await Promise.all(Array.from({ length: 20 }, () => nodeFetch(`${base}/ok`, { signal: shared }).then((r) => r.json())));
      await new Promise((r) => setImmediate(r));
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('does not hold a process open once its calls are answered (a CLI command exits)', async () => {
    const script = `import { nodeFetch } from './src/client/node-fetch.ts';
      const res = await nodeFetch(${JSON.stringify(`${base}/ok`)}, {});
      await res.json();
      await new Promise((r) => setTimeout(r, 50));
      console.log(JSON.stringify({ status: res.status, holding: process.getActiveResourcesInfo().filter((r) => r.startsWith('TCP')) }));`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => (out += String(c)));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(0);
    // the kept-alive socket is left idle but unreferenced: nothing keeps the event loop running
    expect(JSON.parse(out)).toEqual({ status: 200, holding: [] });
  }, 30_000);
});

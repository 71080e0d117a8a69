/**
 * The bad-input rules on the Node server, where a JSON body with a length is read
 * straight from the socket (src/http/bad-input.ts, `readIncoming`) and a chunked one
 * through the Fetch Request: both are held to the same rules, and a body read either
 * way reaches its route whole.
 */
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/http/bad-input.js';
import { openTestApp, type TestApp, TOKENS } from '../support/vault.js';

let t: TestApp;
let server: ServerType;
let port = 0;

beforeAll(async () => {
  t = await openTestApp();
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: t.http.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
  });
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await t?.close();
});

/** A POST over a socket: with its length in the headers, or chunked (no length). */
function post(path: string, body: string, framing: 'length' | 'chunked'): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${TOKENS.writer}`, 'content-type': 'application/json' };
    if (framing === 'length') headers['content-length'] = String(Buffer.byteLength(body));
    const req = httpRequest({ host: '127.0.0.1', port, path, method: 'POST', headers }, (res) => {
      let text = '';
      res.on('data', (c) => (text += String(c)));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) as Record<string, unknown> }));
    });
    req.on('error', reject);
    // chunked: the body in two writes, so it is not one piece either
    if (framing === 'chunked') {
      req.write(body.slice(0, 5));
      req.end(body.slice(5));
    } else req.end(body);
  });
}

describe.each(['length', 'chunked'] as const)('a JSON body sent with %s framing', (framing) => {
  it('reaches its route whole: the entry appended reads back as sent', async () => {
    const text = `by ${framing}: ünïcode and "quotes" ${'x'.repeat(3000)}`;
    const res = await post(`/v1/subjects/user:node-${framing}/entries`, JSON.stringify({ text, metadata: { n: 1 } }), framing);
    expect(res.status).toBe(201);
    const read = await t.app.log.get(res.json.entryId as string);
    expect(read.text).toBe(text);
    expect(read.metadata).toEqual({ n: 1 });
  });

  it('is refused with a problem naming it: a NUL in a string, JSON nested too deep, JSON that does not parse', async () => {
    const nul = await post(`/v1/subjects/user:node-${framing}/entries`, JSON.stringify({ text: 'a\u0000b' }), framing);
    expect(nul.status).toBe(400);
    expect(nul.json.code).toBe('validation_failed');
    expect(String(nul.json.detail)).toContain('body.text');
    const deep = await post(
      `/v1/subjects/user:node-${framing}/entries`,
      `{"text":"x","metadata":${'['.repeat(MAX_JSON_DEPTH + 1)}${']'.repeat(MAX_JSON_DEPTH + 1)}}`,
      framing,
    );
    expect(deep.status).toBe(400);
    expect(String(deep.json.detail)).toContain(`${MAX_JSON_DEPTH} levels`);
    const broken = await post(`/v1/subjects/user:node-${framing}/entries`, '{"text": "unterminated', framing);
    expect(broken.status).toBe(400);
    expect(broken.json.code).toBe('validation_failed');
  });
});

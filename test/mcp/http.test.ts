/**
 * The MCP server over Streamable HTTP (`POST /mcp` on `lethe serve`), driven by the SDK's own
 * `Client` and `StreamableHTTPClientTransport` against the real service (a child process on
 * PostgreSQL): the seven tools; the tools act with the caller's bearer token (a writer's
 * remember → recall finds it, its forget_subject is a tool error naming `forbidden`; an
 * eraser's succeeds); no token or an unknown one is 401 problem+json with its
 * WWW-Authenticate challenge before any MCP work; GET and DELETE are 405 (stateless).
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOOL_NAMES } from '../../src/mcp/server.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { CLI, type RunningService, startService } from '../support/process.js';
import { tempDir, testEnv, TOKENS } from '../support/vault.js';

const TIMEOUT = 60_000;
const tag = () => randomBytes(5).toString('hex');
const ERASURE_ID = /^ers_[A-Za-z0-9_-]{22}$/;
const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'lethe-test', version: '0.0.0' } },
};

let db: TestDatabase;
let dataDir: string;
let service: RunningService;
const clients: Client[] = [];

/** The SDK's client over Streamable HTTP to `/mcp`, with this Authorization header (none: no header). */
function transportFor(authorization?: string): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(new URL(`${service.url}/mcp`), {
    requestInit: authorization === undefined ? {} : { headers: { authorization } },
  });
}

async function connect(token: string): Promise<Client> {
  const client = new Client({ name: 'lethe-test', version: '0.0.0' });
  await client.connect(transportFor(`Bearer ${token}`));
  clients.push(client);
  return client;
}

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = tempDir();
  service = await startService(process.execPath, [...CLI, 'serve'], testEnv({ databaseUrl: db.url, dataDir, extra: { LETHE_ERASURE_POLL_MS: '100' } }));
}, 120_000);

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await service?.stop();
  await db?.drop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

function textOf(result: CallToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
}

/** A tool's answer, parsed (a tool error fails the test); no token is ever in it. */
async function call<T>(client: Client, name: string, args: Record<string, unknown>): Promise<T> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = textOf(result);
  expect(result.isError ?? false, text).toBe(false);
  for (const token of Object.values(TOKENS)) expect(text).not.toContain(token);
  return JSON.parse(text) as T;
}

/** A tool error's text (an answer that is not one fails the test). */
async function toolError(client: Client, name: string, args: Record<string, unknown>): Promise<string> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = textOf(result);
  expect(result.isError, text).toBe(true);
  for (const token of Object.values(TOKENS)) expect(text).not.toContain(token);
  return text;
}

/** A plain POST /mcp (the initialize request) with these headers. */
function post(headers: Record<string, string>): Promise<Response> {
  return fetch(`${service.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(INITIALIZE),
  });
}

describe('POST /mcp (Streamable HTTP, stateless)', () => {
  it('lists the seven tools', { timeout: TIMEOUT }, async () => {
    const client = await connect(TOKENS.writer);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...TOOL_NAMES].sort());
    expect(client.getServerVersion()).toMatchObject({ name: 'lethe', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
  });

  it("acts with the caller's token: a writer remembers and recalls, its forget_subject is forbidden; an eraser's is accepted", {
    timeout: 2 * TIMEOUT,
  }, async () => {
    const writer = await connect(TOKENS.writer);
    const s = `user:mcp-http-${tag()}`;
    const { entryId } = await call<{ entryId: string }>(writer, 'remember', { subject: s, text: 'Noor keeps bees in Cardiff.' });
    const { hits } = await call<{ hits: Array<{ entryId?: string; text: string }> }>(writer, 'recall', { query: 'bees in Cardiff', subject: s });
    expect(hits[0]).toMatchObject({ entryId, text: 'Noor keeps bees in Cardiff.' });

    expect(await toolError(writer, 'forget_subject', { subject: s })).toMatch(/^forbidden: .+ \(the service answered 403\)$/);
    expect(await toolError(writer, 'erasure_status', { erasureId: `ers_${'C'.repeat(22)}` })).toMatch(/^forbidden: /);
    // nothing was forgotten, and the writer goes on
    const page = await call<{ entries: Array<{ entryId: string }> }>(writer, 'list_memories', { subject: s });
    expect(page.entries.map((e) => e.entryId)).toEqual([entryId]);

    const eraser = await connect(TOKENS.eraser);
    const accepted = await call<{ erasureId: string; status: string }>(eraser, 'forget_subject', { subject: s, reason: 'asked to be forgotten' });
    expect(accepted.erasureId).toMatch(ERASURE_ID);
    expect(['accepted', 'pending', 'running', 'completed']).toContain(accepted.status);
    // an eraser's token is not a writer's: remember is forbidden to it
    expect(await toolError(eraser, 'remember', { subject: `user:mcp-http-${tag()}`, text: 'x' })).toMatch(/^forbidden: /);
    let status = '';
    for (let i = 0; i < 300 && !['completed', 'incomplete', 'failed'].includes(status); i++) {
      ({ status } = await call<{ status: string; reportUrl: string }>(eraser, 'erasure_status', { erasureId: accepted.erasureId }));
      if (status !== 'completed') await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe('completed');
    const { reportUrl } = await call<{ reportUrl: string }>(eraser, 'erasure_status', { erasureId: accepted.erasureId });
    expect(reportUrl).toBe(`${service.url}/v1/erasures/${accepted.erasureId}/report`);
    expect((await call<{ hits: unknown[] }>(writer, 'recall', { query: 'bees in Cardiff', subject: s })).hits).toEqual([]);
  });

  it('forget_subject with a progress token streams each step over the response and ends completed', { timeout: 2 * TIMEOUT }, async () => {
    const eraser = await connect(TOKENS.eraser);
    const writer = await connect(TOKENS.writer);
    const s = `user:mcp-http-follow-${tag()}`;
    await call(writer, 'remember', { subject: s, text: 'Omar parks on level 3.' });
    const progress: Progress[] = [];
    const result = (await eraser.callTool({ name: 'forget_subject', arguments: { subject: s } }, undefined, {
      onprogress: (p) => progress.push(p),
      resetTimeoutOnProgress: true,
      timeout: TIMEOUT,
    })) as CallToolResult;
    const text = textOf(result);
    expect(result.isError ?? false, text).toBe(false);
    expect(JSON.parse(text)).toMatchObject({ erasureId: expect.stringMatching(ERASURE_ID), status: 'completed', class: 'A' });
    expect(progress.length).toBeGreaterThan(3);
    expect(progress.map((p) => p.progress)).toEqual(progress.map((_, i) => i + 1));
    expect(progress.map((p) => p.message).join('\n')).toMatch(/destroy done/);
  });

  it('no token, or one the service does not know: the transport fails with 401 before any MCP work', { timeout: TIMEOUT }, async () => {
    for (const authorization of [undefined, 'Bearer not-a-known-token-0001', `Basic ${TOKENS.writer}`]) {
      const client = new Client({ name: 'lethe-test', version: '0.0.0' });
      await expect(client.connect(transportFor(authorization)), String(authorization)).rejects.toMatchObject({ code: 401 });
      await client.close().catch(() => undefined);
    }
    for (const headers of [{}, { authorization: 'Bearer not-a-known-token-0001' }] as Array<Record<string, string>>) {
      const res = await post(headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await res.json()).toMatchObject({ status: 401, code: 'unauthorized' });
    }
  });

  it('any role may open it; GET and DELETE are 405 (no sessions); a malformed body is 400', { timeout: TIMEOUT }, async () => {
    for (const token of [TOKENS.backup, TOKENS.approver, TOKENS.admin]) {
      const res = await post({ authorization: `Bearer ${token}` });
      expect(res.status).toBe(200);
      expect(res.headers.get('mcp-session-id')).toBeNull();
      const text = await res.text();
      expect(text).toContain('"serverInfo"');
      for (const t of Object.values(TOKENS)) expect(text).not.toContain(t);
    }
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${service.url}/mcp`, { method, headers: { authorization: `Bearer ${TOKENS.writer}`, accept: 'text/event-stream' } });
      expect(res.status, method).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      await res.body?.cancel();
    }
    const bad = await fetch(`${service.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKENS.writer}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{"jsonrpc":',
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 'validation_failed' });
  });
});

/**
 * `lethe mcp` as a child process, driven by the MCP SDK's own `Client` over stdio, against
 * the real service (itself a child process: `lethe serve` on PostgreSQL): the seven tools
 * listed with their input schemas; remember → recall finds it → list_memories shows it →
 * forget_memory's erasure completes → recall no longer finds it; forget_subject followed to
 * `completed` with progress notifications; its certificate verifies against the service's
 * keys; a missing or refused role is a tool error and the session goes on; bad arguments
 * are named. No token is ever in an answer.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Lethe } from '../../src/client/lethe.js';
import { PAGE_LIMIT_MAX } from '../../src/http/cursor.js';
import { MCP_LIMITS, TOOL_NAMES } from '../../src/mcp/server.js';
import { MAX_SEARCH_K, MAX_SEARCH_SUBJECTS } from '../../src/search/service.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { CLI, type RunningService, runCli, startService } from '../support/process.js';
import { tempDir, testEnv, TOKENS } from '../support/vault.js';

const TIMEOUT = 60_000;
const tag = () => randomBytes(5).toString('hex');
const ENTRY_ID = /^entry_[A-Za-z0-9_-]{22}$/;
const ERASURE_ID = /^ers_[A-Za-z0-9_-]{22}$/;

let db: TestDatabase;
let dataDir: string;
let service: RunningService;
/** Sessions opened by the tests, closed at the end. */
const sessions: Array<{ client: Client; stderr: () => string }> = [];
/** The session with the writer's and the eraser's tokens. */
let mcp: Client;

/** `lethe mcp` with these tokens, connected with the SDK's client over stdio. */
async function connect(tokens: string): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...CLI, 'mcp'],
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', LETHE_URL: service.url, LETHE_TOKENS: tokens },
    cwd: process.cwd(),
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const client = new Client({ name: 'lethe-test', version: '0.0.0' });
  await client.connect(transport);
  const session = { client, stderr: () => err };
  sessions.push(session);
  return session;
}

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = tempDir();
  service = await startService(process.execPath, [...CLI, 'serve'], testEnv({ databaseUrl: db.url, dataDir, extra: { LETHE_ERASURE_POLL_MS: '100' } }));
  mcp = (await connect(`writer=${TOKENS.writer},eraser=${TOKENS.eraser}`)).client;
}, 120_000);

afterAll(async () => {
  for (const s of sessions) await s.client.close().catch(() => undefined);
  await service?.stop();
  await db?.drop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** A tool's answer, its text parsed (a tool error fails the test, with its text). */
async function call<T>(client: Client, name: string, args: Record<string, unknown>): Promise<T> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  expect(result.isError ?? false, text).toBe(false);
  expect(text).not.toContain(TOKENS.writer);
  expect(text).not.toContain(TOKENS.eraser);
  expect(JSON.parse(text)).toEqual(result.structuredContent);
  return JSON.parse(text) as T;
}

/** A tool error's text (an answer that is not one fails the test). */
async function toolError(client: Client, name: string, args: Record<string, unknown>): Promise<string> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  expect(result.isError, text).toBe(true);
  for (const token of Object.values(TOKENS)) expect(text).not.toContain(token);
  return text;
}

type Hit = { entryId?: string; subject: string | null; score: number; text: string };

/** Polls erasure_status until the erasure ends; its last answer. */
async function ended(erasureId: string): Promise<{ status: string; residuals: unknown[]; report: string; reportUrl: string }> {
  for (let i = 0; i < 300; i++) {
    const status = await call<{ status: string; residuals: unknown[]; report: string; reportUrl: string }>(mcp, 'erasure_status', { erasureId });
    if (['completed', 'incomplete', 'failed'].includes(status.status)) return status;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`erasure ${erasureId} did not end`);
}

describe('lethe mcp', () => {
  it('lists the seven tools, each with a description and an input schema', { timeout: TIMEOUT }, async () => {
    const { tools } = await mcp.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...TOOL_NAMES].sort());
    for (const t of tools) {
      expect(t.description, t.name).toMatch(/\w/);
      expect(t.inputSchema.type, t.name).toBe('object');
    }
    const schema = (name: string) => tools.find((t) => t.name === name)!.inputSchema;
    expect(schema('remember').required).toEqual(expect.arrayContaining(['subject', 'text']));
    expect(Object.keys(schema('recall').properties ?? {})).toEqual(expect.arrayContaining(['query', 'subject', 'subjects', 'limit']));
    expect(schema('recall').required).toEqual(['query']);
    expect(Object.keys(schema('list_memories').properties ?? {})).toEqual(expect.arrayContaining(['subject', 'limit', 'cursor']));
    expect(schema('forget_memory').required).toEqual(['entryId']);
    expect(schema('forget_subject').required).toEqual(['subject']);
    expect(schema('erasure_status').required).toEqual(['erasureId']);
    expect(schema('get_certificate').required).toEqual(['erasureId']);
  });

  it('remember → recall finds it → list_memories shows it → forget_memory completes → recall no longer finds it', { timeout: 3 * TIMEOUT }, async () => {
    const s = `user:mcp-${tag()}`;
    const { entryId } = await call<{ entryId: string }>(mcp, 'remember', {
      subject: s,
      text: 'Maya lives on Elm Road in Leeds.',
      metadata: { source: 'chat' },
    });
    expect(entryId).toMatch(ENTRY_ID);
    const kept = await call<{ entryId: string }>(mcp, 'remember', { subject: s, text: 'Maya drinks green tea.' });

    const { hits } = await call<{ hits: Hit[] }>(mcp, 'recall', { query: 'Elm Road in Leeds', subject: s, limit: 5 });
    expect(hits[0]).toMatchObject({ entryId, subject: s, text: 'Maya lives on Elm Road in Leeds.', score: expect.any(Number) });
    const many = await call<{ hits: Hit[] }>(mcp, 'recall', { query: 'Elm Road', subjects: [s, `user:other-${tag()}`] });
    expect(many.hits.map((h) => h.entryId)).toContain(entryId);

    const page = await call<{ entries: Array<{ entryId: string; text: string; metadata: unknown }>; nextCursor: string | null }>(mcp, 'list_memories', {
      subject: s,
      limit: 1,
    });
    expect(page.entries).toEqual([expect.objectContaining({ entryId, text: 'Maya lives on Elm Road in Leeds.', metadata: { source: 'chat' } })]);
    expect(page.nextCursor).toEqual(expect.any(String));
    const next = await call<{ entries: Array<{ entryId: string }>; nextCursor: string | null }>(mcp, 'list_memories', { subject: s, cursor: page.nextCursor });
    expect(next.entries.map((e) => e.entryId)).toEqual([kept.entryId]);
    expect(next.nextCursor).toBeNull();

    const forgotten = await call<{ erasureId: string; status: string }>(mcp, 'forget_memory', { entryId });
    expect(forgotten.erasureId).toMatch(ERASURE_ID);
    const status = await ended(forgotten.erasureId);
    expect(status.status).toBe('completed');
    expect(status.report).toBe(`/v1/erasures/${forgotten.erasureId}/report`);
    expect(status.reportUrl).toBe(`${service.url}${status.report}`);
    expect(status.residuals).toEqual(expect.any(Array));

    const after = await call<{ hits: Hit[] }>(mcp, 'recall', { query: 'Elm Road in Leeds', subject: s });
    expect(after.hits.map((h) => h.entryId)).not.toContain(entryId);
    const listed = await call<{ entries: Array<{ entryId: string }> }>(mcp, 'list_memories', { subject: s });
    expect(listed.entries.map((e) => e.entryId)).toEqual([kept.entryId]);
  });

  it('forget_subject with a progress token reports each step and ends completed; its certificate verifies against the service keys', {
    timeout: 3 * TIMEOUT,
  }, async () => {
    const s = `user:mcp-subject-${tag()}`;
    await call(mcp, 'remember', { subject: s, text: 'Omar parks on level 3.' });
    const progress: Progress[] = [];
    const result = (await mcp.callTool({ name: 'forget_subject', arguments: { subject: s, reason: 'asked to be forgotten' } }, undefined, {
      onprogress: (p) => progress.push(p),
      resetTimeoutOnProgress: true,
      timeout: 2 * TIMEOUT,
    })) as CallToolResult;
    const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
    expect(result.isError ?? false, text).toBe(false);
    const done = JSON.parse(text) as { erasureId: string; status: string; class: string };
    expect(done).toMatchObject({ erasureId: expect.stringMatching(ERASURE_ID), status: 'completed', class: 'A' });
    expect(progress.length).toBeGreaterThan(3);
    expect(progress.map((p) => p.progress)).toEqual(progress.map((_, i) => i + 1));
    expect(progress.map((p) => p.message).join('\n')).toMatch(/destroy done/);
    expect(text).not.toContain(s);

    const status = await call<{ status: string }>(mcp, 'erasure_status', { erasureId: done.erasureId });
    expect(status.status).toBe('completed');
    const certificate = await call<{ payload: Record<string, unknown>; signature: string; algorithm: string }>(mcp, 'get_certificate', {
      erasureId: done.erasureId,
    });
    expect(certificate.algorithm).toBe('Ed25519');
    const verdict = await new Lethe({ baseUrl: service.url, token: TOKENS.writer }).certificates.verify(certificate);
    expect(verdict.valid, JSON.stringify(verdict)).toBe(true);
    expect(
      await new Lethe({ baseUrl: service.url, token: TOKENS.writer }).certificates.verify({ ...certificate, payload: { ...certificate.payload, x: 1 } }),
    ).toMatchObject({
      valid: false,
    });

    // without a progress token it answers at once, with the erasure's id
    const s2 = `user:mcp-nowait-${tag()}`;
    await call(mcp, 'remember', { subject: s2, text: 'Lena cycles to work.' });
    const accepted = await call<{ erasureId: string; status: string }>(mcp, 'forget_subject', { subject: s2 });
    expect(accepted.erasureId).toMatch(ERASURE_ID);
    expect((await ended(accepted.erasureId)).status).toBe('completed');
  });

  it('a writer-only session: forget_subject is a tool error naming the eraser token; the session goes on; forget_memory forgets its own entry', {
    timeout: TIMEOUT,
  }, async () => {
    const { client, stderr } = await connect(`writer=${TOKENS.writer}`);
    const s = `user:mcp-writer-${tag()}`;
    await call(client, 'remember', { subject: s, text: 'Ida likes jazz.' });
    const text = await toolError(client, 'forget_subject', { subject: s });
    expect(text).toMatch(/^validation_failed: no token for the eraser role/);
    // the same session still works; forget_memory forgets the writer's own entry with the writer's token
    const { hits } = await call<{ hits: Hit[] }>(client, 'recall', { query: 'jazz', subject: s });
    expect(hits.map((h) => h.text)).toContain('Ida likes jazz.');
    const forgotten = await call<{ erasureId: string }>(client, 'forget_memory', { entryId: hits[0]!.entryId });
    expect(forgotten.erasureId).toMatch(ERASURE_ID);
    expect((await call<{ hits: Hit[] }>(client, 'recall', { query: 'jazz', subject: s })).hits).toEqual([]);
    expect(await toolError(client, 'erasure_status', { erasureId: forgotten.erasureId })).toMatch(/^validation_failed: no token for the eraser role/);
    expect((await ended(forgotten.erasureId)).status).toBe('completed');
    expect(stderr()).not.toContain(TOKENS.writer);
  });

  it('a token the service refuses for the role: forget_subject and erasure_status are tool errors naming forbidden', { timeout: TIMEOUT }, async () => {
    const { client } = await connect(`writer=${TOKENS.writer},eraser=${TOKENS.writer}`);
    const s = `user:mcp-forbidden-${tag()}`;
    const { entryId } = await call<{ entryId: string }>(client, 'remember', { subject: s, text: 'Ada reads at night.' });
    expect(await toolError(client, 'forget_subject', { subject: s })).toMatch(/^forbidden: .+ \(the service answered 403\)$/);
    expect(await toolError(client, 'erasure_status', { erasureId: `ers_${'C'.repeat(22)}` })).toMatch(/^forbidden: /);
    // nothing was forgotten, and the session goes on
    const page = await call<{ entries: Array<{ entryId: string }> }>(client, 'list_memories', { subject: s });
    expect(page.entries.map((e) => e.entryId)).toEqual([entryId]);
  });

  it('bad arguments are tool errors naming the argument; a service error names its code', { timeout: TIMEOUT }, async () => {
    expect(await toolError(mcp, 'recall', { subject: 'user:1' })).toMatch(/query/);
    expect(await toolError(mcp, 'recall', { query: 'tea' })).toMatch(/^validation_failed: give subject or subjects/);
    expect(await toolError(mcp, 'recall', { query: 'tea', subject: 'user 1' })).toMatch(/subject[\s\S]*1 to 200 characters/);
    expect(await toolError(mcp, 'recall', { query: 'tea', subject: 'user:1', limit: MCP_LIMITS.searchK + 1 })).toMatch(/limit/);
    expect(await toolError(mcp, 'remember', { subject: 'user:1' })).toMatch(/text/);
    const badId = await toolError(mcp, 'forget_memory', { entryId: 'not-an-id' });
    expect(badId).toMatch(/entryId/);
    expect(badId).toMatch(/entry_</);
    expect(await toolError(mcp, 'get_certificate', { erasureId: `ers_${'B'.repeat(22)}` })).toMatch(/^not_found: /);
    // the session goes on
    expect((await mcp.listTools()).tools).toHaveLength(TOOL_NAMES.length);
  });

  it('ends when its client closes stdin (exit 0), before the transport has to signal it', { timeout: TIMEOUT }, async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [...CLI, 'mcp'],
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', LETHE_URL: service.url, LETHE_TOKENS: `writer=${TOKENS.writer}` },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'lethe-test', version: '0.0.0' });
    await client.connect(transport);
    expect((await client.listTools()).tools).toHaveLength(TOOL_NAMES.length);
    const pid = transport.pid!;
    const started = Date.now();
    await client.close();
    // StdioClientTransport sends SIGTERM only after 2 s
    expect(Date.now() - started).toBeLessThan(1_900);
    expect(() => process.kill(pid, 0)).toThrow();
  });

  it('refuses to start without any token (exit 2 naming LETHE_TOKENS) or with a bad LETHE_URL', { timeout: TIMEOUT }, async () => {
    const none = await runCli(['mcp'], { LETHE_URL: service.url, LETHE_TOKENS: '' });
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^lethe: LETHE_TOKENS has no token/);
    expect(none.stdout).toBe('');
    const bad = await runCli(['mcp'], { LETHE_URL: 'ftp://x', LETHE_TOKENS: `writer=${TOKENS.writer}` });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^lethe: LETHE_URL must be an http\(s\):\/\/ URL/);
    const malformed = await runCli(['mcp'], { LETHE_URL: service.url, LETHE_TOKENS: 'writer' });
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toMatch(/^lethe: LETHE_TOKENS: /);
  });

  it('loads the client and src/mcp, not the service; other commands load neither the SDK nor src/mcp', { timeout: TIMEOUT }, async () => {
    const SERVICE_SIDE = /^src\/(app|db|http|vault|log|artifacts|search|vectors|backups|storage|keyprovider\/local)\b|^src\/erasure\/(engine|service)/;
    const traced = (args: string[]) =>
      new Promise<{ files: string[]; code: number | null }>((resolve) => {
        // stdin from /dev/null: the session ends at once
        const child = spawn(process.execPath, ['--import', './test/support/load-trace.mjs', ...CLI, ...args], {
          cwd: process.cwd(),
          env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', LETHE_URL: 'http://127.0.0.1:9', LETHE_TOKENS: `writer=${TOKENS.writer}` },
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        child.on('close', (code) =>
          resolve({ code, files: stderr.split('\n').flatMap((l) => (l.startsWith('lethe-loaded ') ? [l.slice('lethe-loaded '.length)] : [])) }),
        );
      });
    const mcpRun = await traced(['mcp']);
    expect(mcpRun.code).toBe(0);
    expect(mcpRun.files).toEqual(expect.arrayContaining(['src/mcp/server.ts', 'src/mcp/stdio.ts', 'src/client/lethe.ts']));
    // the frame and segment formats and the entry schema ship with the client (its LetheWriter)
    const shipped = new Set(['src/log/frame.ts', 'src/log/segment.ts', 'src/log/payload.ts']);
    expect(mcpRun.files.filter((f) => SERVICE_SIDE.test(f) && !shipped.has(f))).toEqual([]);
    const other = await traced(['memory', 'list', 'user:1']);
    expect(other.files).toContain('src/cli/mcp.ts');
    expect(other.files.filter((f) => f.startsWith('src/mcp/'))).toEqual([]);
  });

  it("holds its limits to the service's own", () => {
    expect(MCP_LIMITS).toEqual({ searchK: MAX_SEARCH_K, searchSubjects: MAX_SEARCH_SUBJECTS, pageLimit: PAGE_LIMIT_MAX });
  });
});

/**
 * A scripted MCP session: the MCP SDK's own client drives `lethe mcp` over stdio, as a
 * host (Claude Desktop, an IDE) would, against a running lethe service.
 *
 *   LETHE_TOKENS=admin=dev-admin-token,writer=dev-writer-token,eraser=dev-eraser-token npm start   # terminal 1
 *   npm run example:mcp                                                                             # terminal 2
 *
 * Two memories are remembered for one user and one for another, recalled, then the first
 * user is forgotten with a progress token (each progress notification printed as it comes),
 * the erasure's status read until it is completed, and its signed certificate fetched and
 * verified against the service's public keys (never the key the certificate carries). One
 * line per step; any failure exits 1 with a plain message.
 *
 * Environment (all optional): LETHE_URL (default http://127.0.0.1:8787) and LETHE_TOKENS
 * (default writer=dev-writer-token,eraser=dev-eraser-token), handed to `lethe mcp` as a
 * host's configuration would (examples/mcp/claude_desktop_config.json).
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Lethe, tokensFromEnv } from '../../src/client/index.js';

const baseUrl = process.env.LETHE_URL?.trim() || 'http://127.0.0.1:8787';
const tokens = process.env.LETHE_TOKENS?.trim() || 'writer=dev-writer-token,eraser=dev-eraser-token';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

let step = 0;
const say = (line: string): void => void process.stdout.write(`${String(++step).padStart(2)}. ${line}\n`);

class SessionError extends Error {}

/** A tool's answer, parsed; a tool error ends the session with its text. */
async function call<T>(client: Client, name: string, args: Record<string, unknown>, onProgress?: (message: string) => void): Promise<T> {
  const result = (await client.callTool(
    { name, arguments: args },
    undefined,
    onProgress ? { onprogress: (p) => onProgress(p.message ?? `${p.progress}`), resetTimeoutOnProgress: true, timeout: 120_000 } : undefined,
  )) as CallToolResult;
  const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  if (result.isError) throw new SessionError(`${name} answered a tool error: ${text}`);
  return JSON.parse(text) as T;
}

async function main(): Promise<void> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', 'src/cli/main.ts', 'mcp'],
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', LETHE_URL: baseUrl, LETHE_TOKENS: tokens },
    cwd: root,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const client = new Client({ name: 'lethe-example', version: '0.0.0' });
  try {
    try {
      await client.connect(transport);
    } catch (e) {
      throw new SessionError(`could not start \`lethe mcp\` (${e instanceof Error ? e.message : String(e)})${stderr ? `: ${stderr.trim()}` : ''}`);
    }
    const { tools } = await client.listTools();
    say(`connected to lethe mcp (for ${baseUrl}): ${tools.length} tools, ${tools.map((t) => t.name).join(', ')}`);

    // users of their own on each run: an erased subject cannot be written again
    const run = randomBytes(3).toString('hex');
    const a = `user:mcp-a-${run}`;
    const b = `user:mcp-b-${run}`;
    await call(client, 'remember', { subject: a, text: 'Prefers window seats and vegetarian meals on long flights.' });
    await call(client, 'remember', { subject: a, text: 'Her daughter Mila starts school in Ghent in September.' });
    await call(client, 'remember', { subject: b, text: 'Prefers aisle seats; allergic to peanuts.' });
    say(`remembered 2 memories for ${a} and 1 for ${b}`);

    const recalled = await call<{ hits: Array<{ subject: string | null; text: string }> }>(client, 'recall', {
      query: 'seat preference on flights',
      subjects: [a, b],
    });
    if (recalled.hits.length === 0) throw new SessionError('recall found nothing');
    say(`recall "seat preference on flights": ${recalled.hits.length} hit(s), first: "${recalled.hits[0]!.text}"`);

    let progress = 0;
    const forgotten = await call<{ erasureId: string; status: string; class?: string }>(
      client,
      'forget_subject',
      { subject: a, reason: 'the user asked to be forgotten' },
      (message) => void process.stdout.write(`      progress ${++progress}: ${message}\n`),
    );
    say(
      `forgotten ${a}: erasure ${forgotten.erasureId} ${forgotten.status}${forgotten.class ? ` (class ${forgotten.class})` : ''}, ${progress} progress notification(s)`,
    );

    let status = { status: forgotten.status };
    for (let i = 0; i < 600 && status.status !== 'completed'; i++) {
      status = await call<{ status: string }>(client, 'erasure_status', { erasureId: forgotten.erasureId });
      if (status.status === 'incomplete' || status.status === 'failed') throw new SessionError(`the erasure ended ${status.status}`);
      if (status.status !== 'completed') await new Promise((r) => setTimeout(r, 200));
    }
    if (status.status !== 'completed') throw new SessionError(`the erasure is still ${status.status}`);
    say(`erasure_status: ${status.status}`);

    const certificate = await call<{ algorithm: string }>(client, 'get_certificate', { erasureId: forgotten.erasureId });
    // the service's public keys (GET /v1/certificates/keys, no token), never the key the certificate carries
    const verdict = await new Lethe({ baseUrl, tokens: tokensFromEnv(tokens) }).certificates.verify(certificate);
    if (!verdict.valid) throw new SessionError(`the certificate does not verify: ${verdict.reason ?? 'unknown reason'}`);
    say(`certificate verified: ${certificate.algorithm}, signed by ${verdict.keyId ?? '?'}, one of the service's keys`);

    const kept = await call<{ hits: unknown[] }>(client, 'recall', { query: 'seat preference on flights', subject: b });
    say(`${b} keeps ${kept.hits.length} memory hit(s)`);
  } finally {
    await client.close().catch(() => undefined);
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`mcp session failed: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
});

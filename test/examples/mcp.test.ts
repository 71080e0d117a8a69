/**
 * examples/mcp/session.ts against a real `lethe serve` (the embedded default, PGlite and
 * local folders): the MCP SDK's client drives `lethe mcp` over stdio through every step.
 * Asserted from its output: exit 0, each step's line, the subject forgotten with progress
 * lines, the certificate verified; and a plain message with exit 1 when the token is refused.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, type RunningService, spawnProcess, startService } from '../support/process.js';
import { TOKENS, TOKENS_ENV, tempDir } from '../support/vault.js';

describe('examples/mcp/session.ts', () => {
  const dataDir = tempDir('lethe-mcp-example-');
  let service: RunningService | undefined;

  beforeAll(async () => {
    service = await startService(
      process.execPath,
      [...CLI, 'serve'],
      { LETHE_DATA_DIR: dataDir, LETHE_TOKENS: TOKENS_ENV, LETHE_ERASURE_POLL_MS: '100' },
      120_000,
    );
  }, 150_000);
  afterAll(async () => {
    await service?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const session = async (env: Record<string, string>) => {
    const run = spawnProcess(process.execPath, ['--import', 'tsx', 'examples/mcp/session.ts'], env);
    return { code: await run.exited, stdout: run.stdout(), stderr: run.stderr() };
  };

  it('remembers, recalls, forgets a subject with progress lines, reads its status and verifies its certificate', async () => {
    const run = await session({ LETHE_URL: service!.url, LETHE_TOKENS: `writer=${TOKENS.writer},eraser=${TOKENS.eraser}` });
    expect(run.code, `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`).toBe(0);
    const out = run.stdout;
    expect(out).toMatch(/^ 1\. connected to lethe mcp \(for http:\/\/127\.0\.0\.1:\d+\): 7 tools, /m);
    expect(out).toMatch(/remembered 2 memories for user:mcp-a-\w+ and 1 for user:mcp-b-\w+/);
    expect(out).toMatch(/recall "seat preference on flights": [1-9]\d* hit\(s\)/);
    expect(out).toMatch(/^ {6}progress 1: /m);
    expect(out).toMatch(/progress \d+: .*destroy done/);
    expect(out).toMatch(/forgotten user:mcp-a-\w+: erasure ers_\S+ completed \(class A\), [1-9]\d* progress notification\(s\)/);
    expect(out).toMatch(/erasure_status: completed/);
    expect(out).toMatch(/certificate verified: Ed25519, signed by csk_\S+, one of the service's keys/);
    expect(out).toMatch(/user:mcp-b-\w+ keeps [1-9]\d* memory hit\(s\)/);
    for (const token of Object.values(TOKENS)) expect(out + run.stderr).not.toContain(token);
  }, 300_000);

  it('fails with a plain message and exit 1 when the service refuses the token', async () => {
    const run = await session({ LETHE_URL: service!.url, LETHE_TOKENS: 'writer=not-a-token-of-this-vault,eraser=not-a-token-of-this-vault' });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^mcp session failed: remember answered a tool error: unauthorized/m);
    expect(run.stderr).not.toContain('not-a-token-of-this-vault');
  }, 120_000);
});

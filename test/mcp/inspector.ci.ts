/**
 * The MCP Inspector (`@modelcontextprotocol/inspector`, its CLI mode, pinned) lists
 * `lethe mcp`'s tools without errors (issue 34): the seven tools, the nine of
 * `--knowledge-graph`, and its schema check
 * reporting 0 errors. A CI step of its own (vitest.ci.config.ts): npx fetches the
 * Inspector from the registry the first time. `tools/list` needs no running service:
 * `lethe mcp` checks LETHE_URL and LETHE_TOKENS' form at start, the service only on a call.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { KNOWLEDGE_GRAPH_TOOL_NAMES } from '../../src/mcp/knowledge-graph.js';
import { TOOL_NAMES } from '../../src/mcp/server.js';

const INSPECTOR = '@modelcontextprotocol/inspector@2.12.0';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The Inspector's `tools/list` of `lethe mcp` with these arguments. */
function inspect(...args: string[]) {
  const env = ['-e', 'LETHE_URL=http://127.0.0.1:8787', '-e', 'LETHE_TOKENS=writer=dev-writer-token,eraser=dev-eraser-token'];
  return spawnSync(
    'npx',
    ['-y', INSPECTOR, '--cli', ...env, '--method', 'tools/list', '--', process.execPath, '--import', 'tsx', 'src/cli/main.ts', 'mcp', ...args],
    { cwd: root, encoding: 'utf8', timeout: 300_000, env: { ...process.env, npm_config_update_notifier: 'false' } },
  );
}

describe('the MCP Inspector against lethe mcp', () => {
  for (const [args, names] of [
    [[], TOOL_NAMES],
    [['--knowledge-graph'], KNOWLEDGE_GRAPH_TOOL_NAMES],
  ] as const) {
    it(`lists the ${names.length} tools of ${['lethe mcp', ...args].join(' ')}, its schema check finding no error`, () => {
      const run = inspect(...args);
      expect(run.status, run.stderr).toBe(0);
      const listed = JSON.parse(run.stdout) as { tools: Array<{ name: string; inputSchema: { type: string } }> };
      expect(listed.tools.map((t) => t.name)).toEqual([...names]);
      for (const tool of listed.tools) expect(tool.inputSchema.type).toBe('object');
      // the Inspector's schema check says nothing when it finds nothing, else counts its findings
      expect(run.stderr).not.toMatch(/Schema portability: [1-9]\d* error/);
      if (run.stderr.includes('Schema portability')) expect(run.stderr).toMatch(/Schema portability: 0 errors/);
    }, 320_000);
  }
});

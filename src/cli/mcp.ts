/**
 * `lethe mcp`: the MCP server (src/mcp) on stdin/stdout, for an agent's MCP client
 * (Claude Desktop, an IDE, the MCP Inspector). A client of the running service
 * (LETHE_URL, the roles' tokens from LETHE_TOKENS: writer for remember/recall/list,
 * eraser for the forget and erasure tools; without one, forget_memory forgets the writer's
 * own entries with the writer's token); with --knowledge-graph, the reference knowledge-graph
 * server's tools instead (src/mcp/knowledge-graph.ts); a missing token is a tool error, not a refusal to
 * start, unless LETHE_TOKENS holds none at all (exit 2). The SDK and the
 * server load on first use, so other commands start without them.
 */
import type { Command } from 'commander';
import { tokensFromEnv } from '../client/roles.js';
import { isLetheError } from '../errors.js';
import { clientTls, ExitError } from './shared.js';

export function addMcp(program: Command): void {
  program
    .command('mcp')
    .description('Serve the memory tools to an MCP client on stdin/stdout (Model Context Protocol).')
    .option('--knowledge-graph', "serve the reference knowledge-graph memory server's nine tools instead, kept in lethe (erasable)")
    .action(async (options: { knowledgeGraph?: boolean }) => {
      const baseUrl = process.env.LETHE_URL?.trim() || 'http://127.0.0.1:8787';
      if (!/^https?:\/\/\S+$/.test(baseUrl)) throw new ExitError('LETHE_URL must be an http(s):// URL', 2);
      let tokens: ReturnType<typeof tokensFromEnv>;
      try {
        tokens = tokensFromEnv();
      } catch (e) {
        throw isLetheError(e) ? new ExitError(e.message, 2) : e;
      }
      if (Object.values(tokens).every((t) => t === undefined))
        throw new ExitError('LETHE_TOKENS has no token: set it to role=token pairs (writer=…,eraser=…), comma-separated', 2);
      const tls = clientTls();
      const [{ Lethe }, { serveStdio }] = await Promise.all([import('../client/lethe.js'), import('../mcp/stdio.js')]);
      const lethe = new Lethe({ baseUrl, tokens, ...(tls ? { tls } : {}) });
      // without an eraser (or admin) token, forget_memory forgets the writer's own entries with the writer's
      const forgetAs = tokens.eraser === undefined && tokens.admin === undefined && tokens.writer !== undefined ? 'writer' : 'eraser';
      await serveStdio(lethe, { version: program.version() ?? '0.0.0', forgetAs, toolSet: options.knowledgeGraph ? 'knowledge-graph' : 'memory' });
    });
}

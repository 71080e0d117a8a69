/**
 * The MCP server on this process's stdin and stdout (`lethe mcp`): JSON-RPC messages on
 * stdout and nothing else (logs, if any, go to stderr). Answers once the session ends:
 * the client closed stdin, or the transport closed; an erasure being followed then stops
 * being followed (it goes on in the service).
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Lethe } from '../client/lethe.js';
import { createMcpServer, type McpServerOptions } from './server.js';

export async function serveStdio(lethe: Lethe, options: Omit<McpServerOptions, 'signal'>): Promise<void> {
  const session = new AbortController();
  const server = createMcpServer(lethe, { ...options, signal: session.signal });
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = () => resolve();
  });
  const end = () => {
    session.abort(new Error('the MCP session ended'));
    void server.close();
  };
  process.stdin.once('end', end);
  process.stdin.once('close', end);
  await server.connect(new StdioServerTransport());
  await closed;
  session.abort(new Error('the MCP session ended'));
  process.stdin.off('end', end).off('close', end);
}

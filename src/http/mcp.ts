/**
 * `POST /mcp` (the memory tools) and `POST /mcp/knowledge-graph` (the knowledge-graph tools):
 * the MCP server over Streamable HTTP (src/mcp/http.ts), mounted only when the
 * composition root hands it in (`lethe serve`; http does not import the client it is built
 * on). Any role may open it; the bearer token is checked here, before any MCP work (401
 * problem+json with its WWW-Authenticate challenge), and the handler acts with that same
 * token, so every tool call meets its own route's role check. Not in the OpenAPI document
 * (JSON-RPC, not a REST operation): docs/api.md lists it.
 */
import type { OpenAPIHono } from '@hono/zod-openapi';
import { ROLES, type Role } from '../config/index.js';
import { type AuthEnv, authorize, presentedToken, type TokenStore } from './auth.js';
import { problem } from './problem.js';

export const MCP_PATH = '/mcp';
/** The knowledge-graph tool set (the reference memory server's tools, kept in lethe), with the same auth. */
export const MCP_KNOWLEDGE_GRAPH_PATH = '/mcp/knowledge-graph';

/** What answers a POST /mcp: the request, its parsed body, the caller's (accepted) token and role, and the tool set its path serves. */
export type McpHandler = (call: { request: Request; body: unknown; token: string; role: Role; toolSet: 'memory' | 'knowledge-graph' }) => Promise<Response>;

export function registerMcpRoute(app: OpenAPIHono<AuthEnv>, tokens: TokenStore, handle: McpHandler): void {
  registerPath(app, tokens, handle, MCP_PATH, 'memory');
  registerPath(app, tokens, handle, MCP_KNOWLEDGE_GRAPH_PATH, 'knowledge-graph');
}

function registerPath(app: OpenAPIHono<AuthEnv>, tokens: TokenStore, handle: McpHandler, path: string, toolSet: 'memory' | 'knowledge-graph'): void {
  app.post(path, authorize(tokens, ...ROLES), async (c) => {
    const token = presentedToken(c);
    if (token === undefined) return problem(c, 'unauthorized', 'a valid bearer token is required');
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return problem(c, 'validation_failed', 'body: malformed JSON (a JSON-RPC message or batch)');
    }
    return handle({ request: c.req.raw, body, token, role: c.get('role'), toolSet });
  });
}

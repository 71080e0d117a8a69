/**
 * `POST /mcp`: the MCP server over Streamable HTTP (src/mcp/http.ts), mounted only when the
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

/** What answers a POST /mcp: the request, its parsed body, and the caller's (accepted) token and role. */
export type McpHandler = (call: { request: Request; body: unknown; token: string; role: Role }) => Promise<Response>;

export function registerMcpRoute(app: OpenAPIHono<AuthEnv>, tokens: TokenStore, handle: McpHandler): void {
  app.post(MCP_PATH, authorize(tokens, ...ROLES), async (c) => {
    const token = presentedToken(c);
    if (token === undefined) return problem(c, 'unauthorized', 'a valid bearer token is required');
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return problem(c, 'validation_failed', 'body: malformed JSON (a JSON-RPC message or batch)');
    }
    return handle({ request: c.req.raw, body, token, role: c.get('role') });
  });
}

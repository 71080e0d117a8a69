/**
 * The MCP server over Streamable HTTP, stateless (`POST /mcp` on `lethe serve`, and its
 * knowledge-graph tool set at `POST /mcp/knowledge-graph`): each POST
 * gets its own `McpServer` and transport (no session id, nothing kept between requests), and
 * its tools act with the CALLER's bearer token: the `Lethe` client is built per request with
 * that token, and its requests go to the service's own routes (in process: `fetch`), through
 * their auth and role checks like any other call. The token lives as long as the request; no
 * token is stored, answered or logged here.
 *
 * The body arrives parsed (the service read it through its body limit and bad-input checks).
 * A request's answer is an SSE stream that ends with it (so a followed forget_subject's
 * progress reaches the client); a notification's is 202. GET and DELETE (a standalone stream,
 * a session to end) are not taken: there are no sessions.
 */
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Fetch } from '../client/http.js';
import { Lethe } from '../client/lethe.js';
import { createMcpServer, type McpToolSet } from './server.js';

export interface McpHttpRequest {
  /** The request as it came (its headers: Accept, Content-Type, the protocol version). */
  readonly request: Request;
  /** Its body, parsed. */
  readonly body: unknown;
  /** The caller's bearer token, already accepted by the service: every tool call carries it. */
  readonly token: string;
  /** forget_memory forgets as a writer (only the entries its token wrote) or an eraser. */
  readonly forgetAs: 'eraser' | 'writer';
  /** Which tools: the memory tools (`POST /mcp`, the default) or the knowledge-graph tools (`POST /mcp/knowledge-graph`). */
  readonly toolSet?: McpToolSet;
}

export interface McpHttpOptions {
  /** The service's address, as its answers name it (an erasure's reportUrl). */
  readonly baseUrl: string;
  /** Sends the client's requests to the service itself (its app, in process). */
  readonly fetch: Fetch;
  /** The version the server says it is. */
  readonly version: string;
}

/** Answers one POST of the MCP Streamable HTTP transport, acting with the caller's token. */
export async function handleMcpRequest(call: McpHttpRequest, options: McpHttpOptions): Promise<Response> {
  const lethe = new Lethe({ baseUrl: options.baseUrl, token: call.token, fetch: options.fetch });
  // the request's signal ends when its client goes: an erasure being followed stops being followed
  const server = createMcpServer(lethe, {
    version: options.version,
    forgetAs: call.forgetAs,
    signal: call.request.signal,
    ...(call.toolSet ? { toolSet: call.toolSet } : {}),
  });
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  call.request.signal.addEventListener('abort', () => void server.close().catch(() => undefined), { once: true });
  await server.connect(transport);
  return transport.handleRequest(call.request, { parsedBody: call.body });
}

/**
 * The lethe MCP server: an agent's memory as Model Context Protocol tools, over a running
 * lethe service through the TypeScript client (`Lethe`). Each tool is one call (or a
 * followed erasure) of the client, with the role its route needs (remember, recall,
 * list_memories: writer; forget_memory, forget_subject, erasure_status, get_certificate:
 * eraser); the transport is the caller's (stdio.ts: `lethe mcp`). `toolSet: 'knowledge-graph'`
 * serves the reference knowledge-graph server's tools instead (knowledge-graph.ts).
 *
 * A tool answers JSON, as text and as structured content. A failure is a tool error
 * (`isError`), never a broken session: the client's errors say their code and detail
 * (`forbidden: …`, `unavailable: …`), and arguments the input schema refuses are named
 * by the SDK's own validation. No token is ever put in an answer.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { Lethe } from '../client/lethe.js';
import { MAX_REASON_CHARS } from '../erasure/request.js';
import { LetheError } from '../errors.js';
import { ID_PATTERNS, SUBJECT_ID_PATTERN, SUBJECT_ID_RULE } from '../ids.js';
import { KNOWLEDGE_GRAPH_INSTRUCTIONS, registerKnowledgeGraphTools } from './knowledge-graph.js';
import { followErasure, tool } from './tool.js';

export { answer, describeFailure, tool } from './tool.js';

/** The service's bounds on what a tool asks (POST /v1/search's k and subjects, a page of entries). */
export const MCP_LIMITS = { searchK: 100, searchSubjects: 100, pageLimit: 1000 } as const;

/** The tools, in the order `tools/list` names them. */
export const TOOL_NAMES = ['remember', 'recall', 'list_memories', 'forget_memory', 'forget_subject', 'erasure_status', 'get_certificate'] as const;

const subject = z.string().regex(SUBJECT_ID_PATTERN, SUBJECT_ID_RULE).describe('whose memory: a subject id such as user:42 (1-200 of A-Z a-z 0-9 . _ : @ + -)');
const entryId = z
  .string()
  .regex(ID_PATTERNS.entry, 'must be entry_<22 base64url characters>')
  .describe('an entry id (entry_…), as remember or recall answered it');
const erasureId = z
  .string()
  .regex(ID_PATTERNS.ers, 'must be ers_<22 base64url characters>')
  .describe('an erasure id (ers_…), as forget_memory or forget_subject answered it');

/** Where an erasure's report is, on the service (GET, eraser role: the self-contained HTML). */
export const reportPath = (id: string): string => `/v1/erasures/${encodeURIComponent(id)}/report`;

export interface McpServerOptions {
  /** The version the server says it is (`lethe --version`). */
  readonly version: string;
  /**
   * Whose token forget_memory forgets with: the eraser's (any entry; the default), or the
   * writer's (only the entries that token wrote: `DELETE /v1/entries/{id}` takes either),
   * for a session given no eraser token.
   */
  readonly forgetAs?: 'eraser' | 'writer';
  /** Aborted when the session ends: a followed erasure stops being followed (it goes on in the service). */
  readonly signal?: AbortSignal;
  /**
   * Which tools: lethe's memory tools (the default), or the knowledge-graph tools of the
   * reference memory server (`@modelcontextprotocol/server-memory`) mapped onto lethe (knowledge-graph.ts).
   */
  readonly toolSet?: McpToolSet;
}

/** The tool sets a server can serve. */
export const MCP_TOOL_SETS = ['memory', 'knowledge-graph'] as const;
export type McpToolSet = (typeof MCP_TOOL_SETS)[number];

/** The MCP server of `lethe`'s memory tools (or its knowledge-graph tools) over `lethe` (connect it to a transport). */
export function createMcpServer(lethe: Lethe, options: McpServerOptions): McpServer {
  if (options.toolSet === 'knowledge-graph') {
    const server = new McpServer({ name: 'lethe-knowledge-graph', version: options.version }, { instructions: KNOWLEDGE_GRAPH_INSTRUCTIONS });
    registerKnowledgeGraphTools(server, lethe, options);
    return server;
  }
  const server = new McpServer(
    { name: 'lethe', version: options.version },
    {
      instructions:
        "Long-term memory with provable erasure. remember stores a memory of a subject (a person or an agent's user); recall searches a subject's memories; list_memories pages through them; forget_memory and forget_subject erase for good (an erasure runs in the service: follow it with erasure_status; get_certificate answers its signed certificate).",
    },
  );

  registerMemoryTools(server, lethe);
  registerErasureTools(server, lethe, options);
  return server;
}

/** remember, recall, list_memories: the memories themselves (writer role). */
function registerMemoryTools(server: McpServer, lethe: Lethe): void {
  server.registerTool(
    'remember',
    {
      title: 'Remember',
      description: "Store a memory (a piece of text) of a subject. Answers its entryId; the text is sealed under the subject's key.",
      inputSchema: {
        subject,
        text: z.string().min(1).describe('the memory, as plain text'),
        metadata: z.record(z.string(), z.unknown()).optional().describe('optional JSON fields kept with the memory (e.g. a source or a time)'),
      },
    },
    (args) =>
      tool(async () => {
        const { entryId: id, seq } = await lethe.entries.append(args.subject, { text: args.text, ...(args.metadata ? { metadata: args.metadata } : {}) });
        return { entryId: id, seq };
      }),
  );

  server.registerTool(
    'recall',
    {
      title: 'Recall',
      description: "Search a subject's memories (or several subjects') for a query; answers the nearest first, each with its entryId, subject, score and text.",
      inputSchema: {
        query: z.string().min(1).describe('what to look for, in words'),
        subject: subject.optional().describe('the subject whose memories to search (or give subjects)'),
        subjects: z.array(subject).min(1).max(MCP_LIMITS.searchSubjects).optional().describe('several subjects to search at once (instead of subject)'),
        limit: z.number().int().min(1).max(MCP_LIMITS.searchK).optional().describe(`how many hits, 1 to ${MCP_LIMITS.searchK} (default 10)`),
      },
    },
    (args) =>
      tool(async () => {
        if ((args.subject === undefined) === (args.subjects === undefined)) throw new LetheError('validation_failed', 'give subject or subjects (one of them)');
        const scope = args.subject !== undefined ? { subject: args.subject } : { subjects: args.subjects! };
        const { hits } = await lethe.search(args.query, { ...scope, ...(args.limit !== undefined ? { k: args.limit } : {}) });
        return {
          hits: hits.map((h) => ({
            ...(h.type === 'entry' ? { entryId: h.id } : { artifactId: h.id }),
            type: h.type,
            subject: h.subject,
            score: h.score,
            text: h.text,
            kind: h.kind,
            metadata: h.metadata,
            createdAt: h.createdAt,
          })),
        };
      }),
  );

  server.registerTool(
    'list_memories',
    {
      title: 'List memories',
      description: "One page of a subject's memories, oldest first; pass nextCursor as cursor for the next page (null: the last).",
      inputSchema: {
        subject,
        limit: z.number().int().min(1).max(MCP_LIMITS.pageLimit).optional().describe(`memories per page, 1 to ${MCP_LIMITS.pageLimit} (default 100)`),
        cursor: z.string().min(1).optional().describe('the nextCursor of the previous page'),
      },
    },
    (args) =>
      tool(async () => {
        const page = await lethe.entries.page(args.subject, {
          ...(args.limit !== undefined ? { limit: args.limit } : {}),
          ...(args.cursor !== undefined ? { cursor: args.cursor } : {}),
        });
        return { entries: page.entries, nextCursor: page.nextCursor };
      }),
  );
}

/** forget_memory, forget_subject, erasure_status, get_certificate: erasures (eraser role). */
function registerErasureTools(server: McpServer, lethe: Lethe, { forgetAs = 'eraser', signal }: McpServerOptions): void {
  server.registerTool(
    'forget_memory',
    {
      title: 'Forget a memory',
      description:
        'Erase one memory for good: from the answer on it is gone from recall and list_memories. Answers the erasureId; follow it with erasure_status.',
      inputSchema: { entryId },
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    (args) =>
      tool(async () => {
        const { erasureId: id, status } = await (forgetAs === 'writer' ? lethe.entries.forget(args.entryId) : lethe.forget(args.entryId));
        return { erasureId: id, status };
      }),
  );

  server.registerTool(
    'forget_subject',
    {
      title: 'Forget a subject',
      description:
        'Erase everything of a subject for good (eraser role): its key is destroyed and a signed certificate issued. Answers the erasureId and status; with a progress token it follows the erasure to its end, reporting each step.',
      inputSchema: { subject, reason: z.string().min(1).max(MAX_REASON_CHARS).optional().describe('why (kept with the erasure; never personal data)') },
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    (args, extra) =>
      tool(async () => {
        const accepted = await lethe.erase({ subject: args.subject, ...(args.reason !== undefined ? { reason: args.reason } : {}) });
        if (extra._meta?.progressToken === undefined) return { erasureId: accepted.erasureId, status: accepted.status };
        const view = await followErasure(lethe, accepted.erasureId, extra, signal);
        return { erasureId: view.erasureId, status: view.status, ...(view.class ? { class: view.class } : {}), residuals: view.residuals.length };
      }),
  );

  server.registerTool(
    'erasure_status',
    {
      title: 'Erasure status',
      description:
        "An erasure's state (pending, running, completed, incomplete, failed), its residuals (what could not be erased and until when), and where its report is.",
      inputSchema: { erasureId },
      annotations: { readOnlyHint: true },
    },
    (args) =>
      tool(async () => {
        const view = await lethe.erasures.get(args.erasureId);
        return {
          erasureId: view.erasureId,
          status: view.status,
          ...(view.class ? { class: view.class } : {}),
          ...(view.scope ? { scope: view.scope } : {}),
          ...(view.finishedAt ? { finishedAt: view.finishedAt } : {}),
          residuals: view.residuals,
          ...(view.certificateState ? { certificateState: view.certificateState } : {}),
          certificate: view.certificate !== undefined,
          report: reportPath(view.erasureId),
          reportUrl: `${lethe.baseUrl}${reportPath(view.erasureId)}`,
        };
      }),
  );

  server.registerTool(
    'get_certificate',
    {
      title: 'Get certificate',
      description:
        "An erasure's signed certificate (Ed25519 over canonical JSON), as JSON: verify it against the vault's keys (GET /v1/certificates/keys). A conflict error while the erasure has none yet.",
      inputSchema: { erasureId },
      annotations: { readOnlyHint: true },
    },
    (args) => tool(async () => ({ ...(await lethe.certificates.get(args.erasureId)) })),
  );
}

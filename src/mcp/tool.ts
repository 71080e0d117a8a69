/**
 * What every tool of the MCP server shares (server.ts, knowledge-graph.ts): its answer as
 * JSON text and structured content, a failure as a tool error naming its code (never a
 * broken session), and an erasure followed to its end with progress notifications.
 */
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { type Erasure, transitionLine } from '../client/erasures.js';
import { ServiceError, UnreachableError } from '../client/http.js';
import type { Lethe } from '../client/lethe.js';
import { isLetheError } from '../errors.js';

/** A tool's answer: the value as structured content, and as text (its JSON, unless `text` is given). */
export function answer(value: Record<string, unknown>, text: string = JSON.stringify(value, null, 2)): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: value };
}

/** A failure as the caller reads it: `code: detail`, the service's problem when it answered one. */
export function describeFailure(e: unknown): string {
  if (e instanceof ServiceError) return `${e.code}: ${e.problem?.detail ?? e.detail} (the service answered ${e.status})`;
  if (e instanceof UnreachableError) return `${e.code}: the lethe service at ${e.baseUrl} did not answer (${e.reason})`;
  if (isLetheError(e)) return `${e.code}: ${e.message}`;
  return `internal: ${e instanceof Error ? e.message : String(e)}`;
}

/** Runs a tool's work: its value as the answer (`present`: `answer` unless given), any failure as a tool error naming its code. */
export async function tool<T extends Record<string, unknown>>(
  work: () => Promise<T>,
  present: (value: T) => CallToolResult = (value) => answer(value),
): Promise<CallToolResult> {
  try {
    return present(await work());
  } catch (e) {
    return { content: [{ type: 'text', text: describeFailure(e) }], isError: true };
  }
}

/** A tool call's context, as the SDK hands it to the tool. */
export type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/**
 * Follows an erasure to its end; when the call carries a progress token, one progress
 * notification per transition (`counter` numbers them: one counter for all the erasures a
 * call follows keeps its progress increasing). Stops following (the erasure goes on in the
 * service) when the call is cancelled or `session` ends.
 */
export async function followErasure(lethe: Lethe, erasureId: string, extra: ToolExtra, session?: AbortSignal, counter = { progress: 0 }): Promise<Erasure> {
  const progressToken = extra._meta?.progressToken;
  return lethe.erasures.wait(erasureId, {
    signal: session ? AbortSignal.any([extra.signal, session]) : extra.signal,
    onStep: (t) => {
      if (progressToken === undefined) return;
      const progress = ++counter.progress;
      void extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress, message: transitionLine(t) } }).catch(() => undefined);
    },
  });
}

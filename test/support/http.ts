/**
 * Checks of lethe's HTTP answers: a JSON body with the expected status, or a problem
 * document (application/problem+json, RFC 9457) with the expected status and code.
 * Both take a Response or the promise of one (app.request, fetch or TestApp.call).
 */
import { expect } from 'vitest';

/** A problem document, as src/http/problem.ts writes every refusal. */
export interface Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly code: string;
}

/** A checked refusal: the parsed problem, its detail, and the body as it was sent. */
export interface ProblemReply {
  readonly problem: Problem;
  readonly detail: string;
  readonly text: string;
}

/** The message of a failed status check: the body, after `what` (or the URL) when there is one. */
function shown(res: Response, text: string, what: string | undefined): string {
  const label = what ?? res.url;
  return label ? `${label}: ${text}` : text;
}

/** The JSON body of a reply that must have `status`; the failure message shows what came instead. */
export async function ok<T>(reply: Response | Promise<Response>, status: number, what?: string): Promise<T> {
  const res = await reply;
  const text = await res.text();
  expect(res.status, shown(res, text, what)).toBe(status);
  expect(res.headers.get('content-type'), what).toMatch(/^application\/json/);
  return JSON.parse(text) as T;
}

/** A refusal that must have `status` and `code`, as a complete problem+json document. */
export async function expectProblem(reply: Response | Promise<Response>, status: number, code: string, what?: string): Promise<ProblemReply> {
  const res = await reply;
  const text = await res.text();
  expect(res.status, shown(res, text, what)).toBe(status);
  expect(res.headers.get('content-type'), what).toMatch(/^application\/problem\+json/);
  const problem = JSON.parse(text) as Problem;
  expect(problem, what).toMatchObject({ type: expect.any(String), title: expect.any(String), status, detail: expect.any(String), code });
  return { problem, detail: problem.detail, text };
}

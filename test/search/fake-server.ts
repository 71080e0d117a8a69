/**
 * A throwaway HTTP server on 127.0.0.1 (port 0) standing in for an OpenAI-compatible
 * endpoint: it records every request and answers with whatever the test's handler
 * returns (or never answers, when the handler says so).
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: unknown;
}

/** What the server answers: a status and a JSON (or raw string) body, or 'hang' to never answer. */
export type FakeAnswer = { status: number; body: unknown; raw?: boolean } | 'hang';

export interface FakeServer {
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Replaces the handler (the default answers 500). */
  answer(handler: (request: RecordedRequest) => FakeAnswer): void;
  close(): Promise<void>;
}

export async function startFakeServer(): Promise<FakeServer> {
  const requests: RecordedRequest[] = [];
  let handler: (request: RecordedRequest) => FakeAnswer = () => ({ status: 500, body: { error: 'no handler' } });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // keep the raw text
      }
      const recorded: RecordedRequest = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
      requests.push(recorded);
      const answer = handler(recorded);
      if (answer === 'hang') return;
      const payload = answer.raw ? String(answer.body) : JSON.stringify(answer.body);
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(payload);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    answer(h) {
      handler = h;
    },
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Runs `fn` and returns what it threw (fails the test when it does not throw). */
export async function thrown(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected the call to throw');
}

/** Every message in an error's cause chain, joined (to check none echoes a secret). */
export function allMessages(e: unknown): string {
  const out: string[] = [];
  let at: unknown = e;
  for (let depth = 0; at !== undefined && at !== null && depth < 10; depth++) {
    out.push(at instanceof Error ? `${at.name}: ${at.message}` : String(at));
    at = at instanceof Error ? at.cause : undefined;
  }
  return out.join(' | ');
}

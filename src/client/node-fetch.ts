/**
 * The client's default transport: a request over node:http(s) on a keep-alive agent,
 * answered as a fetch `Response`. The global fetch cost a `LetheStore` call about 0.8 ms
 * more of the client's CPU on the 2-core machine (WHATWG requests, streams and abort
 * plumbing; docs/performance.md). An event stream or NDJSON answer streams; any other
 * is read whole before it is answered, so a timeout covers its body.
 */
import { defaultMaxListeners, getMaxListeners, setMaxListeners } from 'node:events';
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';

// below the service's keep-alive timeout (node's 5 s): an idle socket is closed here first
const FREE_SOCKET_MS = 4_000;
const AGENTS = {
  'http:': new http.Agent({ keepAlive: true, timeout: FREE_SOCKET_MS }),
  'https:': new https.Agent({ keepAlive: true, timeout: FREE_SOCKET_MS }),
} as const;
const STREAMED = /^\s*(text\/event-stream|application\/x-ndjson)\b/i;
const NULL_BODY_STATUS = new Set([204, 205, 304]);

// a request cut off is not sent again here: the service may have acted on it (the callers' retries carry idempotency)
export const nodeFetch = (url: string, init: RequestInit): Promise<Response> =>
  new Promise<Response>((resolve, reject) => {
    const target = new URL(url);
    const agent = target.protocol === 'http:' || target.protocol === 'https:' ? AGENTS[target.protocol] : undefined;
    if (!agent) return reject(new TypeError(`cannot send a request to a ${target.protocol} URL`));
    const body = init.body ?? undefined;
    if (body !== undefined && typeof body !== 'string') return reject(new TypeError('the request body must be a string'));
    const signal = init.signal ?? undefined;
    if (signal?.aborted) return reject(signal.reason);
    const headers = plainHeaders(init.headers);
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    const method = init.method ?? 'GET';
    const request = (target.protocol === 'https:' ? https : http).request(target, { method, headers, agent });
    let response: http.IncomingMessage | undefined;
    const onAbort = () => {
      const reason: unknown = signal!.reason;
      request.destroy(reason instanceof Error ? reason : undefined);
      response?.destroy(reason instanceof Error ? reason : undefined);
      reject(reason);
    };
    // one caller's signal may watch many calls at once: as the global fetch (undici) does, no leak warning past ten
    if (signal && getMaxListeners(signal) === defaultMaxListeners) setMaxListeners(1500, signal);
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => signal?.removeEventListener('abort', onAbort);
    request.on('error', (e) => {
      if (response) return;
      done();
      if (signal?.aborted) return reject(signal.reason);
      reject(e);
    });
    request.on('response', (res) => {
      response = res;
      const status = res.statusCode ?? 0;
      const meta = { status, statusText: res.statusMessage ?? '', headers: headerPairs(res.rawHeaders) };
      if (status < 200 || status > 599) {
        res.destroy();
        done();
        return reject(new Error(`the service answered HTTP status ${status}`));
      }
      if (NULL_BODY_STATUS.has(status) || method === 'HEAD') {
        res.resume();
        done();
        return resolve(new Response(null, meta));
      }
      if (STREAMED.test(String(res.headers['content-type'] ?? ''))) {
        res.once('close', done);
        return resolve(new Response(Readable.toWeb(res) as ReadableStream<Uint8Array>, meta));
      }
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.once('end', () => {
        done();
        resolve(new Response(Buffer.concat(chunks), meta));
      });
      res.once('error', (e) => {
        done();
        reject(signal?.aborted ? signal.reason : e);
      });
      // closed before its end and without an error: an answer cut off is no answer
      res.once('close', () => {
        done();
        if (!res.complete) reject(new Error('the connection closed before the whole answer arrived'));
      });
    });
    request.end(body);
  });

function plainHeaders(init: RequestInit['headers']): Record<string, string> {
  if (init === undefined) return {};
  if (init instanceof Headers || Array.isArray(init)) return Object.fromEntries(new Headers(init));
  return { ...(init as Record<string, string>) };
}

function headerPairs(raw: readonly string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) pairs.push([raw[i]!, raw[i + 1]!]);
  return pairs;
}

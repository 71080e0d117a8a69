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

const utf8 = new TextDecoder();

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
        resolve(new BufferedResponse(Buffer.concat(chunks), meta) as unknown as Response);
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

// the DOM types declare a Response's body and methods as properties; they are accessors and methods on its prototype
const ResponseBase = Response as unknown as new (
  body: null,
  init: ResponseInit,
) => { readonly headers: Headers; readonly status: number; readonly statusText: string };

/**
 * A whole answer already read, as a `Response`: its body read from the buffer, with no
 * web stream unless one is asked for (`body`). Wrapping each answer in a stream cost a
 * `LetheStore` get about a quarter of the client's CPU (docs/performance.md).
 */
class BufferedResponse extends ResponseBase {
  readonly #bytes: Buffer;
  #used = false;
  #stream: ReadableStream<Uint8Array> | undefined;

  constructor(bytes: Buffer, init: ResponseInit) {
    super(null, init);
    this.#bytes = bytes;
  }

  /** The body as a stream, made on first ask; the body is then read through it. */
  get body(): ReadableStream<Uint8Array> {
    const bytes = this.#bytes;
    const read = this.#used;
    this.#stream ??= new ReadableStream<Uint8Array>({
      start(controller) {
        // read already: its buffer is zeroed, so the stream fails as a used fetch body does
        if (read) return controller.error(new TypeError('the body of this answer was read already'));
        if (bytes.length > 0) controller.enqueue(new Uint8Array(bytes));
        bytes.fill(0); // the stream holds the copy its reader takes
        controller.close();
      },
    });
    return this.#stream;
  }

  get bodyUsed(): boolean {
    return this.#used;
  }

  async text(): Promise<string> {
    return this.#consume((bytes) => utf8.decode(bytes));
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    return this.#consume((bytes) => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
  }

  async blob(): Promise<Blob> {
    return this.#consume((bytes) => new Blob([bytes], { type: this.headers.get('content-type') ?? '' }));
  }

  clone(): Response {
    if (this.#used || this.#stream) throw new TypeError('an answer whose body was read or streamed cannot be cloned');
    const init = { status: this.status, statusText: this.statusText, headers: this.headers };
    return new BufferedResponse(Buffer.from(this.#bytes), init) as unknown as Response;
  }

  /** `read` of the body, once; the buffer is zeroed after (an answer may carry a key: a lease's DEK). */
  async #consume<T>(read: (bytes: Uint8Array) => T): Promise<T> {
    if (this.#used) throw new TypeError('the body of this answer was read already');
    this.#used = true;
    const bytes = this.#stream ? new Uint8Array(await new Response(this.#stream).arrayBuffer()) : this.#bytes;
    try {
      return read(bytes);
    } finally {
      bytes.fill(0);
    }
  }
}

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

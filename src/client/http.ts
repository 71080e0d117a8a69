/**
 * The one HTTP caller of the lethe service, shared by the writer client and the CLI:
 * the base URL, the bearer token, JSON bodies, the `accept` header and an optional
 * timeout or AbortSignal; and the readers of what streams back (server-sent events,
 * NDJSON lines).
 *
 * Failures are typed, and both are LetheErrors:
 * - an answer that is not 2xx is a ServiceError: `code` is the problem's code when
 *   lethe knows it (else `unavailable`), with the HTTP `status` and the `detail`;
 * - no answer at all (refused, reset, timed out) is an UnreachableError (`unavailable`).
 * The token is never put in a message: it is checked before any request (a token
 * fetch would refuse could come back inside its error), and redacted from whatever
 * the service or the network says.
 *
 * With `tls` (a CA, and a client certificate for mutual TLS) calls go through undici's
 * fetch with an Agent holding those options, loaded on first use (`undici`, an optional
 * peer of the package); the server's certificate must then chain to that CA and name the
 * host. Verification is never turned off.
 */
import { ERROR_CODES, type ErrorCode, LetheError } from '../errors.js';
import { nodeFetch } from './node-fetch.js';

/** PEM text or bytes. */
export type Pem = string | Uint8Array;

/** How to verify the service (and be verified by it) over HTTPS. */
export interface TlsOptions {
  /** The CA certificate(s) the service's certificate must chain to, instead of the system's roots. */
  readonly ca?: Pem | readonly Pem[];
  /** A client certificate (PEM) for a service that requires one (LETHE_TLS_CLIENT_CA); with `key`. */
  readonly cert?: Pem;
  /** The client certificate's private key (PEM, unencrypted). */
  readonly key?: Pem;
}

export interface ServiceClientOptions {
  /** The service, e.g. http://127.0.0.1:8787 (trailing slashes are dropped). */
  readonly baseUrl: string;
  /** A bearer token: visible ASCII, no spaces (what the service accepts). */
  readonly token: string;
  /** Give up on a call after this long, its body included (default: never). */
  readonly timeoutMs?: number;
  /** A CA to verify an HTTPS service with, and a client certificate (default: the system's roots, no client certificate). */
  readonly tls?: TlsOptions;
  /**
   * What sends the requests instead of node:http(s) (node-fetch.ts; and of `tls`'s undici fetch): e.g. the service's
   * own app, called in process (`lethe serve`'s MCP endpoint, src/app/serve.ts).
   */
  readonly fetch?: Fetch;
}

export interface CallOptions {
  /** Sent as JSON. */
  readonly body?: unknown;
  /** The `accept` header (default application/json). */
  readonly accept?: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** Aborting it aborts the call; the abort reason is thrown as it is. */
  readonly signal?: AbortSignal;
  /** Overrides the client's timeout for this call. */
  readonly timeoutMs?: number;
}

/** An RFC 9457 problem document as lethe answers it. */
export interface Problem {
  readonly type?: string;
  readonly title?: string;
  readonly status?: number;
  /** The service's error code (one of ERROR_CODES from a lethe service). */
  readonly code?: string;
  readonly detail?: string;
  /** True when the same request may succeed if made again (a retryable 409 or 503). */
  readonly retryable?: boolean;
}

/**
 * The service answered, but not 2xx. `retryable` is the problem's `retryable` when it
 * says, else what the code means (`erasure_in_progress`, `unavailable`, …).
 */
export class ServiceError extends LetheError {
  readonly status: number;
  /** The problem's detail, else the start of the body. */
  readonly detail: string;
  /** The problem document, when the answer was one. */
  readonly problem: Problem | undefined;

  constructor(code: ErrorCode, message: string, fields: { status: number; detail: string; problem: Problem | undefined }) {
    super(code, message, typeof fields.problem?.retryable === 'boolean' ? { retryable: fields.problem.retryable } : undefined);
    this.name = 'ServiceError';
    this.status = fields.status;
    this.detail = fields.detail;
    this.problem = fields.problem;
  }
}

/** The service did not answer: refused, reset, timed out. The call may be retried. */
export class UnreachableError extends LetheError {
  readonly baseUrl: string;
  /** What the network said (the cause's message). */
  readonly reason: string;

  constructor(baseUrl: string, reason: string, cause: unknown) {
    super('unavailable', `the lethe service at ${baseUrl} is unreachable`, { cause });
    this.name = 'UnreachableError';
    this.baseUrl = baseUrl;
    this.reason = reason;
  }
}

/** `http://host:8787/` → `http://host:8787`. */
export function normalizeBaseUrl(url: string): string {
  return url.replace(/\/+$/, '');
}

const TOKEN = /^[\x21-\x7e]+$/;
const KNOWN_CODES: ReadonlySet<string> = new Set(ERROR_CODES);

/** What sends a request: node:http(s) (node-fetch.ts), undici's fetch with a TLS agent, or a caller's own. */
export type Fetch = (url: string, init: RequestInit) => Promise<Response>;

/** Refuses TLS options that could never work, before any request. */
function checkTls(tls: TlsOptions): void {
  if ((tls.cert === undefined) !== (tls.key === undefined)) throw new LetheError('validation_failed', 'tls: give a client cert and its key together');
  const pems = [...(tls.ca === undefined ? [] : Array.isArray(tls.ca) ? tls.ca : [tls.ca as Pem]), ...(tls.cert === undefined ? [] : [tls.cert])];
  for (const pem of pems) {
    const text = typeof pem === 'string' ? pem : new TextDecoder().decode(pem);
    if (!text.includes('-----BEGIN CERTIFICATE-----'))
      throw new LetheError('validation_failed', 'tls: ca and cert must be PEM certificates (-----BEGIN CERTIFICATE-----)');
  }
}

/**
 * A fetch that verifies the service against `tls` (undici's fetch and Agent, from the
 * same package so they always agree). Rejects with `validation_failed` when undici is not installed.
 */
export function tlsFetch(tls: TlsOptions): () => Promise<Fetch> {
  checkTls(tls);
  const toBuffer = (p: Pem) => (typeof p === 'string' ? p : Buffer.from(p));
  let made: Promise<Fetch> | undefined;
  return () =>
    (made ??= import('undici').then(
      ({ Agent, fetch }) => {
        const dispatcher = new Agent({
          connect: {
            ...(tls.ca !== undefined ? { ca: Array.isArray(tls.ca) ? tls.ca.map(toBuffer) : toBuffer(tls.ca as Pem) } : {}),
            ...(tls.cert !== undefined && tls.key !== undefined ? { cert: toBuffer(tls.cert), key: toBuffer(tls.key) } : {}),
            rejectUnauthorized: true,
          },
        });
        return (url, init) => fetch(url, { ...(init as Parameters<typeof fetch>[1]), dispatcher }) as unknown as Promise<Response>;
      },
      (e: unknown) => {
        made = undefined;
        throw new LetheError('validation_failed', 'the tls option needs the undici package (npm install undici)', { cause: e });
      },
    ));
}

/** TLS verification failures: the client refused the service's certificate before sending anything. */
export const TLS_VERIFY_CODES: ReadonlySet<string> = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * What the network said, in words: fetch only says "fetch failed", the cause says why
 * (its message and code). A certificate the client refused is said to be one.
 */
export function networkReason(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  // the innermost cause that says something, and the innermost code
  let message = e.message;
  let code: string | undefined;
  let current: unknown = e;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current.message) message = current.message;
    const c = (current as { code?: unknown }).code;
    if (typeof c === 'string') code = c;
    current = current.cause;
  }
  const said = code && !message.includes(code) ? `${message} (${code})` : message;
  return code && TLS_VERIFY_CODES.has(code) ? `its TLS certificate was not accepted: ${said}` : said;
}

export class ServiceClient {
  readonly baseUrl: string;
  readonly #token: string;
  readonly #timeoutMs: number | undefined;
  readonly #fetch: () => Promise<Fetch>;

  constructor(options: ServiceClientOptions) {
    if (!TOKEN.test(options.token)) throw new LetheError('validation_failed', 'a token is visible ASCII characters without spaces');
    this.baseUrl = normalizeBaseUrl(options.baseUrl);
    this.#token = options.token;
    this.#timeoutMs = options.timeoutMs;
    const own = options.fetch;
    this.#fetch = own ? () => Promise.resolve(own) : options.tls ? tlsFetch(options.tls) : () => Promise.resolve(nodeFetch);
  }

  /** The answer, when it is 2xx; its body is the caller's to read (or cancel). */
  async request(method: string, path: string, options: CallOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { ...options.headers, authorization: `Bearer ${this.#token}`, accept: options.accept ?? 'application/json' };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const signals = [...(options.signal ? [options.signal] : []), ...(timeoutMs !== undefined ? [AbortSignal.timeout(timeoutMs)] : [])];
    const call = await this.#fetch();
    let res: Response;
    try {
      res = await call(`${this.baseUrl}${path}`, {
        method,
        headers,
        ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
        ...(signals.length ? { signal: signals.length === 1 ? signals[0]! : AbortSignal.any(signals) } : {}),
      });
    } catch (e) {
      if (options.signal?.aborted) throw options.signal.reason;
      throw new UnreachableError(this.baseUrl, this.#redact(networkReason(e)), e);
    }
    if (!res.ok) throw await this.#failure(method, path, res);
    return res;
  }

  /** The answer's body as JSON. */
  async json<T>(method: string, path: string, options?: CallOptions): Promise<T> {
    return JSON.parse(await (await this.request(method, path, options)).text()) as T;
  }

  /** A DELETE whose answer has no body to read (204); the body, if any, is discarded. */
  async delete(path: string, options?: CallOptions): Promise<void> {
    const res = await this.request('DELETE', path, options);
    await res.body?.cancel().catch(() => {});
  }

  /** The answer's body as text. */
  async text(method: string, path: string, options?: CallOptions): Promise<string> {
    return (await this.request(method, path, options)).text();
  }

  async #failure(method: string, path: string, res: Response): Promise<ServiceError> {
    const text = this.#redact(await res.text().catch(() => ''));
    let problem: Problem | undefined;
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) problem = parsed as Problem;
    } catch {
      // not a problem document
    }
    const named = typeof problem?.code === 'string' ? problem.code : undefined;
    const code: ErrorCode = named !== undefined && KNOWN_CODES.has(named) ? (named as ErrorCode) : 'unavailable';
    const detail = typeof problem?.detail === 'string' ? problem.detail : text.slice(0, 200);
    // the path only to its second segment: further on it may name a subject
    return new ServiceError(code, `${method} ${path.split('/').slice(0, 3).join('/')}… answered ${res.status}: ${detail}`, {
      status: res.status,
      detail,
      problem,
    });
  }

  #redact(text: string): string {
    return text.split(this.#token).join('[token]');
  }
}

/** One server-sent event. `event` is `message` when the block named none. */
export interface SseEvent {
  readonly event: string;
  readonly id?: string;
  readonly data: string;
}

/**
 * The events of a `text/event-stream` body: lines end in CRLF, LF or CR; `:` lines
 * are comments; `data` lines join with a newline; an event ends at a blank line
 * (one cut off by the end of the stream is dropped).
 */
export async function* readSse(res: Response): AsyncGenerator<SseEvent> {
  let event = '';
  let id: string | undefined;
  let data: string[] = [];
  let fields = false;
  for await (const line of readLines(res)) {
    if (line === '') {
      if (fields) yield { event: event || 'message', ...(id !== undefined ? { id } : {}), data: data.join('\n') };
      event = '';
      id = undefined;
      data = [];
      fields = false;
      continue;
    }
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + (line[colon + 1] === ' ' ? 2 : 1));
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id' && !value.includes('\0')) id = value;
    else continue;
    fields = true;
  }
}

/** The values of an NDJSON body, one per non-blank line (the last may lack its newline). */
export async function* readNdjson<T = unknown>(res: Response): AsyncGenerator<T> {
  for await (const line of readLines(res)) if (line.trim() !== '') yield JSON.parse(line) as T;
}

/** A line break, except a CR at the very end: its LF may open the next chunk. */
const LINE_BREAK = /\r\n|\n|\r(?!$)/g;

/** The lines of a body, decoded as UTF-8 across chunk boundaries, without their breaks. */
async function* readLines(res: Response): AsyncGenerator<string> {
  if (!res.body) return;
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    let start = 0;
    for (const m of buffered.matchAll(LINE_BREAK)) {
      yield buffered.slice(start, m.index);
      start = m.index + m[0].length;
    }
    buffered = buffered.slice(start);
  }
  // at the end a CR is a break too, and what follows the last break a line of its own
  const rest = (buffered + decoder.decode()).split(/\r\n|\n|\r/);
  const last = rest.pop();
  yield* rest;
  if (last) yield last;
}

/**
 * Deadlines for object-store calls: no call waits on a store that stopped answering.
 *
 * Each operation (an HTTP request to MinIO / S3, a filesystem operation) gets
 * `timeoutMs` (LETHE_STORE_TIMEOUT_MS) plus the time its bytes take at the slowest
 * rate lethe accepts, MIN_BYTES_PER_SECOND: a small call has ~10 s, a 64 MiB part
 * ~74 s. An HTTP request is also cut when its socket sees no byte either way for
 * `timeoutMs` (an idle timeout), so a store that stalls mid-transfer is noticed
 * without waiting for the whole allowance. What expires is `unavailable`
 * (retryable), and a timed-out HTTP request is destroyed with its socket: nothing
 * hangs on after its call failed.
 *
 * A timed-out call may still have taken effect (the store may have stored the
 * object just before it stopped answering): callers treat it as unknown and repeat
 * it, which every caller's idempotent puts allow.
 */
import http from 'node:http';
import https from 'node:https';
import { markSocketErrors } from '../errors.js';

/** The slowest transfer rate given time for, on top of the base timeout: 1 MiB/s. */
export const MIN_BYTES_PER_SECOND = 1024 * 1024;

/** LETHE_STORE_TIMEOUT_MS's default. */
export const DEFAULT_STORE_TIMEOUT_MS = 10_000;

/** How long an operation moving `bytes` may take. */
export function allowanceMs(timeoutMs: number, bytes: number): number {
  return timeoutMs + Math.ceil((Math.max(0, bytes) * 1000) / MIN_BYTES_PER_SECOND);
}

/** An object-store operation ran past its deadline (classified `unavailable` by the adapters). */
export class StoreTimeout extends Error {
  readonly code = 'LETHE_STORE_TIMEOUT';
  constructor(readonly ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = 'StoreTimeout';
  }
}

/**
 * Runs `fn` against a deadline of `allowanceMs(timeoutMs, bytes)`, which `fn` may
 * push back once it learns how many bytes it moves (`extend`). Rejects with
 * StoreTimeout when the deadline passes first; the operation itself cannot be
 * cancelled (a filesystem call), it is only no longer waited for.
 */
export async function withDeadline<T>(timeoutMs: number, bytes: number, fn: (extend: (bytes: number) => void) => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let allowed = allowanceMs(timeoutMs, bytes);
  const started = Date.now();
  let expire: (e: Error) => void = () => {};
  const expired = new Promise<never>((_, reject) => {
    expire = reject;
  });
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => expire(new StoreTimeout(allowed)), Math.max(0, started + allowed - Date.now()));
  };
  arm();
  const work = fn((more) => {
    allowed += allowanceMs(0, more);
    arm();
  });
  // the operation may settle after the deadline: its outcome is no longer anyone's
  work.catch(() => {});
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** What the minio client accepts as `transport` (its `Transport` type): http(s).request's shape. */
export type RequestTransport = Pick<typeof http, 'request'>;

/**
 * The minio client's transport with deadlines: every request is given
 * `allowanceMs(timeoutMs, request bytes + response bytes)` (the response's
 * content-length counts once its headers arrive) and an idle timeout of
 * `timeoutMs`, and is destroyed — request, response and socket — when either
 * passes, failing with StoreTimeout. The agent keeps connections alive and drops an
 * idle pooled one after `timeoutMs`.
 */
export function timedTransport(secure: boolean, timeoutMs: number): { transport: RequestTransport; agent: http.Agent } {
  const base = secure ? https : http;
  const agent = new base.Agent({ keepAlive: true, timeout: timeoutMs });
  const request = (options: http.RequestOptions, callback?: (res: http.IncomingMessage) => void): http.ClientRequest => {
    const sent = Number(headerOf(options.headers, 'content-length') ?? 0) || 0;
    let response: http.IncomingMessage | undefined;
    let timer: NodeJS.Timeout | undefined;
    const started = Date.now();
    let allowed = allowanceMs(timeoutMs, sent);
    const fail = (ms: number) => {
      const e = new StoreTimeout(ms);
      clearTimeout(timer);
      response?.destroy(e);
      req.destroy(e);
    };
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => fail(allowed), Math.max(0, started + allowed - Date.now()));
      timer.unref();
    };
    const req = base.request({ ...options, agent }, (res) => {
      response = res;
      const received = Number(res.headers['content-length'] ?? 0) || 0;
      if (received > 0) {
        allowed += allowanceMs(0, received);
        arm();
      }
      res.once('close', () => clearTimeout(timer));
      callback?.(res);
    });
    // an error of this request is the object store's, whoever ends up (not) waiting for it (src/app/rejections.ts)
    markSocketErrors(req, 'object-store');
    req.setTimeout(timeoutMs, () => fail(timeoutMs));
    req.once('close', () => {
      if (!response) clearTimeout(timer);
    });
    arm();
    return req;
  };
  return { transport: { request } as unknown as RequestTransport, agent };
}

function headerOf(headers: http.RequestOptions['headers'], name: string): string | undefined {
  if (!headers || Array.isArray(headers)) return undefined;
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === name && v !== undefined) return String(v);
  return undefined;
}

/**
 * The servers an `S3_ENDPOINT` names, and what answers at one, asked without
 * credentials: whether an error says it could not be reached, and what a plain GET
 * there finds (an S3 API, a web page, MinIO's cluster health check).
 */
import http from 'node:http';
import https from 'node:https';

/** The servers an `S3_ENDPOINT` names: one, or several of one cluster, comma-separated. */
export function s3Endpoints(endpoint: string): URL[] {
  return endpoint
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '')
    .map((e) => new URL(e));
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE']);

/** Whether the error says the server could not be reached (nothing listens, the connection was reset, no route). */
export function unreachable(e: unknown): boolean {
  return NETWORK_CODES.has(String((e as { code?: unknown }).code ?? '')) || (e as Error).name === 'AggregateError';
}

/** What a network error code means, said plainly. */
export function networkReason(code: string): string {
  if (code === 'ECONNREFUSED') return 'ECONNREFUSED: connection refused, nothing listens there';
  if (code === 'ENOTFOUND') return 'ENOTFOUND: no such host';
  if (code === 'EHOSTUNREACH') return 'EHOSTUNREACH: no route to the host';
  return code || 'network error';
}

/** How long asking the endpoint what it is may take. */
export const PROBE_TIMEOUT_MS = 5_000;

export interface Answer {
  readonly status: number;
  /** Its media type, without parameters; empty when it sent none. */
  readonly contentType: string;
  /** Whether it looks like an S3 API: S3 and MinIO name every answer (`x-amz-request-id`) and speak XML. */
  readonly s3: boolean;
  /** Whether MinIO's health check answered (it names the cluster's write quorum). */
  readonly writeQuorum: boolean;
}

export function describeAnswer(a: Answer): string {
  return `HTTP ${a.status}${a.contentType ? ` (${a.contentType})` : ''}`;
}

/**
 * What answers a plain GET of the endpoint's `path` (no credentials, nothing signed): its
 * status, its content type and whether it speaks S3; undefined when nothing answers in
 * `timeoutMs`.
 */
export function whatAnswers(endpoint: string, timeoutMs: number, path = '/'): Promise<Answer | undefined> {
  return new Promise((resolve) => {
    const url = new URL(path, endpoint);
    // an absolute deadline: `timeout` alone is idle time, and headers sent a byte at a time would hold it open
    const deadline = setTimeout(() => {
      request.destroy();
      resolve(undefined);
    }, timeoutMs);
    const request = (url.protocol === 'https:' ? https : http).get(url, { agent: false, timeout: timeoutMs }, (res) => {
      clearTimeout(deadline);
      // the headers say enough: the body is never read
      res.destroy();
      const contentType = String(res.headers['content-type'] ?? '')
        .split(';')[0]!
        .trim()
        .toLowerCase();
      const s3 = res.headers['x-amz-request-id'] !== undefined || /\bxml\b/.test(contentType);
      resolve({ status: res.statusCode ?? 0, contentType, s3, writeQuorum: res.headers['x-minio-write-quorum'] !== undefined });
    });
    request.on('timeout', () => request.destroy());
    request.on('error', () => {
      clearTimeout(deadline);
      resolve(undefined);
    });
  });
}

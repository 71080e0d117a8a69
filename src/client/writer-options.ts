/** What a `LetheWriter` is given (writer.ts): the service, the object store, and how it batches, retries and lets leases go. */
import type { ObjectStore } from '../storage/store.js';
import type { TlsOptions } from './http.js';
import type { RetryOptions } from './retry.js';

export interface WriterOptions {
  /** The lethe service, e.g. http://127.0.0.1:8787 */
  readonly baseUrl: string;
  /** A writer-role bearer token. */
  readonly token: string;
  /** An HTTPS service's CA (and a client certificate when it requires one): `ServiceClient`'s `tls`. */
  readonly tls?: TlsOptions;
  /** The object store segments are uploaded to (the service's own bucket). */
  readonly store: ObjectStore;
  /** Flush a segment once its frames reach this many bytes (default 1 MiB). */
  readonly segmentMaxBytes?: number;
  /**
   * Entries per segment at most (default 2,000): the segment's registration names each
   * one (ids, place, wrapped record key — about 400 bytes with a long subject id), and
   * must fit the service's request body limit (1 MiB by default) and its 10,000 entries.
   */
  readonly segmentMaxEntries?: number;
  /** Flush a segment this long after its first frame (default 100 ms). */
  readonly segmentMaxAgeMs?: number;
  /** Sequence numbers reserved per round trip and subject (default 64). */
  readonly reserveBlock?: number;
  /** Test hook: runs after a segment is uploaded, before it is registered. */
  readonly beforeRegister?: (segment: string) => Promise<void>;
  /** Attempts at uploading a segment and at registering it, each (default 4). */
  readonly attempts?: number;
  /** Wait before the second attempt, doubling after each (default 200 ms, at most 5 s). */
  readonly retryDelayMs?: number;
  /** Give up on one service call after this long (default 30 s); an unanswered registration is retried. */
  readonly requestTimeoutMs?: number;
  /**
   * After this long without an append (and nothing left to upload), the writer
   * releases its leases and zeroes its DEKs; the next append leases again (default
   * 60 s; `Infinity`: only at expiry and `close()`).
   */
  readonly idleTimeoutMs?: number;
  /** Give up on releasing one lease after this long (default 5 s): the releases add at most about this long to `close()`. */
  readonly releaseTimeoutMs?: number;
  /**
   * How a lease, a reservation and an append re-sealed under the subject's new key are
   * tried again while a forget re-keys the subject (a retryable 409, a registration
   * answered `key_destroyed` or `erasure_in_progress`): default 6 attempts, 100 ms
   * doubling to at most 2 s (retry.ts). An erased subject is never retried.
   */
  readonly retry?: RetryOptions;
}

/**
 * The releases of the leases a writer (writer.ts) is done with — superseded by a renewal,
 * given up when the subject's key changed, idle, closed: `DELETE …/key/lease/{leaseId}`,
 * best effort and bounded, so that an erasure of the subject does not wait for the lease
 * to expire. One that fails is kept, tried again at the next `settle()`, and reported
 * until its lease expires.
 */
import { LetheError } from '../errors.js';
import type { ServiceClient } from './http.js';

/** A lease the writer is done with but could not release: it ends at its expiry. */
export interface UnreleasedLease {
  readonly subject: string;
  readonly leaseId: string;
  readonly expiresAt: Date;
  /** Why the release failed: the service's refusal, or `unavailable` (no answer within `releaseTimeoutMs`). */
  readonly error: LetheError;
}

/** What `close()` did with the writer's leases. */
export interface WriterCloseReport {
  /** Leases whose release the service took while closing. */
  readonly released: number;
  /** Leases still unreleased (service unreachable or refusing): each stays usable until its expiry, and an erasure of its subject waits for it. */
  readonly unreleased: readonly UnreleasedLease[];
}

export class LeaseReleases {
  readonly #service: ServiceClient;
  readonly #timeoutMs: number;
  /** Releases on their way, by lease id. */
  readonly #releasing = new Map<string, Promise<boolean>>();
  /** Leases whose release failed, tried again at the next settle. */
  readonly #unreleased = new Map<string, UnreleasedLease>();

  /** `timeoutMs`: how long one release may take (the writer's `releaseTimeoutMs`). */
  constructor(service: ServiceClient, timeoutMs: number) {
    this.#service = service;
    this.#timeoutMs = timeoutMs;
  }

  /** How many leases are unreleased after a failed release (and not expired yet). */
  get failed(): number {
    return this.#unreleased.size;
  }

  /**
   * `DELETE …/key/lease/{leaseId}` in the background, once per lease at a time, bounded
   * by `releaseTimeoutMs`. Resolves true when the service took it (204), false when it
   * failed — no answer, or a refusal (a 404 too: a service that does not know the lease
   * has not recorded its end) — and the lease is kept for the next try until it
   * expires.
   */
  release(subject: string, leaseId: string, expiresAt: number): void {
    if (this.#releasing.has(leaseId)) return;
    if (expiresAt <= Date.now()) {
      this.#unreleased.delete(leaseId); // over already: nothing left to release
      return;
    }
    const path = `/v1/subjects/${encodeURIComponent(subject)}/key/lease/${encodeURIComponent(leaseId)}`;
    const p = this.#service
      .delete(path, { timeoutMs: this.#timeoutMs })
      .then(
        () => {
          this.#unreleased.delete(leaseId);
          return true;
        },
        (e: unknown) => {
          const error = e instanceof LetheError ? e : new LetheError('unavailable', 'the lease release failed', { cause: e });
          if (expiresAt > Date.now()) this.#unreleased.set(leaseId, { subject, leaseId, expiresAt: new Date(expiresAt), error });
          else this.#unreleased.delete(leaseId);
          return false;
        },
      )
      .finally(() => this.#releasing.delete(leaseId));
    this.#releasing.set(leaseId, p);
  }

  /** Tries the failed releases again and waits for every release on its way; counts what the service took. */
  async settle(): Promise<WriterCloseReport> {
    for (const lease of [...this.#unreleased.values()]) this.release(lease.subject, lease.leaseId, lease.expiresAt.getTime());
    const outcomes = await Promise.all([...this.#releasing.values()]);
    return { released: outcomes.filter(Boolean).length, unreleased: [...this.#unreleased.values()] };
  }
}

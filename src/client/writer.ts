/**
 * The writer client: how an agent runtime appends episodic memory without sending
 * plaintext to the service. It leases each subject's DEK, seals frames locally,
 * batches frames of many subjects into segments by size and age, uploads each
 * segment to the object store itself, then registers the frames with the service.
 * An append resolves only after its segment is stored and registered; a crash in
 * between leaves an orphan segment that `lethe log fsck` reports and repairs, and no
 * acknowledged entry.
 *
 * Exactly once: an entry's id is chosen here before it is sealed (the frame binds
 * it), and a registration is retried with the same segment, ids and places — which
 * the service answers idempotently — so a retry never stores an entry twice. When
 * every attempt went unanswered after sending (or answered 5xx), the append rejects
 * with `LetheOutcomeUnknownError` (outcome.ts) instead of `unavailable`, and
 * `retry(error)` settles it.
 *
 * DEKs live only in this process, for the lease's lifetime: renewed before they
 * lapse, zeroed when the lease ends or the writer closes.
 */
import { randomBytes as nodeRandomBytes } from 'node:crypto';
import { fromBase64Url, zeroize } from '../crypto/index.js';
import { LetheError } from '../errors.js';
import { sealFrame } from '../log/frame.js';
import { AppendEntrySchema, MAX_ENTRY_TEXT_BYTES, payloadProblem } from '../log/payload.js';
import { encodeSegment } from '../log/segment.js';
import type { ObjectStore } from '../storage/store.js';
import { ServiceClient } from './http.js';
import { attemptOutcome, LetheOutcomeUnknownError, type SegmentRegistration } from './outcome.js';

export interface WriterOptions {
  /** The lethe service, e.g. http://127.0.0.1:8787 */
  readonly baseUrl: string;
  /** A writer-role bearer token. */
  readonly token: string;
  /** The object store segments are uploaded to (the service's own bucket). */
  readonly store: ObjectStore;
  /** Flush a segment once its frames reach this many bytes (default 1 MiB). */
  readonly segmentMaxBytes?: number;
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
}

export interface AppendedEntry {
  readonly entryId: string;
  readonly keyId: string;
  readonly seq: number;
}

interface HeldLease {
  readonly keyId: string;
  readonly dek: Uint8Array;
  readonly expiresAt: number;
  readonly renewAt: number;
}

interface PendingFrame {
  readonly subject: string;
  readonly entryId: string;
  readonly keyId: string;
  readonly seq: number;
  readonly envelope: Uint8Array;
  readonly resolve: (e: AppendedEntry) => void;
  readonly reject: (e: unknown) => void;
}

function entryId(): string {
  return `entry_${nodeRandomBytes(16).toString('base64url')}`;
}

export class LetheWriter {
  readonly #o: Required<Omit<WriterOptions, 'baseUrl' | 'token' | 'beforeRegister' | 'requestTimeoutMs'>> & Pick<WriterOptions, 'beforeRegister'>;
  readonly #service: ServiceClient;
  readonly #leases = new Map<string, HeldLease>();
  readonly #leasing = new Map<string, Promise<HeldLease>>();
  readonly #blocks = new Map<string, { keyId: string; next: number; end: number }>();
  readonly #reserving = new Map<string, Promise<void>>();
  #pending: PendingFrame[] = [];
  #pendingBytes = 0;
  #timer: NodeJS.Timeout | undefined;
  readonly #flushes = new Set<Promise<void>>();
  readonly #sweeper: NodeJS.Timeout;
  #closed = false;

  constructor(options: WriterOptions) {
    const { baseUrl, token, requestTimeoutMs, ...rest } = options;
    this.#o = { segmentMaxBytes: 1024 * 1024, segmentMaxAgeMs: 100, reserveBlock: 64, attempts: 4, retryDelayMs: 200, ...rest };
    this.#service = new ServiceClient({ baseUrl, token, timeoutMs: requestTimeoutMs ?? 30_000 });
    this.#sweeper = setInterval(() => this.#dropExpiredLeases(), 1000);
    this.#sweeper.unref();
  }

  /** How many subjects' DEKs the writer holds right now (each zeroed when its lease ends). */
  get leasesHeld(): number {
    return this.#leases.size;
  }

  /**
   * Seals the entry locally and resolves once it is stored and registered. Rejects
   * with `LetheOutcomeUnknownError` when it cannot tell whether the entry was stored
   * (settle it with `retry`), with `validation_failed` or `payload_too_large` for an
   * entry the service would refuse, before anything is sent.
   */
  async append(subject: string, entry: { text: string; kind?: string; metadata?: Record<string, unknown> }): Promise<AppendedEntry> {
    if (this.#closed) throw new LetheError('validation_failed', 'the writer is closed');
    // the service holds a frame to the schema of its own appends: refuse here what it would refuse, so no batch fails for one entry
    const problem = payloadProblem(AppendEntrySchema, entry);
    if (problem) throw new LetheError('validation_failed', problem);
    if (Buffer.byteLength(entry.text, 'utf8') > MAX_ENTRY_TEXT_BYTES) throw new LetheError('payload_too_large', `text is limited to ${MAX_ENTRY_TEXT_BYTES} bytes`);
    for (let attempt = 0; attempt < 3; attempt++) {
      const held = await this.#lease(subject);
      // A private copy, taken before the next await: a renewal or the expiry sweep may
      // zero the held DEK while this append waits for its sequence number.
      const keyId = held.keyId;
      const dek = held.dek.slice();
      let envelope: Uint8Array;
      let seq: number | undefined;
      const id = entryId();
      try {
        seq = await this.#nextSeq(subject, keyId);
        if (seq === undefined) {
          // the subject's key changed since the lease (erased and re-keyed): lease again
          this.#forget(subject);
          continue;
        }
        envelope = sealFrame(dek, { keyId, entryId: id, seq }, { text: entry.text, kind: entry.kind ?? null, metadata: entry.metadata ?? null });
      } finally {
        zeroize(dek);
      }
      const reservedSeq = seq;
      return new Promise<AppendedEntry>((resolve, reject) => {
        this.#pending.push({ subject, entryId: id, keyId, seq: reservedSeq, envelope, resolve, reject });
        this.#pendingBytes += envelope.length + 4;
        if (this.#pendingBytes >= this.#o.segmentMaxBytes) this.#startFlush();
        else this.#timer ??= setTimeout(() => this.#startFlush(), this.#o.segmentMaxAgeMs);
      });
    }
    throw new LetheError('unavailable', 'the subject key kept changing; try again');
  }

  /** Uploads and registers everything appended so far. */
  async flush(): Promise<void> {
    this.#startFlush();
    await Promise.allSettled([...this.#flushes]);
  }

  /** Flushes, then zeroes every DEK the writer holds. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.flush();
    clearInterval(this.#sweeper);
    for (const subject of [...this.#leases.keys()]) this.#forget(subject);
  }

  #startFlush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#pending.length === 0) return;
    const batch = this.#pending;
    this.#pending = [];
    this.#pendingBytes = 0;
    const p = this.#upload(batch).finally(() => this.#flushes.delete(p));
    this.#flushes.add(p);
  }

  /**
   * Settles appends that rejected with `LetheOutcomeUnknownError`: registers the same
   * entries at the same place again (idempotent: an entry already indexed answers as
   * it did) and resolves with each entry as stored. The segment must still be in the
   * store: retry within `lethe log fsck`'s grace period (an hour by default). Rejects
   * like an append does — `LetheOutcomeUnknownError` again if the service still does
   * not answer.
   */
  async retry(error: LetheOutcomeUnknownError): Promise<AppendedEntry[]> {
    const { segment, entries } = error.registration;
    const status = await this.#register({ segment, entries });
    return entries.map((e) => {
      const s = status.get(e.entryId);
      if (s !== 'registered') throw notRecorded(s);
      return { entryId: e.entryId, keyId: e.keyId, seq: e.seq };
    });
  }

  async #upload(batch: PendingFrame[]): Promise<void> {
    let registration: SegmentRegistration;
    try {
      const { bytes, places } = encodeSegment(batch.map((f) => f.envelope));
      const segment = `log/seg_${nodeRandomBytes(16).toString('base64url')}`;
      // a failed upload registered nothing: the appends failed, and may be made again
      await this.#withRetries(() => this.#o.store.put(segment, bytes), () => true);
      await this.#o.beforeRegister?.(segment);
      registration = { segment, entries: batch.map((f, i) => ({ entryId: f.entryId, subject: f.subject, keyId: f.keyId, seq: f.seq, ...places[i]! })) };
    } catch (e) {
      for (const f of batch) f.reject(e);
      return;
    }
    let status: Map<string, string>;
    try {
      status = await this.#register(registration);
    } catch (e) {
      // each append learns about its own entry: its id and the registration that settles it
      for (const [i, f] of batch.entries()) {
        f.reject(e instanceof LetheOutcomeUnknownError ? new LetheOutcomeUnknownError({ segment: registration.segment, entries: [registration.entries[i]!] }, this.#o.attempts, e.cause) : e);
      }
      return;
    }
    for (const f of batch) {
      const s = status.get(f.entryId);
      if (s === 'registered') f.resolve({ entryId: f.entryId, keyId: f.keyId, seq: f.seq });
      else {
        this.#forget(f.subject);
        f.reject(notRecorded(s));
      }
    }
  }

  /**
   * `POST /v1/segments`, retried while its outcome is unknown or it was not sent.
   * Each entry's status; `LetheOutcomeUnknownError` when every attempt failed and one
   * of them may have been registered.
   */
  async #register(registration: SegmentRegistration): Promise<Map<string, string>> {
    let uncertain = false;
    let attempts = 0;
    try {
      const { results } = await this.#withRetries(
        () => {
          attempts += 1;
          return this.#service.json<{ results: Array<{ entryId: string; status: string }> }>('POST', '/v1/segments', { body: registration });
        },
        (e) => {
          const outcome = attemptOutcome(e);
          if (outcome === 'unknown') uncertain = true;
          return outcome !== 'refused';
        },
      );
      return new Map(results.map((r) => [r.entryId, r.status]));
    } catch (e) {
      if (uncertain) throw new LetheOutcomeUnknownError(registration, attempts, e);
      throw e;
    }
  }

  /** `fn`, tried up to `attempts` times while `retryable` says so, with a doubling wait between tries. */
  async #withRetries<T>(fn: () => Promise<T>, retryable: (e: unknown) => boolean): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (e) {
        if (!retryable(e) || attempt >= this.#o.attempts) throw e;
        await new Promise((r) => setTimeout(r, Math.min(5000, this.#o.retryDelayMs * 2 ** (attempt - 1))));
      }
    }
  }

  async #lease(subject: string): Promise<HeldLease> {
    const held = this.#leases.get(subject);
    if (held && Date.now() < held.renewAt) return held;
    let pending = this.#leasing.get(subject);
    if (!pending) {
      pending = (async () => {
        const body = await this.#service.json<{ keyId: string; dek: string; expiresAt: string }>(
          'POST',
          `/v1/subjects/${encodeURIComponent(subject)}/key/lease`,
        );
        const dek = fromBase64Url(body.dek);
        if (!dek || dek.length !== 32) throw new LetheError('internal', 'the service returned a malformed lease');
        const expiresAt = Date.parse(body.expiresAt);
        const ttl = expiresAt - Date.now();
        const lease = { keyId: body.keyId, dek, expiresAt, renewAt: expiresAt - Math.min(30_000, ttl / 5) };
        const old = this.#leases.get(subject);
        if (old && old.dek !== dek) zeroize(old.dek);
        this.#leases.set(subject, lease);
        return lease;
      })().finally(() => this.#leasing.delete(subject));
      this.#leasing.set(subject, pending);
    }
    return pending;
  }

  /** The next reserved sequence number under `keyId`, or undefined when the subject's key is another one now. */
  async #nextSeq(subject: string, keyId: string): Promise<number | undefined> {
    for (;;) {
      const block = this.#blocks.get(subject);
      if (block && block.keyId === keyId && block.next < block.end) return block.next++;
      if (block && block.keyId !== keyId) this.#blocks.delete(subject);
      let reserving = this.#reserving.get(subject);
      if (!reserving) {
        reserving = (async () => {
          const r = await this.#service.json<{ keyId: string; firstSeq: number; count: number }>(
            'POST',
            `/v1/subjects/${encodeURIComponent(subject)}/entries/reservations`,
            { body: { count: this.#o.reserveBlock } },
          );
          this.#blocks.set(subject, { keyId: r.keyId, next: r.firstSeq, end: r.firstSeq + r.count });
        })().finally(() => this.#reserving.delete(subject));
        this.#reserving.set(subject, reserving);
      }
      await reserving;
      if (this.#blocks.get(subject)?.keyId !== keyId) return undefined;
    }
  }

  #forget(subject: string): void {
    const held = this.#leases.get(subject);
    if (held) zeroize(held.dek);
    this.#leases.delete(subject);
    this.#blocks.delete(subject);
  }

  #dropExpiredLeases(): void {
    const now = Date.now();
    for (const [subject, lease] of this.#leases) if (lease.expiresAt <= now) this.#forget(subject);
  }
}

/** The error of an entry the service answered but did not record. */
function notRecorded(status: string | undefined): LetheError {
  return new LetheError(status === 'key_destroyed' ? 'key_destroyed' : 'erasure_in_progress', `the entry was not recorded: ${status ?? 'no answer'}`);
}

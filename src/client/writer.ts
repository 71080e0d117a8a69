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
 * lapse, zeroed when the lease ends, when the writer has been idle `idleTimeoutMs`
 * or when it closes. A lease the writer is done with — superseded by its renewal,
 * given up when the subject's key changed, idle, closed — is released
 * (`DELETE …/key/lease/{leaseId}`), so an erasure of the subject does not wait for it
 * to expire. Releases are best effort and bounded (`releaseTimeoutMs` each); one that
 * fails is tried again at the next idle release and at `close()`, whose report names
 * the leases still unreleased (they end at their expiry).
 */
import { fromBase64Url, zeroize } from '../crypto/index.js';
import { isLetheError, LetheError } from '../errors.js';
import type { KeyLeaseAnswer } from '../wire/keys.js';
import type { AppendedEntry, Reservation, SegmentRegistrationResult } from '../wire/log.js';
import { newId, newSegmentKey } from '../ids.js';
import { type SealedEntry, sealEntry } from '../log/frame.js';
import { AppendEntrySchema, MAX_ENTRY_TEXT_BYTES, payloadProblem } from '../log/payload.js';
import { encodeSegment } from '../log/segment.js';
import { ServiceClient } from './http.js';
import { LeaseReleases, type UnreleasedLease, type WriterCloseReport } from './lease-releases.js';
import { attemptOutcome, LetheOutcomeUnknownError, type SegmentRegistration } from './outcome.js';
import { type RetryOptions, retryDelay, retryPolicy, withRetries } from './retry.js';
import { type HeldLease, retire } from './held-lease.js';
import { SequenceLine } from './sequence-line.js';
import type { WriterOptions } from './writer-options.js';

export type { UnreleasedLease, WriterCloseReport, WriterOptions };

/** What an append stored (the wire type: src/wire/log.ts). */
export type { AppendedEntry };

/** Key moves (a head rolled, a re-key) one append follows before it gives up: far more than a busy subject makes while an append waits. */
const MAX_KEY_MOVES = 1_000;

/** The store item an entry holds (`NewEntry.item`). */
type WriterItem = { readonly namespace: readonly string[]; readonly key: string };

interface PendingFrame {
  readonly subject: string;
  readonly entryId: string;
  readonly keyId: string;
  readonly seq: number;
  readonly envelope: Uint8Array;
  /** The record key sealing the frame, wrapped under the subject key. */
  readonly wrappedKey: Uint8Array;
  /** The store item it holds: registered with it, so the service indexes it as an append's. */
  readonly item: WriterItem | undefined;
  readonly resolve: (e: AppendedEntry) => void;
  readonly reject: (e: unknown) => void;
}

export class LetheWriter {
  readonly #o: Required<Omit<WriterOptions, 'baseUrl' | 'token' | 'tls' | 'beforeRegister' | 'requestTimeoutMs' | 'retry'>> &
    Pick<WriterOptions, 'beforeRegister'>;
  /** Retrying across a forget's re-key: leases, reservations, re-seals. */
  readonly #retry: Required<RetryOptions>;
  readonly #service: ServiceClient;
  readonly #leases = new Map<string, HeldLease>();
  readonly #leasing = new Map<string, Promise<HeldLease>>();
  readonly #seqs: SequenceLine;
  #pending: PendingFrame[] = [];
  #pendingBytes = 0;
  #timer: NodeJS.Timeout | undefined;
  readonly #flushes = new Set<Promise<void>>();
  readonly #sweeper: NodeJS.Timeout;
  #closed = false;
  /** When an append last asked for a lease (the idle clock). */
  #lastActive = Date.now();
  /** The releases of leases the writer is done with (lease-releases.ts). */
  readonly #releases: LeaseReleases;

  constructor(options: WriterOptions) {
    const { baseUrl, token, tls, requestTimeoutMs, retry, ...rest } = options;
    this.#retry = retryPolicy(retry);
    this.#o = {
      segmentMaxBytes: 1024 * 1024,
      segmentMaxEntries: 2000,
      segmentMaxAgeMs: 100,
      reserveBlock: 64,
      attempts: 4,
      retryDelayMs: 200,
      idleTimeoutMs: 60_000,
      releaseTimeoutMs: 5_000,
      ...rest,
    };
    if (!Number.isInteger(this.#o.segmentMaxEntries) || this.#o.segmentMaxEntries < 1 || this.#o.segmentMaxEntries > 10_000) {
      throw new LetheError('validation_failed', 'segmentMaxEntries must be an integer from 1 to 10000 (a registration names at most 10,000 entries)');
    }
    for (const name of ['idleTimeoutMs', 'releaseTimeoutMs'] as const) {
      if (!(this.#o[name] > 0)) throw new LetheError('validation_failed', `${name} must be a positive number of milliseconds`);
    }
    this.#service = new ServiceClient({ baseUrl, token, timeoutMs: requestTimeoutMs ?? 30_000, ...(tls ? { tls } : {}) });
    this.#releases = new LeaseReleases(this.#service, this.#o.releaseTimeoutMs);
    this.#seqs = new SequenceLine((subject) =>
      withRetries(this.#retry, () =>
        this.#service.json<Reservation>('POST', `/v1/subjects/${encodeURIComponent(subject)}/entries/reservations`, { body: { count: this.#o.reserveBlock } }),
      ),
    );
    // expired leases are dropped, and an idle writer's released, within a second (sooner for a shorter idle timeout)
    this.#sweeper = setInterval(() => this.#sweep(), Math.min(1000, Math.max(10, this.#o.idleTimeoutMs / 4)));
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
  async append(subject: string, entry: { text: string; kind?: string; metadata?: Record<string, unknown>; item?: WriterItem }): Promise<AppendedEntry> {
    if (this.#closed) throw new LetheError('validation_failed', 'the writer is closed');
    // the service holds a frame to the schema of its own appends: refuse here what it would refuse, so no batch fails for one entry
    const problem = payloadProblem(AppendEntrySchema, entry);
    if (problem) throw new LetheError('validation_failed', problem);
    if (Buffer.byteLength(entry.text, 'utf8') > MAX_ENTRY_TEXT_BYTES)
      throw new LetheError('payload_too_large', `text is limited to ${MAX_ENTRY_TEXT_BYTES} bytes`);
    // one entry id across re-seals: the entry is stored once, under whichever key it was last sealed under
    const id = newId('entry');
    // a head key rolled into a shard (src/vault/key-shards.ts) moves the subject to a new key: lease it, not a failed try
    for (let attempt = 1, moves = 0; ; attempt++) {
      // a sequence number first, then the lease of the key it was reserved under
      const { keyId, seq } = await this.#seqs.next(subject);
      let held = await this.#lease(subject);
      if (held.dropped || (held.keyId !== keyId && this.#seqs.keyOf(subject) === keyId)) {
        // the lease predates the reservation's key (or another append found so and dropped it): lease again, once for all
        if (!held.dropped) this.#dropLease(subject, held.keyId);
        held = await this.#lease(subject);
      }
      // a number reserved under a key the subject left since, or a lease another append dropped meanwhile: take another
      if (held.keyId !== keyId || held.dropped) {
        // the subject's key moved again since the reservation (rolled, re-keyed): that number stays a gap, take another
        if (++moves <= MAX_KEY_MOVES) attempt--;
        if (attempt >= this.#retry.attempts) break;
        continue;
      }
      // A private copy, taken before the next await: a renewal or the expiry sweep may
      // zero the held DEK while this append waits for its frame to be stored.
      const dek = held.dek.slice();
      let sealed: SealedEntry;
      try {
        // sealed under a record key of its own, wrapped under the leased DEK (src/log/frame.ts)
        sealed = sealEntry(dek, { keyId, entryId: id, seq }, { text: entry.text, kind: entry.kind ?? null, metadata: entry.metadata ?? null });
      } finally {
        zeroize(dek);
      }
      const reservedSeq = seq;
      const { envelope, wrappedKey } = sealed;
      try {
        return await new Promise<AppendedEntry>((resolve, reject) => {
          this.#pending.push({ subject, entryId: id, keyId, seq: reservedSeq, envelope, wrappedKey, item: entry.item, resolve, reject });
          this.#pendingBytes += envelope.length + 4;
          if (this.#pendingBytes >= this.#o.segmentMaxBytes || this.#pending.length >= this.#o.segmentMaxEntries) this.#startFlush();
          else this.#timer ??= setTimeout(() => this.#startFlush(), this.#o.segmentMaxAgeMs);
        });
      } catch (e) {
        // the key it was sealed under was fenced or replaced before it was registered (a forget's re-key): nothing was
        // stored, the subject lives on — seal the same entry again under its new key, after a pause. The next lease
        // decides: an erasure of the whole subject refuses it (409, then 410 subject_erased), never sealed again.
        if ((isLetheError(e, 'key_destroyed') || isLetheError(e, 'erasure_in_progress')) && attempt < this.#retry.attempts) {
          await new Promise((r) => setTimeout(r, retryDelay(this.#retry, attempt)));
          continue;
        }
        throw e;
      }
    }
    throw new LetheError('unavailable', 'the subject key kept changing; try again');
  }

  /** Uploads and registers everything appended so far. */
  async flush(): Promise<void> {
    this.#startFlush();
    await Promise.allSettled([...this.#flushes]);
  }

  /**
   * Flushes, zeroes every DEK the writer holds, and releases its leases — each in at
   * most `releaseTimeoutMs`, all at once, so a service that does not answer delays
   * the releases by about that long, never more. Never rejects for a release: the report
   * names the leases still unreleased (they end at their expiry; an erasure of their
   * subject waits until then). Closing again releases what is left.
   */
  async close(): Promise<WriterCloseReport> {
    this.#closed = true;
    await this.flush();
    clearInterval(this.#sweeper);
    // a lease still being taken is held (and released) like the others
    await Promise.allSettled([...this.#leasing.values()]);
    return this.#releaseAll();
  }

  /** Zeroes every DEK, releases every lease held and retries the releases that failed; counts what the service took. */
  async #releaseAll(): Promise<WriterCloseReport> {
    for (const subject of [...this.#leases.keys()]) this.#forget(subject);
    return this.#releases.settle();
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
      const segment = newSegmentKey();
      // a failed upload registered nothing: the appends failed, and may be made again
      await this.#withRetries(
        () => this.#o.store.put(segment, bytes),
        () => true,
      );
      await this.#o.beforeRegister?.(segment);
      registration = {
        segment,
        entries: batch.map((f, i) => ({
          entryId: f.entryId,
          subject: f.subject,
          keyId: f.keyId,
          seq: f.seq,
          ...places[i]!,
          wrappedKey: Buffer.from(f.wrappedKey).toString('base64url'),
          ...(f.item ? { item: { namespace: [...f.item.namespace], key: f.item.key } } : {}),
        })),
      };
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
        f.reject(
          e instanceof LetheOutcomeUnknownError
            ? new LetheOutcomeUnknownError({ segment: registration.segment, entries: [registration.entries[i]!] }, this.#o.attempts, e.cause)
            : e,
        );
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
          return this.#service.json<SegmentRegistrationResult>('POST', '/v1/segments', { body: registration });
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

  /** `fn`, tried up to `attempts` times while `retryable` says so, with a doubling wait between tries (at most 5 s). */
  #withRetries<T>(fn: () => Promise<T>, retryable: (e: unknown) => boolean): Promise<T> {
    return withRetries({ attempts: this.#o.attempts, baseDelayMs: this.#o.retryDelayMs, maxDelayMs: 5000 }, fn, retryable);
  }

  async #lease(subject: string): Promise<HeldLease> {
    this.#lastActive = Date.now();
    const held = this.#leases.get(subject);
    if (held && Date.now() < held.renewAt) return held;
    let pending = this.#leasing.get(subject);
    if (!pending) {
      pending = (async () => {
        // a key fenced for a moment (a forget re-keying the subject) answers a retryable 409: lease again after a pause
        const body = await withRetries(this.#retry, () => this.#service.json<KeyLeaseAnswer>('POST', `/v1/subjects/${encodeURIComponent(subject)}/key/lease`));
        const dek = fromBase64Url(body.dek);
        if (!dek || dek.length !== 32) throw new LetheError('internal', 'the service returned a malformed lease');
        const expiresAt = Date.parse(body.expiresAt);
        const ttl = expiresAt - Date.now();
        const lease = { keyId: body.keyId, leaseId: body.leaseId, dek, expiresAt, renewAt: expiresAt - Math.min(30_000, ttl / 5) };
        const old = this.#leases.get(subject);
        if (old && old.dek !== dek) retire(old);
        this.#leases.set(subject, lease);
        // the renewed lease replaces the old one: nothing waits for the old one to expire
        if (old && old.leaseId !== lease.leaseId) this.#releases.release(subject, old.leaseId, old.expiresAt);
        return lease;
      })().finally(() => this.#leasing.delete(subject));
      this.#leasing.set(subject, pending);
    }
    return pending;
  }

  /** Drops the subject's lease if it is still the one of `keyId` (another append may have leased the new key already). */
  #dropLease(subject: string, keyId: string): void {
    const held = this.#leases.get(subject);
    if (!held || held.keyId !== keyId) return;
    retire(held);
    this.#releases.release(subject, held.leaseId, held.expiresAt);
    this.#leases.delete(subject);
  }

  /** Drops the subject's lease and reserved block (the key went: fenced, re-keyed, idle, closing). */
  #forget(subject: string): void {
    const held = this.#leases.get(subject);
    if (held) this.#dropLease(subject, held.keyId);
    this.#seqs.drop(subject);
  }

  /** Drops (zeroes) DEKs whose lease expired; releases everything once the writer has been idle `idleTimeoutMs`. */
  #sweep(): void {
    const now = Date.now();
    for (const [subject, lease] of this.#leases) {
      if (lease.expiresAt > now) continue;
      retire(lease);
      this.#leases.delete(subject);
      this.#seqs.drop(subject);
    }
    // busy — frames waiting or uploading, a lease or a reservation in flight (an append between its lease and its frame is in one of these) — is
    // activity: the idle clock starts once the last upload is done
    const busy = this.#pending.length > 0 || this.#flushes.size > 0 || this.#leasing.size > 0 || this.#seqs.busy;
    if (busy) this.#lastActive = now;
    if (busy || this.#closed || now - this.#lastActive < this.#o.idleTimeoutMs) return;
    if (this.#leases.size === 0 && this.#releases.failed === 0) return;
    this.#lastActive = now; // failed releases are tried again after another idle period, not at every sweep
    void this.#releaseAll();
  }
}

/** The error of an entry the service answered but did not record. */
function notRecorded(status: string | undefined): LetheError {
  const code = status === 'key_destroyed' || status === 'subject_erased' ? status : 'erasure_in_progress';
  return new LetheError(code, `the entry was not recorded: ${status ?? 'no answer'}`);
}

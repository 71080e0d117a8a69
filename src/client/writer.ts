/**
 * The writer client: how an agent runtime appends episodic memory without sending
 * plaintext to the service. It leases each subject's DEK, seals frames locally,
 * batches frames of many subjects into segments by size and age, uploads each
 * segment to the object store itself, then registers the frames with the service.
 * An append resolves only after its segment is stored and registered; a crash in
 * between leaves an orphan segment that `lethe log fsck` reports and repairs, and no
 * acknowledged entry.
 *
 * DEKs live only in this process, for the lease's lifetime: renewed before they
 * lapse, zeroed when the lease ends or the writer closes.
 */
import { randomBytes as nodeRandomBytes } from 'node:crypto';
import { fromBase64Url, zeroize } from '../crypto/index.js';
import { LetheError } from '../errors.js';
import { sealFrame } from '../log/frame.js';
import { encodeSegment } from '../log/segment.js';
import type { ObjectStore } from '../storage/store.js';
import { ServiceClient } from './http.js';

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
  readonly #o: Required<Omit<WriterOptions, 'baseUrl' | 'token' | 'beforeRegister'>> & Pick<WriterOptions, 'beforeRegister'>;
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
    const { baseUrl, token, ...rest } = options;
    this.#o = { segmentMaxBytes: 1024 * 1024, segmentMaxAgeMs: 100, reserveBlock: 64, ...rest };
    this.#service = new ServiceClient({ baseUrl, token });
    this.#sweeper = setInterval(() => this.#dropExpiredLeases(), 1000);
    this.#sweeper.unref();
  }

  /** How many subjects' DEKs the writer holds right now (each zeroed when its lease ends). */
  get leasesHeld(): number {
    return this.#leases.size;
  }

  /** Seals the entry locally and resolves once it is stored and registered. */
  async append(subject: string, entry: { text: string; kind?: string; metadata?: Record<string, unknown> }): Promise<AppendedEntry> {
    if (this.#closed) throw new LetheError('validation_failed', 'the writer is closed');
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

  async #upload(batch: PendingFrame[]): Promise<void> {
    try {
      const { bytes, places } = encodeSegment(batch.map((f) => f.envelope));
      const segment = `log/seg_${nodeRandomBytes(16).toString('base64url')}`;
      await this.#o.store.put(segment, bytes);
      await this.#o.beforeRegister?.(segment);
      const { results } = await this.#service.json<{ results: Array<{ entryId: string; status: string }> }>('POST', '/v1/segments', {
        body: {
          segment,
          entries: batch.map((f, i) => ({ entryId: f.entryId, subject: f.subject, keyId: f.keyId, seq: f.seq, ...places[i]! })),
        },
      });
      const status = new Map(results.map((r) => [r.entryId, r.status]));
      for (const f of batch) {
        const s = status.get(f.entryId);
        if (s === 'registered') f.resolve({ entryId: f.entryId, keyId: f.keyId, seq: f.seq });
        else {
          this.#forget(f.subject);
          f.reject(new LetheError(s === 'key_destroyed' ? 'key_destroyed' : 'erasure_in_progress', `the entry was not recorded: ${s ?? 'no answer'}`));
        }
      }
    } catch (e) {
      for (const f of batch) f.reject(e);
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

/**
 * The DEK cache: plaintext subject DEKs held in memory so a warm lease does not
 * unwrap. Bounded by entries (least recently used goes first) and by age. Every
 * evicted, expired or invalidated DEK is zeroed. `get` hands out a copy, so zeroing
 * an evicted entry never corrupts a key still in use by a request.
 */
import { zeroize } from '../crypto/index.js';

interface Entry {
  readonly keyId: string;
  readonly dek: Uint8Array;
  readonly storedAt: number;
}

export interface CachedDek {
  readonly keyId: string;
  /** A private copy: the caller zeroes it. */
  readonly dek: Uint8Array;
}

export class DekCache {
  readonly #bySubject = new Map<string, Entry>();
  readonly #subjectByKey = new Map<string, string>();
  readonly #maxEntries: number;
  readonly #maxAgeMs: number;
  readonly #now: () => number;

  constructor(options: { maxEntries: number; maxAgeMs: number; now?: () => number }) {
    this.#maxEntries = options.maxEntries;
    this.#maxAgeMs = options.maxAgeMs;
    this.#now = options.now ?? Date.now;
  }

  get size(): number {
    return this.#bySubject.size;
  }

  get(subjectHex: string): CachedDek | undefined {
    const entry = this.#bySubject.get(subjectHex);
    if (!entry) return undefined;
    if (this.#now() - entry.storedAt >= this.#maxAgeMs) {
      this.#remove(subjectHex, entry);
      return undefined;
    }
    // refresh recency: Map iteration order is insertion order
    this.#bySubject.delete(subjectHex);
    this.#bySubject.set(subjectHex, entry);
    return { keyId: entry.keyId, dek: entry.dek.slice() };
  }

  /** Whether a live (not expired) entry for the subject is held; recency unchanged, nothing copied. */
  has(subjectHex: string): boolean {
    const entry = this.#bySubject.get(subjectHex);
    return entry !== undefined && this.#now() - entry.storedAt < this.#maxAgeMs;
  }

  /** Stores a copy of `dek` (the caller keeps and zeroes its own buffer). */
  set(subjectHex: string, keyId: string, dek: Uint8Array): void {
    if (this.#maxEntries === 0 || this.#maxAgeMs === 0) return;
    const old = this.#bySubject.get(subjectHex);
    if (old) this.#remove(subjectHex, old);
    this.#bySubject.set(subjectHex, { keyId, dek: dek.slice(), storedAt: this.#now() });
    this.#subjectByKey.set(keyId, subjectHex);
    while (this.#bySubject.size > this.#maxEntries) {
      const [oldestSubject, oldest] = this.#bySubject.entries().next().value as [string, Entry];
      this.#remove(oldestSubject, oldest);
    }
  }

  /** Drops the DEK of `keyId`; true when one was cached. */
  dropKey(keyId: string): boolean {
    const subjectHex = this.#subjectByKey.get(keyId);
    if (subjectHex === undefined) return false;
    const entry = this.#bySubject.get(subjectHex);
    if (entry && entry.keyId === keyId) {
      this.#remove(subjectHex, entry);
      return true;
    }
    this.#subjectByKey.delete(keyId);
    return false;
  }

  clear(): void {
    for (const [subjectHex, entry] of [...this.#bySubject]) this.#remove(subjectHex, entry);
  }

  #remove(subjectHex: string, entry: Entry): void {
    zeroize(entry.dek);
    this.#bySubject.delete(subjectHex);
    this.#subjectByKey.delete(entry.keyId);
  }
}

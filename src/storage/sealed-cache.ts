/**
 * Sealed objects recently read or written, by name: a search's hits are mostly the
 * memories it found a moment ago, and fetching each one from the object store is most
 * of what reading it back costs. The log caches frames (by segment and byte range),
 * the artifacts their versions (by object and version key).
 *
 * Only ciphertext is held (never a key or plaintext): an object opens only under its
 * key, so one whose key is destroyed is as unreadable here as anywhere. A name must
 * denote one sealing for good (a segment is written once under a fresh name; a
 * version's name carries its key id): the caller decides whether a record may be read
 * at all (its row, its key) before it asks the cache, so the cache never makes a
 * forgotten or erased record readable. Least recently used objects go first, within
 * the budget.
 */
export class SealedCache {
  readonly #objects = new Map<string, Uint8Array>();
  readonly #max: number;
  #bytes = 0;

  constructor(maxBytes = SealedCache.MAX_BYTES) {
    this.#max = maxBytes;
  }

  /** The default budget: 16 MiB (about 30,000 short memories' frames). */
  static readonly MAX_BYTES = 16 << 20;

  get(name: string): Uint8Array | undefined {
    const sealed = this.#objects.get(name);
    if (sealed) {
      // most recently used last
      this.#objects.delete(name);
      this.#objects.set(name, sealed);
    }
    return sealed;
  }

  set(name: string, sealed: Uint8Array): void {
    // an object of more than 1/64 of the budget would push out too many others
    if (sealed.length > this.#max / 64 || this.#objects.has(name)) return;
    this.#objects.set(name, sealed);
    this.#bytes += sealed.length;
    for (const [oldest, s] of this.#objects) {
      if (this.#bytes <= this.#max) break;
      this.#objects.delete(oldest);
      this.#bytes -= s.length;
    }
  }

  get bytes(): number {
    return this.#bytes;
  }
}

/**
 * Sealed frames recently read back, by segment and byte range: a search's hits are
 * mostly the memories it found a moment ago, and fetching each one's frame from the
 * object store is most of what reading it back costs.
 *
 * Only ciphertext is held (never a key or plaintext): a frame opens only under its
 * subject's key, so one whose key is destroyed is as unreadable here as anywhere.
 * Segments are written once under a fresh name and never rewritten, so an entry found
 * by (segment, offset, length) is the stored frame; a re-key moves an entry to a new
 * segment (a miss). Whether an entry may be read at all is decided before the cache is
 * asked (its row: forgotten, refused, its key), so the cache never makes a forgotten
 * entry readable. Least recently used frames go first, within MAX_BYTES.
 */
export class FrameCache {
  readonly #frames = new Map<string, Uint8Array>();
  readonly #max: number;
  #bytes = 0;

  constructor(maxBytes = FrameCache.MAX_BYTES) {
    this.#max = maxBytes;
  }

  /** The default budget: 16 MiB of frames (about 30,000 short memories). */
  static readonly MAX_BYTES = 16 << 20;

  static keyOf(segment: string, offset: number, length: number): string {
    return `${segment}\u0000${offset}\u0000${length}`;
  }

  get(key: string): Uint8Array | undefined {
    const frame = this.#frames.get(key);
    if (frame) {
      // most recently used last
      this.#frames.delete(key);
      this.#frames.set(key, frame);
    }
    return frame;
  }

  set(key: string, frame: Uint8Array): void {
    // a frame of more than 1/64 of the budget would push out too many others
    if (frame.length > this.#max / 64 || this.#frames.has(key)) return;
    this.#frames.set(key, frame);
    this.#bytes += frame.length;
    for (const [oldest, f] of this.#frames) {
      if (this.#bytes <= this.#max) break;
      this.#frames.delete(oldest);
      this.#bytes -= f.length;
    }
  }

  get bytes(): number {
    return this.#bytes;
  }
}

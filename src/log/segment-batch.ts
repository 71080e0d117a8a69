/**
 * Service appends share segment objects: a frame handed in while a segment is being
 * stored waits for the next one, which holds every frame that arrived meanwhile (up to
 * MAX_FRAMES and MAX_BYTES). One object write and its flushes then serve many concurrent
 * appends instead of one each (issue 35); a lone append is stored at once, as before.
 * Each frame learns its segment and place only once that segment is stored; a failed
 * store fails every append of its batch, none of which is indexed. A segment is deleted
 * again only when every append in it gave its frame up (giveUp).
 */
import { newSegmentKey } from '../ids.js';
import type { ObjectStore } from '../storage/store.js';
import { encodeSegment, type FramePlace } from './segment.js';

const MAX_FRAMES = 64;
const MAX_BYTES = 4 * 1024 * 1024;

export interface StoredFrame {
  readonly segment: string;
  readonly place: FramePlace;
  /**
   * This frame will be indexed by nothing (its append was not recorded): true when every
   * frame of its segment has been given up so, and the segment may be deleted.
   */
  readonly giveUp: () => boolean;
}

interface Waiting {
  readonly frame: Uint8Array;
  readonly resolve: (stored: StoredFrame) => void;
  readonly reject: (e: unknown) => void;
}

export class SegmentBatcher {
  readonly #objects: ObjectStore;
  readonly #waiting: Waiting[] = [];
  #storing = false;

  constructor(objects: ObjectStore) {
    this.#objects = objects;
  }

  /** Stores `frame` in a segment (alone when nothing else is being stored); resolves once that segment is stored. */
  store(frame: Uint8Array): Promise<StoredFrame> {
    return new Promise<StoredFrame>((resolve, reject) => {
      this.#waiting.push({ frame, resolve, reject });
      if (!this.#storing) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#storing = true;
    try {
      while (this.#waiting.length > 0) await this.#storeBatch(this.#take());
    } finally {
      this.#storing = false;
    }
  }

  #take(): Waiting[] {
    let bytes = 0;
    let n = 0;
    // always at least one frame, however large (the segment format bounds a frame)
    while (n < this.#waiting.length && n < MAX_FRAMES && (n === 0 || bytes + this.#waiting[n]!.frame.byteLength <= MAX_BYTES)) {
      bytes += this.#waiting[n]!.frame.byteLength;
      n++;
    }
    return this.#waiting.splice(0, n);
  }

  async #storeBatch(batch: Waiting[]): Promise<void> {
    try {
      const { bytes, places } = encodeSegment(batch.map((w) => w.frame));
      const segment = newSegmentKey();
      await this.#objects.put(segment, bytes);
      const givenUp = new Set<number>();
      for (const [i, w] of batch.entries()) w.resolve({ segment, place: places[i]!, giveUp: () => givenUp.add(i).size === batch.length });
    } catch (e) {
      for (const w of batch) w.reject(e);
    }
  }
}

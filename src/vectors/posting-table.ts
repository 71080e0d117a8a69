/**
 * One shard of the lexical index's postings (shingle-index.ts): keyed shingle → one
 * slot, or a list `[live count, slot, slot, ...]`. Open addressing (linear probing, at
 * most 3/4 full) over a Float64Array of shingles and an Int32Array of postings — slot
 * + 1, or −(list number + 1) — so that a distinct shingle costs 12 bytes a place
 * rather than a Map entry and a boxed key (about 50). Keys are shingles: integers
 * below 2^53 (shingles.ts), compared with `===`.
 */
import { closeGap } from './probe-gap.js';

/** A posting: one live slot, or [live count, slot, slot, ...] (slots may be dead). */
export type Posting = number | number[];

const MIN_CAPACITY = 16;

/** Where a shingle's probe starts: its bits above the shard's (the low byte picks the shard), mixed. */
function home(h: number, mask: number): number {
  const above = Math.floor(h / 256);
  return Math.imul((above ^ (above / 2 ** 32)) >>> 0, 0x9e3779b1) & mask;
}

export class PostingTable {
  #keys = new Float64Array(MIN_CAPACITY);
  #postings = new Int32Array(MIN_CAPACITY);
  #size = 0;
  #lists: Array<number[] | undefined> = [];
  #freeLists: number[] = [];

  get size(): number {
    return this.#size;
  }

  get(h: number): Posting | undefined {
    const at = this.#find(h);
    return at < 0 ? undefined : this.#posting(this.#postings[at]!);
  }

  /** Files `posting` under `h` (a list is kept as given: the caller grows it in place). */
  set(h: number, posting: Posting): void {
    let at = this.#find(h);
    if (at < 0) {
      if ((this.#size + 1) * 4 > this.#keys.length * 3) this.#grow();
      at = this.#emptyFor(h);
      this.#keys[at] = h;
      this.#size++;
    } else {
      const old = this.#postings[at]!;
      if (old < 0 && typeof posting === 'number') this.#freeList(-old - 1);
      if (old < 0 && typeof posting !== 'number') {
        this.#lists[-old - 1] = posting;
        return;
      }
    }
    this.#postings[at] = typeof posting === 'number' ? posting + 1 : -this.#newList(posting) - 1;
  }

  delete(h: number): boolean {
    const at = this.#find(h);
    if (at < 0) return false;
    const old = this.#postings[at]!;
    if (old < 0) this.#freeList(-old - 1);
    const keys = this.#keys;
    const postings = this.#postings;
    const mask = keys.length - 1;
    const empty = closeGap(
      at,
      mask,
      (place) => postings[place] !== 0,
      (place) => home(keys[place]!, mask),
      (from, to) => {
        keys[to] = keys[from]!;
        postings[to] = postings[from]!;
      },
    );
    keys[empty] = 0;
    postings[empty] = 0;
    this.#size--;
    return true;
  }

  #posting(value: number): Posting {
    return value > 0 ? value - 1 : this.#lists[-value - 1]!;
  }

  #newList(list: number[]): number {
    const n = this.#freeLists.pop();
    if (n !== undefined) {
      this.#lists[n] = list;
      return n;
    }
    this.#lists.push(list);
    return this.#lists.length - 1;
  }

  #freeList(n: number): void {
    this.#lists[n] = undefined;
    this.#freeLists.push(n);
  }

  /** The place holding `h`, or -1. */
  #find(h: number): number {
    const keys = this.#keys;
    const postings = this.#postings;
    const mask = keys.length - 1;
    for (let at = home(h, mask); postings[at] !== 0; at = (at + 1) & mask) if (keys[at] === h) return at;
    return -1;
  }

  #emptyFor(h: number): number {
    const mask = this.#keys.length - 1;
    let at = home(h, mask);
    while (this.#postings[at] !== 0) at = (at + 1) & mask;
    return at;
  }

  #grow(): void {
    const keys = this.#keys;
    const postings = this.#postings;
    this.#keys = new Float64Array(keys.length * 2);
    this.#postings = new Int32Array(keys.length * 2);
    for (let i = 0; i < keys.length; i++) {
      if (postings[i] === 0) continue;
      const at = this.#emptyFor(keys[i]!);
      this.#keys[at] = keys[i]!;
      this.#postings[at] = postings[i]!;
    }
    keys.fill(0);
  }
}

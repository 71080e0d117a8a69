/**
 * The lexical index's shingle sets (shingle-index.ts), back to back in chunks of
 * CHUNK float64s, a set never spanning two: a Float64Array per record cost about 400
 * bytes of the process's memory besides its own 8 a shingle (its buffer, backing
 * store and allocation). A set is written once and zeroed when it leaves; the space it
 * held comes back when the index compacts (it files every live set into a new arena).
 */
const CHUNK = 1 << 17;

export class SetArena {
  #chunks: Float64Array[] = [];
  /** Elements used in the last chunk. */
  #tail = 0;
  #chunkOf = new Int32Array(0);
  #from = new Int32Array(0);
  #length = new Int32Array(0);

  /** Copies `set` in as slot `slot`'s (a slot is written once) and zeroes `set`. */
  store(slot: number, set: Float64Array): void {
    const n = set.length;
    let last = this.#chunks.at(-1);
    if (!last || this.#tail + n > last.length) {
      last = new Float64Array(Math.max(CHUNK, n));
      this.#chunks.push(last);
      this.#tail = 0;
    }
    this.#ensure(slot);
    last.set(set, this.#tail);
    this.#chunkOf[slot] = this.#chunks.length - 1;
    this.#from[slot] = this.#tail;
    this.#length[slot] = n;
    this.#tail += n;
    set.fill(0);
  }

  /** Slot `slot`'s set, a view (valid until the arena is cleared; zeroing it zeroes the set, whose space stays until the index compacts). */
  at(slot: number): Float64Array {
    const from = this.#from[slot]!;
    return this.#chunks[this.#chunkOf[slot]!]!.subarray(from, from + this.#length[slot]!);
  }

  /** Zeroes every set and drops the chunks. */
  clear(): void {
    for (const chunk of this.#chunks) chunk.fill(0);
    this.#chunks = [];
    this.#tail = 0;
    this.#chunkOf = new Int32Array(0);
    this.#from = new Int32Array(0);
    this.#length = new Int32Array(0);
  }

  #ensure(slot: number): void {
    if (slot < this.#from.length) return;
    const capacity = Math.max(1024, this.#from.length * 2, slot + 1);
    const grow = (a: Int32Array) => {
      const b = new Int32Array(capacity);
      b.set(a);
      return b;
    };
    this.#chunkOf = grow(this.#chunkOf);
    this.#from = grow(this.#from);
    this.#length = grow(this.#length);
  }
}

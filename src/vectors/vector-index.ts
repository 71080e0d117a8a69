/**
 * The in-memory vector index: brute-force cosine similarity over unit vectors kept
 * in one contiguous Float32Array. Exact (no recall loss), O(n·d) per query, 4·d bytes
 * per vector plus about 150 bytes of bookkeeping (id strings, maps). It holds
 * plaintext vectors in memory only; at rest they are sealed (see embeddings.ts), and
 * the index is rebuilt by decrypting at start-up.
 *
 * Removing by key id is how destruction reaches the index: every vector is filed
 * under the key its sealed copy depends on. The same filing scopes a search to some
 * keys (a subject's entries are filed under its live key): `searchWithin` visits
 * only their vectors.
 */
import { LetheError } from '../errors.js';
import { KeyFiling } from './key-filing.js';

export type RecordType = 'entry' | 'artifact';

export interface IndexHit {
  readonly id: string;
  readonly type: RecordType;
  readonly keyId: string;
  readonly score: number;
}

export class VectorIndex {
  readonly dimensions: number;
  #vectors: Float32Array;
  #ids: string[] = [];
  #types: RecordType[] = [];
  #keys: string[] = [];
  readonly #slot = new Map<string, number>();
  readonly #filing = new KeyFiling();

  constructor(dimensions: number, initialCapacity = 1024) {
    this.dimensions = dimensions;
    this.#vectors = new Float32Array(dimensions * initialCapacity);
  }

  get size(): number {
    return this.#ids.length;
  }

  /** Adds or replaces the vector of record `id`. */
  upsert(id: string, type: RecordType, keyId: string, vector: Float32Array): void {
    if (vector.length !== this.dimensions) throw new LetheError('internal', `vector has ${vector.length} dimensions, the index ${this.dimensions}`);
    let slot = this.#slot.get(id);
    if (slot === undefined) {
      slot = this.#ids.length;
      if ((slot + 1) * this.dimensions > this.#vectors.length) {
        const grown = new Float32Array(Math.max(this.#vectors.length * 2, (slot + 1) * this.dimensions));
        grown.set(this.#vectors);
        this.#vectors.fill(0);
        this.#vectors = grown;
      }
      this.#ids.push(id);
      this.#types.push(type);
      this.#keys.push(keyId);
      this.#slot.set(id, slot);
    } else {
      this.#filing.unfile(this.#keys[slot]!, id);
      this.#types[slot] = type;
      this.#keys[slot] = keyId;
    }
    this.#vectors.set(vector, slot * this.dimensions);
    this.#filing.file(keyId, id);
  }

  has(id: string): boolean {
    return this.#slot.has(id);
  }

  /** The key a record's vector is filed under, or undefined. */
  keyOf(id: string): string | undefined {
    const slot = this.#slot.get(id);
    return slot === undefined ? undefined : this.#keys[slot];
  }

  /** Removes one record; true when it was there. */
  remove(id: string): boolean {
    const slot = this.#slot.get(id);
    if (slot === undefined) return false;
    this.#filing.unfile(this.#keys[slot]!, id);
    const last = this.#ids.length - 1;
    const d = this.dimensions;
    if (slot !== last) {
      // move the last vector into the hole
      this.#vectors.copyWithin(slot * d, last * d, (last + 1) * d);
      const movedId = this.#ids[last]!;
      this.#ids[slot] = movedId;
      this.#types[slot] = this.#types[last]!;
      this.#keys[slot] = this.#keys[last]!;
      this.#slot.set(movedId, slot);
    }
    this.#vectors.fill(0, last * d, (last + 1) * d);
    this.#ids.pop();
    this.#types.pop();
    this.#keys.pop();
    this.#slot.delete(id);
    return true;
  }

  /** Removes every record filed under the key (it was destroyed); returns how many. */
  removeKey(keyId: string): number {
    return this.#filing.removeKey(keyId, (id) => this.remove(id));
  }

  /** A copy of record `id`'s vector (the probe compares it), or undefined. */
  vectorOf(id: string): Float32Array | undefined {
    const slot = this.#slot.get(id);
    if (slot === undefined) return undefined;
    return this.#vectors.slice(slot * this.dimensions, (slot + 1) * this.dimensions);
  }

  /** The ids filed under a key. */
  idsOfKey(keyId: string): string[] {
    return this.#filing.ids(keyId);
  }

  /** The `k` nearest records by cosine similarity, best first. */
  search(query: Float32Array, k: number, filter?: (id: string, type: RecordType) => boolean): IndexHit[] {
    return this.#rank(query, k, undefined, filter);
  }

  /**
   * The `k` nearest records among those filed under `scope.keyIds` and those named by
   * `scope.ids`, best first: a scoped search visits only those records' vectors (never
   * the whole index), so its cost follows the scope, not the store.
   */
  searchWithin(
    query: Float32Array,
    k: number,
    scope: { readonly keyIds?: Iterable<string>; readonly ids?: Iterable<string> },
    filter?: (id: string, type: RecordType) => boolean,
  ): IndexHit[] {
    const slots = new Set<number>();
    for (const keyId of scope.keyIds ?? []) {
      for (const id of this.#filing.each(keyId)) slots.add(this.#slot.get(id)!);
    }
    for (const id of scope.ids ?? []) {
      const slot = this.#slot.get(id);
      if (slot !== undefined) slots.add(slot);
    }
    // in slot order, as search() visits them: equal scores rank the same way in both
    return this.#rank(query, k, Int32Array.from(slots).sort(), filter);
  }

  /** Brute force over the given slots (all of them when undefined): the `k` best, best first. */
  #rank(query: Float32Array, k: number, slots: Int32Array | undefined, filter?: (id: string, type: RecordType) => boolean): IndexHit[] {
    if (query.length !== this.dimensions) throw new LetheError('internal', 'query vector has the wrong dimensions');
    if (k <= 0 || this.#ids.length === 0) return [];
    const d = this.dimensions;
    const v = this.#vectors;
    // a small sorted array beats a heap for the k values we serve (≤ 100)
    const topScores: number[] = [];
    const topSlots: number[] = [];
    for (let j = 0, n = slots ? slots.length : this.#ids.length; j < n; j++) {
      const slot = slots ? slots[j]! : j;
      let dot = 0;
      const base = slot * d;
      for (let i = 0; i < d; i++) dot += v[base + i]! * query[i]!;
      if (topScores.length === k && dot <= topScores[k - 1]!) continue;
      if (filter && !filter(this.#ids[slot]!, this.#types[slot]!)) continue;
      let at = topScores.length;
      while (at > 0 && topScores[at - 1]! < dot) at--;
      topScores.splice(at, 0, dot);
      topSlots.splice(at, 0, slot);
      if (topScores.length > k) {
        topScores.pop();
        topSlots.pop();
      }
    }
    return topSlots.map((slot, i) => ({ id: this.#ids[slot]!, type: this.#types[slot]!, keyId: this.#keys[slot]!, score: topScores[i]! }));
  }

  /**
   * The `k` nearest records, and beyond them every record at or above `floor`, up to
   * `limit` in all (an adaptive k: as many as are that close), best first.
   */
  neighbours(query: Float32Array, options: { k: number; floor: number; limit: number }): IndexHit[] {
    const hits = this.search(query, Math.max(options.k, options.limit));
    let n = Math.min(options.k, hits.length);
    while (n < hits.length && hits[n]!.score >= options.floor) n++;
    return hits.slice(0, n);
  }

  /** Zeroes and drops everything, and gives the memory back. */
  clear(): void {
    this.#vectors.fill(0);
    this.#vectors = new Float32Array(this.dimensions * 1024);
    this.#ids = [];
    this.#types = [];
    this.#keys = [];
    this.#slot.clear();
    this.#filing.clear();
  }
}

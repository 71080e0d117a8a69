/**
 * The in-memory vector index: each record's vector held as int8 with one scale (the
 * form it is sealed in at rest: sealed-form.ts), 516 bytes a vector at 512 dimensions,
 * in blocks of 4,096 slots (vector-slots.ts); an HNSW graph over the signs of the same
 * int8 vectors (hnsw.ts, usearch) to find a query's candidates without visiting every vector; and
 * every answer ranked by the exact score, `scale · Σ q[i]·query[i]` (the dot product of
 * the query with the vector as it reads back from its sealed form: exact-rank.ts).
 *
 * - `search` asks the graph for `candidates` (256) or more and ranks those exactly: an
 *   approximate nearest-neighbour search (recall@10 against exact ranking: bench/search.ts),
 *   cost about logarithmic in the index. Up to `exactUpTo` (1,024) records, and when
 *   the filter leaves too few of ever more candidates, it ranks every vector instead.
 * - A record can be filed before it is in the graph (`upsertMany(…, { graphLater })`:
 *   the rebuild, so an index is searchable once its rows are opened, not once its graph
 *   is built — building the graph costs several times what opening does). Until a
 *   background task has inserted it (GRAPH_PER_TURN a turn, once `resumeGraph` lets
 *   it), every search ranks it exactly besides the graph's candidates: answers stay
 *   complete, and cost more while many wait.
 * - `searchWithin` ranks exactly the vectors of its scope (the keys' filings, the ids
 *   named), never the whole index: its cost follows the scope, not the store.
 * - A vector of zeros has no direction: it stays out of the graph (exact rankings still
 *   see it, at score 0).
 *
 * Removing by key id is how destruction reaches the index: every vector is filed under
 * the key its sealed copy depends on (key-filing.ts), and `removeKey` takes the key's
 * records out of the answers at once — the int8 copy is zeroed, the graph node becomes
 * a tombstone — and schedules the graph's scrub (the removed slots' native copies are
 * overwritten within a few event-loop turns: hnsw.ts).
 */
import { LetheError } from '../errors.js';
import { type IndexHit, prepare, rankExact } from './exact-rank.js';
import { type GraphOptions, Graph } from './hnsw.js';
import { KeyFiling } from './key-filing.js';
import { type QuantisedVector, quantise } from './sealed-form.js';
import { type RecordType, VectorSlots } from './vector-slots.js';

export type { IndexHit, RecordType };

export interface VectorIndexOptions extends GraphOptions {
  /** Up to this many records a search ranks every vector exactly, without the graph. */
  readonly exactUpTo?: number;
  /** Candidates asked of the graph per search (at least k), then ranked exactly. */
  readonly candidates?: number;
}

/** A record for `upsertMany`. */
export interface IndexedVector {
  readonly id: string;
  readonly type: RecordType;
  readonly keyId: string;
  /** The vector, or its stored form (int8 and its scale: a rebuild's opened rows, filed without a float32 copy between). */
  readonly vector: Float32Array | QuantisedVector;
}

export const DEFAULT_EXACT_UP_TO = 1024;
export const DEFAULT_CANDIDATES = 256;
/** Removed slots scrubbed per event-loop turn (each an insertion into the graph). */
const SCRUB_PER_TURN = 16;
/** Records waiting for the graph inserted per event-loop turn (on several threads). */
const GRAPH_PER_TURN = 256;

export class VectorIndex {
  readonly dimensions: number;
  readonly #exactUpTo: number;
  readonly #candidates: number;
  readonly #graphOptions: GraphOptions;
  #graph: Graph;
  readonly #slots: VectorSlots;
  readonly #filing = new KeyFiling();
  #scrubbing: NodeJS.Immediate | undefined;
  /** Callers of `scrubbed()` waiting for the scrub to reach every removed slot. */
  #scrubWaiters: Array<() => void> = [];
  /** Slots filed but not yet in the graph (searches rank them exactly), oldest first. */
  #pending = new Set<number>();
  #graphing: NodeJS.Immediate | undefined;
  #graphPaused = false;

  /** `options` as a number is the initial capacity of earlier versions (storage now grows by blocks). */
  constructor(dimensions: number, options: number | VectorIndexOptions = {}) {
    const o = typeof options === 'number' ? {} : options;
    this.dimensions = dimensions;
    this.#exactUpTo = o.exactUpTo ?? DEFAULT_EXACT_UP_TO;
    this.#candidates = Math.max(1, o.candidates ?? DEFAULT_CANDIDATES);
    this.#graphOptions = { connectivity: o.connectivity, expansionAdd: o.expansionAdd, expansionSearch: o.expansionSearch };
    this.#graph = new Graph(dimensions, this.#graphOptions);
    this.#slots = new VectorSlots(dimensions);
  }

  get size(): number {
    return this.#slots.size;
  }

  /** Records filed but not yet in the graph (a background task inserts them; searches rank them exactly meanwhile). */
  get graphPending(): number {
    return this.#pending.size;
  }

  /** Removed vectors whose copy in the graph's native memory is not overwritten yet (the scrub runs in the background). */
  get unscrubbed(): number {
    return this.#graph.unscrubbed;
  }

  /** Adds or replaces the vector of record `id`. */
  upsert(id: string, type: RecordType, keyId: string, vector: Float32Array): void {
    this.upsertMany([{ id, type, keyId, vector }]);
  }

  /**
   * Adds or replaces many records' vectors; their graph insertions run as one batch on
   * several threads (the caller's thread waits for them: keep batches to a few hundred
   * where requests are being served) — or, with `graphLater`, in the background (the
   * records are answered at once all the same: searches rank them exactly until then).
   */
  upsertMany(records: Iterable<IndexedVector>, options: { readonly graphLater?: boolean } = {}): void {
    const d = this.dimensions;
    const batch = [...records];
    for (const r of batch) {
      const n = r.vector instanceof Float32Array ? r.vector.length : r.vector.q.length;
      if (n !== d) throw new LetheError('internal', `vector has ${n} dimensions, the index ${d}`);
    }
    const replaced: number[] = [];
    const toGraph = new Set<number>();
    const s = this.#slots;
    for (const r of batch) {
      let slot = s.slotOf(r.id);
      if (slot === undefined) slot = s.claim(r.id);
      else if (s.inGraph[slot] && s.holds(slot, r.type, r.vector)) {
        // the same vector under another key (a re-key's survivor): filed anew, its graph node kept
        this.#filing.unfile(s.keys[slot]!, r.id);
        this.#filing.file(r.keyId, r.id);
        s.keys[slot] = r.keyId;
        continue;
      } else {
        this.#filing.unfile(s.keys[slot]!, r.id);
        this.#pending.delete(slot);
        if (s.inGraph[slot]) {
          replaced.push(slot);
          s.inGraph[slot] = 0;
        }
      }
      this.#filing.file(r.keyId, r.id);
      const nonZero = s.write(slot, r.type, r.keyId, r.vector);
      toGraph.delete(slot);
      if (nonZero && options.graphLater) this.#pending.add(slot);
      else if (nonZero) toGraph.add(slot);
    }
    this.#graph.remove(replaced);
    if (toGraph.size > 0) {
      this.#graph.add([...toGraph], (slot) => s.q(slot));
      for (const slot of toGraph) s.inGraph[slot] = 1;
    }
    this.#scheduleScrub();
    this.#scheduleGraph();
  }

  /** Holds back the background graph insertions (a rebuild opening rows wants the cores). */
  pauseGraph(): void {
    this.#graphPaused = true;
  }

  resumeGraph(): void {
    this.#graphPaused = false;
    this.#scheduleGraph();
  }

  /** Inserts up to `max` waiting records into the graph now; answers how many still wait. */
  buildGraph(max = Number.POSITIVE_INFINITY): number {
    while (max > 0 && this.#pending.size > 0) {
      const n = Math.min(max, this.#pending.size, 4096);
      const slots: number[] = [];
      for (const slot of this.#pending) {
        if (slots.length === n) break;
        slots.push(slot);
      }
      this.#graph.add(slots, (slot) => this.#slots.q(slot));
      for (const slot of slots) {
        this.#pending.delete(slot);
        this.#slots.inGraph[slot] = 1;
      }
      max -= n;
    }
    return this.#pending.size;
  }

  /**
   * The background graph build, GRAPH_PER_TURN records a turn. Its immediates keep the
   * event loop turning, as the scrub's do: unref'd, an otherwise idle replica built one
   * turn per timer tick. `clear()` (close) replaces the graph, which ends the chain.
   */
  #scheduleGraph(): void {
    if (this.#graphing || this.#graphPaused || this.#pending.size === 0) return;
    const graph = this.#graph;
    const turn = () => {
      this.#graphing = undefined;
      if (graph !== this.#graph || this.#graphPaused) return;
      if (this.buildGraph(GRAPH_PER_TURN) > 0) this.#scheduleGraph();
    };
    this.#graphing = setImmediate(turn);
  }

  has(id: string): boolean {
    return this.#slots.slotOf(id) !== undefined;
  }

  /** The key a record's vector is filed under, or undefined. */
  keyOf(id: string): string | undefined {
    const slot = this.#slots.slotOf(id);
    return slot === undefined ? undefined : this.#slots.keys[slot];
  }

  /** Removes one record; true when it was there. */
  remove(id: string): boolean {
    const gone: number[] = [];
    const removed = this.#removeSlot(id, gone);
    this.#graph.remove(gone);
    this.#scheduleScrub();
    return removed;
  }

  /** Removes every record filed under the key (it was destroyed); returns how many. */
  removeKey(keyId: string): number {
    const gone: number[] = [];
    const n = this.#filing.removeKey(keyId, (id) => this.#removeSlot(id, gone));
    this.#graph.remove(gone);
    this.#scheduleScrub();
    return n;
  }

  /** Takes a record out of the answers and zeroes its vector; its graph key joins `gone` (removed by the caller, in one call). */
  #removeSlot(id: string, gone: number[]): boolean {
    const slot = this.#slots.slotOf(id);
    if (slot === undefined) return false;
    this.#filing.unfile(this.#slots.keys[slot]!, id);
    if (this.#slots.inGraph[slot]) gone.push(slot);
    this.#pending.delete(slot);
    this.#slots.release(slot);
    return true;
  }

  /**
   * Overwrites up to `max` removed vectors' copies in the graph's native memory now
   * (the index does it in the background, SCRUB_PER_TURN a turn); answers how many are
   * left.
   */
  scrub(max = Number.POSITIVE_INFINITY): number {
    return this.#graph.scrub(max);
  }

  /**
   * Resolves once no removed vector's copy is left in the graph's native memory (the
   * background scrub has reached every removed slot so far), at once when none is.
   */
  scrubbed(): Promise<void> {
    if (this.#graph.unscrubbed === 0) return Promise.resolve();
    this.#scheduleScrub();
    return new Promise((resolve) => this.#scrubWaiters.push(resolve));
  }

  /**
   * The background scrub, SCRUB_PER_TURN slots a turn. Its immediates keep the event
   * loop turning (not unref'd): an unref'd immediate on an otherwise idle replica waits
   * for the next timer, a turn a second or so, and a destruction's acknowledgement waits
   * for this scrub (`scrubbed`).
   */
  #scheduleScrub(): void {
    if (this.#scrubbing || this.#graph.unscrubbed === 0) return;
    const graph = this.#graph;
    const turn = () => {
      this.#scrubbing = undefined;
      // a cleared index dropped this graph (clear scrubbed it first)
      if (graph !== this.#graph) return this.#wakeScrubWaiters();
      if (graph.scrub(SCRUB_PER_TURN) > 0) this.#scrubbing = setImmediate(turn);
      else this.#wakeScrubWaiters();
    };
    this.#scrubbing = setImmediate(turn);
  }

  #wakeScrubWaiters(): void {
    const waiters = this.#scrubWaiters;
    this.#scrubWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /** A copy of record `id`'s vector as it reads back from its sealed form (the probe compares it), or undefined. */
  vectorOf(id: string): Float32Array | undefined {
    const slot = this.#slots.slotOf(id);
    return slot === undefined ? undefined : this.#slots.vectorOf(slot);
  }

  /** The ids filed under a key. */
  idsOfKey(keyId: string): string[] {
    return this.#filing.ids(keyId);
  }

  /**
   * The `k` nearest records by cosine similarity, best first: candidates from the
   * graph (approximate), ranked by their exact scores; every vector ranked exactly up
   * to `exactUpTo` records.
   */
  search(query: Float32Array, k: number, filter?: (id: string, type: RecordType) => boolean): IndexHit[] {
    this.#checkQuery(query);
    const n = this.#slots.size;
    if (k <= 0 || n === 0) return [];
    const prepared = prepare(query);
    // most of the index still waiting for the graph: ranking every vector costs less than the graph plus them
    if (n <= this.#exactUpTo || k >= n || prepared.dims.length === 0 || this.#pending.size >= n / 2)
      return rankExact(this.#slots, prepared, k, undefined, filter);
    const q8 = quantise(query).q;
    let want = Math.max(k, this.#candidates);
    for (;;) {
      const found = this.#graph.search(q8, want);
      const count = found.length;
      // the graph's candidates, and every record not in it yet
      const slots = new Int32Array(count + this.#pending.size);
      slots.set(found);
      let at = count;
      for (const slot of this.#pending) slots[at++] = slot;
      const hits = rankExact(this.#slots, prepared, k, slots.sort(), filter);
      // enough kept, or the graph has no more to give
      if (hits.length === k || count < want || want >= this.#graph.size) return hits;
      want *= 4;
      // a filter refusing most of the index: ranking every vector costs less than asking the graph for most of them
      if (want >= n / 4) return rankExact(this.#slots, prepared, k, undefined, filter);
    }
  }

  /**
   * The `k` nearest records among those filed under `scope.keyIds` and those named by
   * `scope.ids`, best first, ranked exactly: a scoped search visits only those records'
   * vectors (never the whole index), so its cost follows the scope, not the store.
   */
  searchWithin(
    query: Float32Array,
    k: number,
    scope: { readonly keyIds?: Iterable<string>; readonly ids?: Iterable<string> },
    filter?: (id: string, type: RecordType) => boolean,
  ): IndexHit[] {
    this.#checkQuery(query);
    const slots = new Set<number>();
    for (const keyId of scope.keyIds ?? []) {
      for (const id of this.#filing.each(keyId)) slots.add(this.#slots.slotOf(id)!);
    }
    for (const id of scope.ids ?? []) {
      const slot = this.#slots.slotOf(id);
      if (slot !== undefined) slots.add(slot);
    }
    if (k <= 0 || slots.size === 0) return [];
    // in slot order, as an exact search() visits them: equal scores rank the same way in both
    return rankExact(this.#slots, prepare(query), k, Int32Array.from(slots).sort(), filter);
  }

  #checkQuery(query: Float32Array): void {
    if (query.length !== this.dimensions) throw new LetheError('internal', 'query vector has the wrong dimensions');
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

  /** Zeroes and drops everything (the graph's removed slots scrubbed first), and gives the memory back. */
  clear(): void {
    this.#slots.clear();
    this.#graph.scrub();
    this.#graph = new Graph(this.dimensions, this.#graphOptions);
    this.#pending = new Set();
    this.#filing.clear();
    // the old graph's removed slots were scrubbed above
    this.#wakeScrubWaiters();
  }
}

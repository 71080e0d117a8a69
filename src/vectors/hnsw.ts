/**
 * The HNSW graph the vector index navigates by: usearch's native index (npm `usearch`,
 * pinned to an exact version in package.json), over each vector's signs only — two bits
 * a dimension (positive, negative; zero is neither), Hamming distance — so that its
 * native copy is 2·d bits instead of d bytes: the index's own int8 copy (vector-slots.ts)
 * is what every candidate is ranked by, exactly, and the graph only has to bring the
 * right ones among its candidates (recall@10 against brute force: bench/search.ts).
 *
 * Loaded below usearch's JavaScript wrapper, from the same prebuilt addon the wrapper
 * loads (node-gyp-build, usearch's own dependency), because the wrapper converts every
 * vector to Float32Array first. The addon casts an Int8Array to bits by `x > 0`, so the
 * codes are handed to it as 0/1 bytes; their length is kept a multiple of 8 (the cast
 * leaves a partial last byte's other bits as they were).
 *
 * A removed key only becomes a tombstone in usearch: the slot, and the code of the
 * vector in it, stay until an insertion reuses the slot (usearch reuses removed slots
 * first, oldest first). `Graph` tracks how many removed slots hold a code no
 * insertion has overwritten yet, and `scrub` overwrites them with placeholder nodes of
 * random vectors (never answered), so a destroyed key's vectors leave native memory
 * too, not only the index's answers. The next real insertions take the placeholders'
 * slots back.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { LetheError } from '../errors.js';

/** The addon's index class, as usearch's wrapper calls it (usearch 2.25.3, javascript/lib.cpp). */
interface CompiledIndex {
  add(keys: BigUint64Array, vectors: Int8Array, threads: number): void;
  search(vectors: Int8Array, k: number, threads: number): [keys: BigUint64Array, distances: Float32Array, counts: BigUint64Array];
  remove(keys: BigUint64Array): number[];
  size(): number;
  capacity(): number;
}

interface Addon {
  CompiledIndex: new (
    dimensions: number,
    metric: string,
    quantization: string,
    connectivity: number,
    expansionAdd: number,
    expansionSearch: number,
    multi: boolean,
  ) => CompiledIndex;
  version?: () => string;
}

let addon: Addon | undefined;

function load(): Addon {
  if (addon) return addon;
  try {
    const require = createRequire(import.meta.url);
    // usearch's entry point is javascript/dist/<cjs|esm>/usearch.js: its package root is three levels up
    const entry = require.resolve('usearch');
    const root = path.resolve(path.dirname(entry), '..', '..', '..');
    const build = createRequire(entry)('node-gyp-build') as (dir: string) => Addon;
    const loaded = build(root);
    if (typeof loaded.CompiledIndex !== 'function') throw new Error('the usearch addon has no CompiledIndex');
    addon = loaded;
    return loaded;
  } catch (cause) {
    throw new LetheError('internal', 'the vector index could not load usearch (npm install usearch)', { cause });
  }
}

/**
 * Graph parameters. usearch's defaults except:
 * - expansionAdd 64 rather than 128: it halves what building the graph costs (the
 *   rebuild's bound) for recall@10 within a point of it once a search's 256 candidates
 *   are ranked exactly (bench/search.ts);
 * - connectivity 14 rather than 16: usearch allocates nodes in 64-byte steps, and a
 *   bottom-layer node (key, level, count, 2·M four-byte links) is 126 bytes at 14, 142
 *   at 16: 128 bytes a node instead of 192, for recall@10 within a few thousandths.
 */
export interface GraphOptions {
  /** Neighbours per node (M); a node at the bottom layer keeps twice as many. */
  readonly connectivity?: number;
  /** Candidates considered when linking a new node (efConstruction). */
  readonly expansionAdd?: number;
  /** Candidates considered by a search (ef); a search asking for more uses that many. */
  readonly expansionSearch?: number;
}

export const DEFAULT_CONNECTIVITY = 14;
export const DEFAULT_EXPANSION_ADD = 64;
export const DEFAULT_EXPANSION_SEARCH = 64;

/** Keys at and above this are placeholder nodes (scrubbed slots), never records. */
const PLACEHOLDER_BASE = 1n << 62n;

/**
 * usearch finds a key's slot in an open-addressing table by the key's low bits (its
 * hash of an integer is the integer): sequential keys would fill one run that every
 * removal and every re-used key scans. Keys are the record's index slot scrambled by
 * a bijection on 32 bits (xor-shift, odd multiply, xor-shift), undone on the way back.
 */
const MIX = 0x45d9f3b;
const UNMIX = (() => {
  // the inverse of MIX modulo 2^32 (Newton's iteration: each step doubles the correct bits)
  let inv = MIX;
  for (let i = 0; i < 5; i++) inv = Math.imul(inv, 2 - Math.imul(MIX, inv));
  return inv >>> 0;
})();

function scramble(x: number): number {
  x = (x ^ (x >>> 16)) >>> 0;
  x = Math.imul(x, MIX) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
}

function unscramble(y: number): number {
  y = (y ^ (y >>> 16)) >>> 0;
  y = Math.imul(y, UNMIX) >>> 0;
  return (y ^ (y >>> 16)) >>> 0;
}

function keysOf(slots: ArrayLike<number>): BigUint64Array {
  const keys = new BigUint64Array(slots.length);
  for (let i = 0; i < slots.length; i++) keys[i] = BigInt(scramble(slots[i]!));
  return keys;
}

/** Threads a batch insertion uses (a single insertion runs on the calling thread). */
export const GRAPH_THREADS = Math.max(1, Math.min(8, os.availableParallelism()));

/** Vectors coded and handed to usearch per call: bounds the scratch buffer (1 KB a vector at 512 dimensions). */
const CODE_CHUNK = 256;

/**
 * The sign codes of `n` int8 vectors (`vectorAt(i)`, `d` dimensions each) into `codes`
 * (zeroed): 0/1 bytes, two a dimension, each row padded to `width`.
 */
function signCodes(codes: Int8Array, vectorAt: (i: number) => Int8Array, n: number, d: number, width: number): Int8Array {
  const out = codes.subarray(0, n * width);
  for (let i = 0; i < n; i++) {
    const v = vectorAt(i);
    const to = i * width;
    for (let j = 0; j < d; j++) {
      const x = v[j]!;
      if (x > 0) out[to + 2 * j] = 1;
      else if (x < 0) out[to + 2 * j + 1] = 1;
    }
  }
  return out;
}

export class Graph {
  /** The vectors' dimensions (the native index holds `width` bits a vector). */
  readonly dimensions: number;
  readonly #width: number;
  /** Where codes are written for the addon to copy: kept (zeroed after each use), so that building a graph does not churn native memory. */
  #codes = new Int8Array(0);
  #native: CompiledIndex;
  /** Removed slots usearch will hand to the next insertions, their old vectors still in them. */
  #unscrubbed = 0;
  /** Placeholder nodes holding scrubbed slots. */
  readonly #placeholders: bigint[] = [];
  #nextPlaceholder = 0n;

  constructor(dimensions: number, options: GraphOptions = {}) {
    this.dimensions = dimensions;
    this.#width = Math.ceil((2 * dimensions) / 8) * 8;
    const { CompiledIndex } = load();
    this.#native = new CompiledIndex(
      this.#width,
      'hamming',
      'b1',
      options.connectivity ?? DEFAULT_CONNECTIVITY,
      options.expansionAdd ?? DEFAULT_EXPANSION_ADD,
      options.expansionSearch ?? DEFAULT_EXPANSION_SEARCH,
      false,
    );
  }

  /** `fn` given the codes of `n` vectors (at most CODE_CHUNK), written in the scratch buffer and zeroed again after. */
  #withCodes<T>(vectorAt: (i: number) => Int8Array, n: number, fn: (codes: Int8Array) => T): T {
    if (this.#codes.length < n * this.#width) this.#codes = new Int8Array(n * this.#width);
    try {
      return fn(signCodes(this.#codes, vectorAt, n, this.dimensions, this.#width));
    } finally {
      this.#codes.fill(0, 0, n * this.#width);
    }
  }

  /** Nodes answering searches (records; placeholders excluded). */
  get size(): number {
    return this.#native.size() - this.#placeholders.length;
  }

  /** Removed slots whose old vectors no insertion has overwritten yet. */
  get unscrubbed(): number {
    return this.#unscrubbed;
  }

  /**
   * Inserts the int8 vectors of these index slots (below 2^32; `vectorOf(slot)`, read
   * as they are coded) as those records; several at once run on GRAPH_THREADS threads
   * (synchronously: the caller's thread waits).
   */
  add(slots: readonly number[], vectorOf: (slot: number) => Int8Array): void {
    const n = slots.length;
    if (n === 0) return;
    // placeholders give their slots back first (each removal queues its slot for the next insertion)
    const reclaim = Math.min(this.#placeholders.length, Math.max(0, n - this.#unscrubbed));
    if (reclaim > 0) {
      this.#native.remove(BigUint64Array.from(this.#placeholders.splice(this.#placeholders.length - reclaim, reclaim)));
      this.#unscrubbed += reclaim;
    }
    let inserted = 0;
    try {
      for (; inserted < n; inserted += CODE_CHUNK) {
        const chunk = slots.slice(inserted, inserted + CODE_CHUNK);
        this.#insert(keysOf(chunk), (i) => this.#checked(vectorOf(chunk[i]!)), chunk.length);
      }
    } catch (e) {
      // all or none: the chunks already in go again (to be scrubbed), so no node outlives a caller that thinks it was never added
      this.#unscrubbed = Math.max(0, this.#unscrubbed - inserted);
      this.remove(slots.slice(0, inserted));
      throw e;
    }
    this.#unscrubbed = Math.max(0, this.#unscrubbed - n);
  }

  #checked(vector: Int8Array): Int8Array {
    if (vector.length !== this.dimensions)
      throw new LetheError('internal', `graph insertion: a vector of ${vector.length} dimensions, the graph ${this.dimensions}`);
    return vector;
  }

  /** `n` (at most CODE_CHUNK) nodes into usearch. */
  #insert(keys: BigUint64Array, vectorAt: (i: number) => Int8Array, n: number): void {
    // threads: every call passes the same count, which usearch also reserves per-thread state for
    this.#withCodes(vectorAt, n, (codes) => this.#native.add(keys, codes, GRAPH_THREADS));
  }

  /** Removes the records of these index slots; answers how many were there. Their graph slots join the unscrubbed until reused or scrubbed. */
  remove(slots: ArrayLike<number>): number {
    if (slots.length === 0) return 0;
    let n = 0;
    for (const c of this.#native.remove(keysOf(slots))) n += c;
    this.#unscrubbed += n;
    return n;
  }

  /**
   * Overwrites up to `max` removed slots with placeholder nodes (random vectors, never
   * answered): a removed vector's sign code leaves native memory. Answers how many
   * slots are still unscrubbed. Each costs an insertion (a graph search).
   */
  scrub(max = Number.POSITIVE_INFINITY): number {
    const n = Math.min(max, this.#unscrubbed);
    if (n <= 0) return this.#unscrubbed;
    const keys = new BigUint64Array(n);
    for (let i = 0; i < n; i++) {
      const c = this.#nextPlaceholder++;
      keys[i] = PLACEHOLDER_BASE + ((c >> 32n) << 32n) + BigInt(scramble(Number(c & 0xffffffffn)));
    }
    // random sparse vectors (an eighth of the dimensions, at least one): quick to link, near no record in particular
    const d = this.dimensions;
    const noise = randomBytes(n * d * 2);
    const vectors = new Int8Array(n * d);
    for (let i = 0; i < n * d; i++) if ((noise[i]! & 7) === 0) vectors[i] = (noise[n * d + i]! % 255) - 127;
    for (let i = 0; i < n; i++) vectors[i * d] ||= 1;
    for (let from = 0; from < n; from += CODE_CHUNK) {
      const m = Math.min(CODE_CHUNK, n - from);
      this.#insert(keys.subarray(from, from + m), (i) => vectors.subarray((from + i) * d, (from + i + 1) * d), m);
    }
    this.#placeholders.push(...keys);
    this.#unscrubbed -= n;
    return this.#unscrubbed;
  }

  /**
   * The index slots of the `want` nodes nearest an int8 query by the graph
   * (approximate), nearest first; placeholders left out.
   */
  search(query: Int8Array, want: number): number[] {
    if (this.#native.size() === 0) return [];
    const [keys, , counts] = this.#withCodes(
      () => query,
      1,
      (codes) => this.#native.search(codes, Math.max(1, want), 1),
    );
    const count = Number(counts[0] ?? 0);
    const slots: number[] = [];
    for (let i = 0; i < count; i++) if (keys[i]! < PLACEHOLDER_BASE) slots.push(unscramble(Number(keys[i]!)));
    return slots;
  }
}

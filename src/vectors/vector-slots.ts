/**
 * The vector index's storage (vector-index.ts): a slot per record holding its vector as
 * int8 with one scale (the form it is sealed in at rest: sealed-form.ts), 516 bytes a
 * vector at 512 dimensions, in blocks of BLOCK slots, beside the record's id, type and
 * key. A removed record's slot is zeroed at once and reused by the next record. No graph
 * and no search here: the index decides what goes in the graph, exact-rank.ts scores
 * over these arrays.
 */
import { IdTable } from './id-table.js';
import { type QuantisedVector, quantise } from './sealed-form.js';

export type RecordType = 'entry' | 'artifact';

/** A slot's type, by its number in `types`. */
export const TYPES: readonly RecordType[] = ['entry', 'artifact'];
/** Slots per block of int8 vectors. */
export const BLOCK = 4096;

export class VectorSlots {
  readonly dimensions: number;
  blocks: Int8Array[] = [];
  scales = new Float32Array(0);
  types = new Uint8Array(0);
  /** 1 when the slot's vector is in the graph (not all zeros); the index keeps it. */
  inGraph = new Uint8Array(0);
  ids: Array<string | undefined> = [];
  keys: Array<string | undefined> = [];
  #free: number[] = [];
  readonly #slot = new IdTable((slot) => this.ids[slot]);

  constructor(dimensions: number) {
    this.dimensions = dimensions;
  }

  get size(): number {
    return this.#slot.size;
  }

  slotOf(id: string): number | undefined {
    return this.#slot.get(id);
  }

  /** A slot for a record not held yet (a free one, or a new one). */
  claim(id: string): number {
    const slot = this.#free.pop() ?? this.ids.length;
    this.#ensure(slot);
    this.ids[slot] = id;
    this.#slot.set(id, slot);
    return slot;
  }

  /** Writes a record's type, key and vector (quantised, unless it comes so); true when the vector is not all zeros. */
  write(slot: number, type: RecordType, keyId: string, vector: Float32Array | QuantisedVector): boolean {
    const d = this.dimensions;
    this.types[slot] = type === 'artifact' ? 1 : 0;
    this.keys[slot] = keyId;
    const { scale, q } = vector instanceof Float32Array ? quantise(vector) : vector;
    const block = this.blocks[Math.floor(slot / BLOCK)]!;
    const at = (slot % BLOCK) * d;
    block.set(q, at);
    let nonZero = false;
    for (let i = 0; i < d; i++) if (q[i] !== 0) nonZero = true;
    if (vector instanceof Float32Array) q.fill(0);
    this.scales[slot] = scale;
    return nonZero;
  }

  /** Whether the slot holds `vector` (as quantised) for a record of `type`: a re-key's survivor, filed again without touching the graph. */
  holds(slot: number, type: RecordType, vector: Float32Array | QuantisedVector): boolean {
    if (this.types[slot] !== (type === 'artifact' ? 1 : 0)) return false;
    const { scale, q } = vector instanceof Float32Array ? quantise(vector) : vector;
    try {
      if (this.scales[slot] !== scale) return false;
      const held = this.q(slot);
      for (let i = 0; i < q.length; i++) if (held[i] !== q[i]) return false;
      return true;
    } finally {
      if (vector instanceof Float32Array) q.fill(0);
    }
  }

  /** Zeroes a record's slot and frees it for the next record. */
  release(slot: number): void {
    this.#slot.delete(this.ids[slot]!);
    this.inGraph[slot] = 0;
    this.q(slot).fill(0);
    this.scales[slot] = 0;
    this.ids[slot] = undefined;
    this.keys[slot] = undefined;
    this.#free.push(slot);
  }

  /** The int8 vector of a slot (a view into its block). */
  q(slot: number): Int8Array {
    const d = this.dimensions;
    const at = (slot % BLOCK) * d;
    return this.blocks[Math.floor(slot / BLOCK)]!.subarray(at, at + d);
  }

  /** A copy of a slot's vector as it reads back from its sealed form. */
  vectorOf(slot: number): Float32Array {
    const q = this.q(slot);
    const scale = this.scales[slot]!;
    const out = new Float32Array(this.dimensions);
    for (let i = 0; i < out.length; i++) out[i] = q[i]! * scale;
    return out;
  }

  /** Zeroes and drops every slot, and gives the memory back. */
  clear(): void {
    for (const block of this.blocks) block.fill(0);
    this.scales.fill(0);
    this.blocks = [];
    this.scales = new Float32Array(0);
    this.types = new Uint8Array(0);
    this.inGraph = new Uint8Array(0);
    this.ids = [];
    this.keys = [];
    this.#free = [];
    this.#slot.clear();
  }

  /** Makes room for `slot`. */
  #ensure(slot: number): void {
    while (this.blocks.length * BLOCK <= slot) this.blocks.push(new Int8Array(BLOCK * this.dimensions));
    if (slot >= this.scales.length) {
      const capacity = Math.max(BLOCK, this.scales.length * 2, slot + 1);
      const scales = new Float32Array(capacity);
      scales.set(this.scales);
      this.scales.fill(0);
      this.scales = scales;
      const types = new Uint8Array(capacity);
      types.set(this.types);
      this.types = types;
      const inGraph = new Uint8Array(capacity);
      inGraph.set(this.inGraph);
      this.inGraph = inGraph;
    }
  }
}

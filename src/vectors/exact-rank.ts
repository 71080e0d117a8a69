/**
 * The vector index's exact ranking (vector-index.ts): a record's score is
 * `scale · Σ q[i]·query[i]`, the query's dot product with the vector as it reads back
 * from its sealed form, summed over the query's non-zero dimensions only; the `k` best
 * are kept in a small sorted array. Every answer the index gives is ranked here, whether
 * its candidates came from the graph, a scope, or every slot.
 */
import { BLOCK, type RecordType, TYPES, type VectorSlots } from './vector-slots.js';

export interface IndexHit {
  readonly id: string;
  readonly type: RecordType;
  readonly keyId: string;
  readonly score: number;
}

/** A query prepared for exact scoring: its non-zero dimensions and their values. */
export interface Prepared {
  readonly dims: Int32Array;
  readonly values: Float64Array;
}

export function prepare(query: Float32Array): Prepared {
  let n = 0;
  for (let i = 0; i < query.length; i++) if (query[i] !== 0) n++;
  const dims = new Int32Array(n);
  const values = new Float64Array(n);
  for (let i = 0, j = 0; i < query.length; i++) {
    if (query[i] !== 0) {
      dims[j] = i;
      values[j++] = query[i]!;
    }
  }
  return { dims, values };
}

/** Exact scores over the given slots in order (every live slot when undefined): the `k` best, best first; ties keep slot order. */
export function rankExact(
  s: VectorSlots,
  query: Prepared,
  k: number,
  slots: Int32Array | undefined,
  filter?: (id: string, type: RecordType) => boolean,
): IndexHit[] {
  if (k <= 0) return [];
  const d = s.dimensions;
  const { dims, values } = query;
  const m = dims.length;
  // a small sorted array beats a heap for the k values we serve (≤ 100)
  const topScores: number[] = [];
  const topSlots: number[] = [];
  const n = slots ? slots.length : s.ids.length;
  for (let j = 0; j < n; j++) {
    const slot = slots ? slots[j]! : j;
    const id = s.ids[slot];
    if (id === undefined) continue;
    const block = s.blocks[Math.floor(slot / BLOCK)]!;
    const base = (slot % BLOCK) * d;
    let dot = 0;
    for (let i = 0; i < m; i++) dot += block[base + dims[i]!]! * values[i]!;
    dot *= s.scales[slot]!;
    if (topScores.length === k && dot <= topScores[k - 1]!) continue;
    if (filter && !filter(id, TYPES[s.types[slot]!]!)) continue;
    let at = topScores.length;
    while (at > 0 && topScores[at - 1]! < dot) at--;
    topScores.splice(at, 0, dot);
    topSlots.splice(at, 0, slot);
    if (topScores.length > k) {
      topScores.pop();
      topSlots.pop();
    }
  }
  return topSlots.map((slot, i) => ({ id: s.ids[slot]!, type: TYPES[s.types[slot]!]!, keyId: s.keys[slot]!, score: topScores[i]! }));
}

/**
 * Opening sealed embedding rows in batches, for the index rebuild: the same function
 * runs on the rebuild's worker threads (open-worker.ts) and, for small rebuilds, on the
 * calling thread. A batch carries its rows' keys (the plaintext keys of their texts,
 * packed in one buffer that is transferred, never copied, to the worker) and is
 * answered with the vectors and shingle sets, packed too. The keys are zeroed when the
 * batch is done, whatever happens; the plaintexts are zeroed by the sealed form's open.
 */
import { isLetheError } from '../errors.js';
import { openSealedQuantised } from './sealed-form.js';

export interface OpenBatch {
  /** The batch's keys, back to back; a row's key is `keys[keyAt[key] .. keyAt[key + 1])`. */
  readonly keys: Uint8Array;
  readonly keyAt: Int32Array;
  /** Per row: its record id, key id (as sealed), model, and the index of its key in `keyAt`. */
  readonly recordIds: readonly string[];
  readonly keyIds: readonly string[];
  readonly models: readonly string[];
  readonly keyOf: Int32Array;
  /** The sealed rows, back to back; row i is `sealed[sealedAt[i] .. sealedAt[i + 1])`. */
  readonly sealed: Uint8Array;
  readonly sealedAt: Int32Array;
  /** The embedder's model and dimensions: a row of another model gives no vector. */
  readonly model: string;
  readonly dimensions: number;
}

export interface OpenedBatch {
  /** Row i's vector, as stored, is `q[i·d .. (i+1)·d)` with scale `scales[i]` when `hasVector[i]`. */
  readonly q: Int8Array;
  readonly scales: Float32Array;
  readonly hasVector: Uint8Array;
  /** Row i's shingle set is `shingles[shinglesAt[i] .. shinglesAt[i + 1])` when `hasShingles[i]`. */
  readonly shingles: Float64Array;
  readonly shinglesAt: Int32Array;
  readonly hasShingles: Uint8Array;
  /** 1: the row did not open under its key (another format, damaged): left out and counted. */
  readonly unopened: Uint8Array;
}

/** Opens every row of the batch; zeroes the batch's keys before it answers or throws. */
export function openBatch(batch: OpenBatch): OpenedBatch {
  const n = batch.recordIds.length;
  const d = batch.dimensions;
  const q = new Int8Array(n * d);
  const scales = new Float32Array(n);
  const hasVector = new Uint8Array(n);
  const hasShingles = new Uint8Array(n);
  const unopened = new Uint8Array(n);
  const sets: Array<Float64Array | undefined> = new Array(n);
  try {
    for (let i = 0; i < n; i++) {
      const k = batch.keyOf[i]!;
      const key = batch.keys.subarray(batch.keyAt[k]!, batch.keyAt[k + 1]!);
      const sealed = batch.sealed.subarray(batch.sealedAt[i]!, batch.sealedAt[i + 1]!);
      let opened;
      try {
        opened = openSealedQuantised(key, { recordId: batch.recordIds[i]!, keyId: batch.keyIds[i]!, model: batch.models[i]! }, sealed, d);
      } catch (e) {
        if (!isLetheError(e, 'decrypt_failed')) throw e;
        unopened[i] = 1;
        continue;
      }
      if (opened.vector && batch.models[i] === batch.model) {
        q.set(opened.vector.q, i * d);
        scales[i] = opened.vector.scale;
        hasVector[i] = 1;
      }
      opened.vector?.q.fill(0);
      if (opened.shingles) {
        sets[i] = opened.shingles;
        hasShingles[i] = 1;
      }
    }
  } catch (e) {
    q.fill(0);
    scales.fill(0);
    for (const s of sets) s?.fill(0);
    throw e;
  } finally {
    batch.keys.fill(0);
  }
  const shinglesAt = new Int32Array(n + 1);
  for (let i = 0; i < n; i++) shinglesAt[i + 1] = shinglesAt[i]! + (sets[i]?.length ?? 0);
  const shingles = new Float64Array(shinglesAt[n]!);
  for (let i = 0; i < n; i++) {
    const s = sets[i];
    if (!s) continue;
    shingles.set(s, shinglesAt[i]!);
    s.fill(0);
  }
  return { q, scales, hasVector, shingles, shinglesAt, hasShingles, unopened };
}

/** A sealed row as the rebuild reads it. */
export interface SealedRowIn {
  readonly record_id: string;
  readonly record_type: 'entry' | 'artifact';
  readonly key_id: string;
  readonly model: string;
  readonly sealed: Uint8Array;
}

/** What the rebuild files a batch's row under once it is opened. */
export interface BatchRow {
  readonly recordId: string;
  readonly recordType: 'entry' | 'artifact';
  readonly keyId: string;
}

/**
 * Gathers rows and their keys into an `OpenBatch` (on the rebuild's thread). Each key
 * is copied in once per batch (the caller zeroes its own); `take` packs the copies in
 * one fresh buffer and zeroes them, `discard` zeroes what was gathered and not taken.
 */
export class BatchBuilder {
  readonly #embedder: { readonly model: string; readonly dimensions: number };
  #keys: Uint8Array[] = [];
  #keyIds: string[] = [];
  #rows: SealedRowIn[] = [];
  #keyOf: number[] = [];

  constructor(embedder: { readonly model: string; readonly dimensions: number }) {
    this.#embedder = embedder;
  }

  get size(): number {
    return this.#rows.length;
  }

  /** Adds a row sealed under `key` (copied the first time this batch sees the row's key id). */
  add(row: SealedRowIn, key: Uint8Array): void {
    if (this.#keyIds.at(-1) !== row.key_id) {
      this.#keys.push(Uint8Array.from(key));
      this.#keyIds.push(row.key_id);
    }
    this.#rows.push(row);
    this.#keyOf.push(this.#keys.length - 1);
  }

  take(): { request: OpenBatch; rows: BatchRow[] } {
    const rows = this.#rows;
    const keyAt = new Int32Array(this.#keys.length + 1);
    for (let k = 0; k < this.#keys.length; k++) keyAt[k + 1] = keyAt[k]! + this.#keys[k]!.length;
    const keys = new Uint8Array(keyAt[this.#keys.length]!);
    for (let k = 0; k < this.#keys.length; k++) keys.set(this.#keys[k]!, keyAt[k]!);
    const sealedAt = new Int32Array(rows.length + 1);
    for (let i = 0; i < rows.length; i++) sealedAt[i + 1] = sealedAt[i]! + rows[i]!.sealed.byteLength;
    const sealed = new Uint8Array(sealedAt[rows.length]!);
    for (let i = 0; i < rows.length; i++) sealed.set(rows[i]!.sealed, sealedAt[i]!);
    const request: OpenBatch = {
      keys,
      keyAt,
      recordIds: rows.map((r) => r.record_id),
      keyIds: rows.map((r) => r.key_id),
      models: rows.map((r) => r.model),
      keyOf: Int32Array.from(this.#keyOf),
      sealed,
      sealedAt,
      model: this.#embedder.model,
      dimensions: this.#embedder.dimensions,
    };
    this.discard();
    return { request, rows: rows.map((r) => ({ recordId: r.record_id, recordType: r.record_type, keyId: r.key_id })) };
  }

  /** Zeroes the gathered key copies and forgets the rows. */
  discard(): void {
    for (const k of this.#keys) k.fill(0);
    this.#keys = [];
    this.#keyIds = [];
    this.#rows = [];
    this.#keyOf = [];
  }
}

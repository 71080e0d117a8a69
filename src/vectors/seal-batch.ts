/**
 * A batch of records to seal, as it travels to a seal worker (seal-worker.ts): the
 * records' keys packed in one buffer that is transferred (no copy stays on the sending
 * thread) and zeroed by the worker when the batch is done, and, for an embedder a
 * worker cannot build, the vectors embedded already.
 */
import { LetheError } from '../errors.js';
import type { KeyedText, Sealed, Sealer } from './sealing.js';
import { sealRecords } from './sealing.js';
import type { RecordType } from './vector-slots.js';

export interface SealJob {
  /** The batch's keys, back to back; record i's key is `keys[keyAt[keyOf[i]] .. keyAt[keyOf[i] + 1])`. */
  readonly keys: Uint8Array;
  readonly keyAt: Int32Array;
  readonly keyOf: Int32Array;
  readonly records: ReadonlyArray<{ recordId: string; recordType: RecordType; keyId: string; text: string }>;
  /** Record i's vector is `vectors[i·d .. (i+1)·d)`, when the sending thread embedded them. */
  readonly vectors?: Float32Array;
}

/** Packs records and their keys into a job (each distinct key copied once; the caller zeroes its own), with their vectors of `dimensions` when given. */
export function sealJob(records: readonly KeyedText[], vectors?: { readonly of: readonly Float32Array[]; readonly dimensions: number }): SealJob {
  // a vector of another length would seal part of the next record's under this record's key
  if (vectors && (vectors.of.length !== records.length || vectors.of.some((v) => v.length !== vectors.dimensions)))
    throw new LetheError('internal', `the embedder answered vectors of other lengths than its ${vectors.dimensions} dimensions`);
  const slotOf = new Map<string, number>();
  const distinct: Uint8Array[] = [];
  const keyOf = new Int32Array(records.length);
  for (const [i, r] of records.entries()) {
    let k = slotOf.get(r.keyId);
    if (k === undefined) {
      k = distinct.length;
      slotOf.set(r.keyId, k);
      distinct.push(r.key);
    }
    keyOf[i] = k;
  }
  const keyAt = new Int32Array(distinct.length + 1);
  for (let k = 0; k < distinct.length; k++) keyAt[k + 1] = keyAt[k]! + distinct[k]!.length;
  const keys = new Uint8Array(keyAt[distinct.length]!);
  for (let k = 0; k < distinct.length; k++) keys.set(distinct[k]!, keyAt[k]!);
  let packed: Float32Array | undefined;
  if (vectors) {
    const d = vectors.dimensions;
    packed = new Float32Array(records.length * d);
    for (let i = 0; i < records.length; i++) packed.set(vectors.of[i]!, i * d);
  }
  return {
    keys,
    keyAt,
    keyOf,
    records: records.map((r) => ({ recordId: r.recordId, recordType: r.recordType, keyId: r.keyId, text: r.text })),
    ...(packed ? { vectors: packed } : {}),
  };
}

/** Seals a job's records (on a seal worker); zeroes its keys and vectors whatever happens. */
export async function runSealJob(s: Sealer, job: SealJob): Promise<Sealed[]> {
  try {
    const records = job.records.map((r, i) => {
      const k = job.keyOf[i]!;
      return { ...r, key: job.keys.subarray(job.keyAt[k]!, job.keyAt[k + 1]!) };
    });
    const d = s.embedder.dimensions;
    const vectors = job.vectors ? records.map((_, i) => job.vectors!.subarray(i * d, (i + 1) * d)) : undefined;
    return await sealRecords(s, records, vectors);
  } finally {
    job.keys.fill(0);
    job.vectors?.fill(0);
  }
}

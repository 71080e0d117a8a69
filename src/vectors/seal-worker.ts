/**
 * A seal worker thread (seal-pool.ts starts it): builds the embedder again from its
 * spec and keys the shingles under a copy of the index key (given at start, zeroed
 * once copied), then embeds, shingles and seals the batches it is sent
 * (seal-batch.ts). The vectors and shingle sets it sends back are transferred (none
 * stays here), the vectors it embedded are zeroed once sealed, and each batch's keys
 * once it is done. Asked to close, it wipes the index key; a worker that crashes or
 * is terminated (it did not end within a second of being asked) does not.
 */
import { workerData } from 'node:worker_threads';
import { LetheError } from '../errors.js';
import { BuiltInEmbedder } from './builtin-embedder.js';
import { type Embedder, type EmbedderSpec, HashingEmbedder } from './embedder.js';
import { runSealJob, type SealJob } from './seal-batch.js';
import type { Sealed } from './sealing.js';
import { ShingleHasher } from './shingles.js';
import { serveJobs } from './thread-pool.js';

/** What the pool hands a seal worker at start. */
export interface SealWorkerData {
  readonly spec: EmbedderSpec | undefined;
  readonly model: string;
  readonly dimensions: number;
  readonly shingleKey: Uint8Array;
}

const data = workerData as SealWorkerData;
const shingles = new ShingleHasher(data.shingleKey);
data.shingleKey.fill(0);

function embedderOf(d: SealWorkerData): Embedder {
  if (d.spec?.kind === 'builtin') return new BuiltInEmbedder(d.spec.hashDimensions);
  if (d.spec?.kind === 'hashing') return new HashingEmbedder(d.spec.dimensions);
  // a model's adapter embeds on the pool's thread: its jobs carry their vectors
  return {
    model: d.model,
    dimensions: d.dimensions,
    embed: () => Promise.reject(new LetheError('internal', 'this seal worker has no embedder: the job must carry its vectors')),
  };
}

const embedder = embedderOf(data);
if (embedder.model !== data.model) throw new Error(`a seal worker built embedder ${embedder.model}, not ${data.model}`);
const sealer = { embedder, shingles };

serveJobs<SealJob, Sealed[]>(
  async (job) => {
    const out = await runSealJob(sealer, job);
    // moved, not copied: no copy of a vector or shingle set stays on this thread (or in a message buffer)
    const transfer = new Set<ArrayBuffer>();
    for (const r of out) transfer.add(r.vector.buffer as ArrayBuffer).add(r.shingles.buffer as ArrayBuffer);
    return { out, transfer: [...transfer] };
  },
  (job) => {
    job.keys.fill(0);
    job.vectors?.fill(0);
  },
  () => shingles.destroy(),
);

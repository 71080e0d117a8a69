/**
 * A rebuild worker thread (open-pool.ts starts them): warms up, says it is ready, then
 * opens the batches of sealed rows it is sent (open-batch.ts) and sends the vectors and
 * shingle sets back, transferring their buffers (no copy stays here). Each batch's keys
 * are zeroed once it is done; an error is answered by its code and message only (never
 * key material or plaintext).
 *
 * The warm-up opens one envelope of its own (a random key, a random vector) WARM_UP
 * times, so the envelope code is compiled before the first batch: a cold worker opens
 * rows several times slower than a warm thread for its first few thousand.
 */
import { randomBytes } from 'node:crypto';
import { type OpenBatch, type OpenedBatch, openBatch } from './open-batch.js';
import { openSealedRecord, sealEmbedding } from './sealed-form.js';
import { serveJobs } from './thread-pool.js';

const WARM_UP = 1500;

function warmUp(): void {
  const key = randomBytes(32);
  try {
    const place = { recordId: 'warm-up', keyId: 'warm-up', model: 'warm-up' };
    const vector = Float32Array.from({ length: 512 }, (_, i) => Math.sin(i));
    const sealed = sealEmbedding(
      key,
      place,
      vector,
      new Float64Array(24).map((_, i) => i),
    );
    for (let i = 0; i < WARM_UP; i++) openSealedRecord(key, place, sealed, 512).vector?.fill(0);
  } finally {
    key.fill(0);
  }
}

warmUp();
serveJobs<OpenBatch, OpenedBatch>(
  (batch) => {
    const out = openBatch(batch);
    return { out, transfer: [out.q.buffer as ArrayBuffer, out.scales.buffer as ArrayBuffer, out.shingles.buffer as ArrayBuffer] };
  },
  (batch) => batch.keys.fill(0),
);

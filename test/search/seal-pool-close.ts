// A process whose only work is a seal pool (test/search/seal-workers.test.ts): it seals one record, closes the pool and says so. Its unref'd worker must not let the process exit while the pool is closing.
import { randomBytes } from 'node:crypto';
import { HashingEmbedder } from '../../src/vectors/embedder.js';
import { SealPool } from '../../src/vectors/seal-pool.js';
import { ShingleHasher } from '../../src/vectors/shingles.js';

const pool = new SealPool(1, { embedder: new HashingEmbedder(64), shingles: new ShingleHasher(new Uint8Array(randomBytes(32))) });
await pool.ready();
const sealed = await pool.seal([
  { recordId: 'entry_close', recordType: 'entry', text: 'a note to seal', keyId: 'key_close', key: new Uint8Array(randomBytes(32)) },
]);
process.stdout.write(`sealed ${sealed?.length ?? 0}\n`);
await pool.close();
process.stdout.write('closed\n');

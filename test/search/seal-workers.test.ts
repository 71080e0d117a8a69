/**
 * The indexer's seal workers (src/vectors/seal-pool.ts, seal-worker.ts): a batch sealed
 * on a worker thread is what the calling thread would have sealed; an embedder a worker
 * cannot build embeds on the calling thread and the worker seals; a worker that fails
 * leaves the batch to the calling thread and is logged; the keys a job carries are
 * zeroed when it is done.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import { BuiltInEmbedder } from '../../src/vectors/builtin-embedder.js';
import { type Embedder, HashingEmbedder } from '../../src/vectors/embedder.js';
import { openSealedRecord } from '../../src/vectors/sealed-form.js';
import { runSealJob, sealJob } from '../../src/vectors/seal-batch.js';
import { SealPool } from '../../src/vectors/seal-pool.js';
import { EMBED_CHUNK, type KeyedText, type Sealed, sealRecords } from '../../src/vectors/sealing.js';
import { ShingleHasher } from '../../src/vectors/shingles.js';

const pools: SealPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

/** Records of two subjects, each under its own key. */
function records(n: number): { records: KeyedText[]; keys: Uint8Array[] } {
  const keys = [randomBytes(32), randomBytes(32)].map((b) => new Uint8Array(b));
  return {
    keys,
    records: Array.from({ length: n }, (_, i) => ({
      recordId: `entry_seal${String(i).padStart(20, '0')}`,
      recordType: 'entry' as const,
      text: `Note ${i}: moved to Lisbon in ${2000 + i}, the ferry to Cacilhas leaves at ${i % 24}:15 from Cais do Sodré.`,
      keyId: `key_${i % 2}`,
      key: keys[i % 2]!,
    })),
  };
}

/** What a sealed record opens to under its key, with its vector and shingle set as sent. */
function opened(r: Sealed, key: Uint8Array, dimensions: number) {
  const o = openSealedRecord(key, { recordId: r.recordId, keyId: r.keyId, model: r.model }, r.sealed, dimensions);
  return {
    recordId: r.recordId,
    keyId: r.keyId,
    model: r.model,
    foldVersion: r.foldVersion,
    vector: Array.from(o.vector ?? []),
    shingles: Array.from(o.shingles ?? []),
  };
}

const asSent = (r: Sealed) => ({ recordId: r.recordId, vector: Array.from(r.vector), shingles: Array.from(r.shingles) });

/** A model's adapter: no spec, so a worker cannot build it again. */
class AdapterEmbedder implements Embedder {
  readonly inner = new HashingEmbedder(256);
  readonly model = 'adapter-model-256';
  readonly dimensions = 256;
  calls = 0;
  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    this.calls++;
    return this.inner.embed(texts);
  }
}

describe('seal workers', () => {
  it('seal a batch as the calling thread would: the same vectors and shingle sets, sealed under each record own key', async () => {
    const index = new Uint8Array(randomBytes(32));
    const embedder = new BuiltInEmbedder(512);
    const here = { embedder, shingles: new ShingleHasher(index) };
    const pool = new SealPool(1, { embedder, shingles: new ShingleHasher(index) });
    pools.push(pool);
    const { records: batch, keys } = records(40);
    expect(await pool.seal(batch)).toBeUndefined(); // not started yet: the caller seals
    await pool.ready();
    const off = await pool.seal(batch);
    expect(off).toHaveLength(40);
    const local = await sealRecords(here, batch);
    expect(off!.map(asSent)).toEqual(local.map(asSent));
    const keyOf = (r: Sealed) => keys[Number(r.keyId.slice(-1))]!;
    expect(off!.map((r) => opened(r, keyOf(r), embedder.dimensions))).toEqual(local.map((r) => opened(r, keyOf(r), embedder.dimensions)));
    // the caller's keys are its own: copied into the job, not moved or zeroed
    expect(keys.every((k) => k.length === 32 && k.some((b) => b !== 0))).toBe(true);
    // under another key a record does not open
    expect(() =>
      openSealedRecord(keys[1]!, { recordId: off![0]!.recordId, keyId: off![0]!.keyId, model: off![0]!.model }, off![0]!.sealed, embedder.dimensions),
    ).toThrow();
  });

  it('an embedder a worker cannot build embeds on the calling thread, EMBED_CHUNK texts a call; the worker seals what it embedded', async () => {
    const index = new Uint8Array(randomBytes(32));
    const embedder = new AdapterEmbedder();
    const pool = new SealPool(1, { embedder, shingles: new ShingleHasher(index) });
    pools.push(pool);
    await pool.ready();
    const { records: batch } = records(150);
    const off = await pool.seal(batch);
    // 64 + 64 + 22: an endpoint sees no bigger request than the calling thread would send it
    expect(embedder.calls).toBe(Math.ceil(150 / EMBED_CHUNK));
    const local = await sealRecords({ embedder: new AdapterEmbedder(), shingles: new ShingleHasher(index) }, batch);
    expect(off!.map(asSent)).toEqual(local.map(asSent));
    expect(off!.every((r) => r.model === 'adapter-model-256')).toBe(true);
  });

  it('a worker that fails leaves its batch, and every later one, to the calling thread, and is logged once', async () => {
    const lines: string[] = [];
    const logger = createLogger(
      'info',
      new Writable({
        write(chunk, _enc, done) {
          lines.push(String(chunk));
          done();
        },
      }),
    );
    const embedder = new HashingEmbedder(128);
    const pool = new SealPool(
      1,
      { embedder, shingles: new ShingleHasher(new Uint8Array(32).fill(7)) },
      { logger, script: new URL('./failing-seal-worker.mjs', import.meta.url) },
    );
    pools.push(pool);
    await pool.ready();
    expect(pool.isReady).toBe(true);
    const { records: batch } = records(5);
    expect(await pool.seal(batch)).toBeUndefined();
    expect(pool.isReady).toBe(false);
    expect(await pool.seal(batch)).toBeUndefined();
    const warned = lines.filter((l) => l.includes('seal worker failed'));
    expect(warned).toHaveLength(1);
    // one that fails as it starts
    const crashing = new URL(`data:text/javascript,${encodeURIComponent("throw new Error('this seal worker fails as it starts')")}`);
    const early = new SealPool(1, { embedder, shingles: new ShingleHasher(new Uint8Array(32).fill(7)) }, { logger, script: crashing });
    pools.push(early);
    await expect(early.ready()).rejects.toMatchObject({ code: 'internal', message: expect.stringMatching(/seal worker/) });
    expect(await early.seal(batch)).toBeUndefined();
    // one that cannot even be started (no such script): the caller seals, nothing throws
    const never = new SealPool(
      1,
      { embedder, shingles: new ShingleHasher(new Uint8Array(32).fill(7)) },
      { logger, script: new URL('https://example.invalid/seal-worker.js') },
    );
    pools.push(never);
    expect(await never.seal(batch)).toBeUndefined();
    await expect(never.ready()).rejects.toMatchObject({ code: 'internal' });
    expect(lines.filter((l) => l.includes('seal worker failed'))).toHaveLength(3);
  });

  it('closing waits for the workers to end, even when nothing else keeps the process alive', () => {
    const out = execFileSync(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./seal-pool-close.ts', import.meta.url))], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(out.split('\n').filter(Boolean)).toEqual(['sealed 1', 'closed']);
  });

  it("a job's keys and vectors are zeroed once it is sealed, and its keys packed once per key", async () => {
    const embedder = new HashingEmbedder(64);
    const { records: batch } = records(6);
    const vectors = await embedder.embed(batch.map((r) => r.text));
    const job = sealJob(batch, { of: vectors, dimensions: 64 });
    expect(job.keys.length).toBe(64);
    expect(Array.from(job.keyOf)).toEqual([0, 1, 0, 1, 0, 1]);
    const sealed = await runSealJob({ embedder, shingles: new ShingleHasher(new Uint8Array(32).fill(1)) }, job);
    expect(sealed).toHaveLength(6);
    expect(job.keys.every((b) => b === 0)).toBe(true);
    expect(job.vectors!.every((x) => x === 0)).toBe(true);
    // the vectors sealed are the ones given, not embedded again
    expect(sealed.map((r) => Array.from(r.vector))).toEqual(
      (await sealRecords({ embedder, shingles: new ShingleHasher(new Uint8Array(32).fill(1)) }, batch)).map((r) => Array.from(r.vector)),
    );
  });
});

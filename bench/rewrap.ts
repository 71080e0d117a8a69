/**
 * KEK rotation (re-wrap) throughput and memory.
 *
 * `npx tsx bench/rewrap.ts` runs two child processes, one per size (each started
 * with --expose-gc so it can start its measurement from a collected heap):
 *
 *   rotate  BENCH_KEYS/10 keys, then BENCH_KEYS keys: a fresh lethe_bench_* database,
 *           the vault opened with openApp, keys bulk-loaded with COPY (DEKs wrapped
 *           by vault.provider.wrap, bypassing the HTTP API), `vault.epochs.rotate()`
 *           with process.memoryUsage() sampled in the onRewrapBatch hook, then checks:
 *           a sample of keys unwraps under the new epoch to the original DEK, and the
 *           old epoch is retired (and really gone from the provider).
 *
 * Baseline: the per-key work of a rotation with no database, i.e.
 * provider.unwrap(old) + provider.wrap(new) + zeroize through a LocalKeyringProvider,
 * on min(BENCH_KEYS, 25k; 100k with BENCH_FULL=1) operations (extrapolated to
 * BENCH_KEYS), measured in the large run's process, half just before and half just after its rotation, so both
 * see the same machine (other load on a shared machine drifts over minutes).
 *
 * Flat memory shows as peak live heap(large) ÷ peak live heap(small) ≈ 1 (aim: within
 * 0.8–1.2), the live heap being heapUsed right after a forced full GC at ~10 evenly
 * spaced batch boundaries of each rotation (their time is taken out of the rotation's).
 * The peak heapUsed over every batch, garbage included, is reported too: it follows
 * when V8 collects, which depends on the run's length and the machine's load.
 *
 * BENCH_KEYS: 20,000 by default (crypto sample: all of them), 1,000,000 with BENCH_FULL=1
 * (crypto sample 100,000), 20,000 when quick.
 *
 * bench/providers.ts runs the same rotation (rotateWorker) with each key provider.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import postgres from 'postgres';
import { loadConfig } from '../src/config/index.js';
import { zeroize } from '../src/crypto/index.js';
import { isLetheError } from '../src/errors.js';
import { LocalKeyringProvider } from '../src/keyprovider/local.js';
import { createLogger } from '../src/observability/logger.js';
import { newId } from '../src/ids.js';
import { openApp } from '../src/app/open.js';
import { benchKeys, byMode } from './support/mode.js';
import { makeTempDir, openScratch, randomRootKey, removeDir } from './support/scratch.js';
import { cpuSeconds, isMain, reportResult, runChild, runIfMain } from './support/process.js';
import { type Aim, aim, fmtInt, fmtMiB, fmtNum, fmtRatio, fmtSeconds, formatAims, progress, table } from './support/report.js';

const SCRIPT = new URL('./rewrap.ts', import.meta.url).pathname;
const VERIFY_SAMPLE = 1000;

export interface MemorySample {
  readonly heapUsed: number;
  readonly rss: number;
  readonly external: number;
}

export interface RotateRun {
  readonly keys: number;
  readonly batchSize: number;
  readonly population: { readonly seconds: number; readonly keysPerSec: number; readonly vacuumAnalyzeSeconds: number };
  readonly rotation: {
    readonly seconds: number;
    readonly rewrapped: number;
    readonly keysPerSec: number;
    /** Throughput over the first and the last 10% of the keys (no slow-down expected). */
    readonly firstTenthKeysPerSec: number;
    readonly lastTenthKeysPerSec: number;
    readonly batches: number;
    readonly fromEpoch: number;
    readonly toEpoch: number;
    readonly retired: number[];
    /** CPU time of this (vault) process during rotate(); PostgreSQL's is not included. */
    readonly nodeCpuSeconds: number;
    /** 1-minute load average before and after rotate() (other load on the machine skews wall-clock figures). */
    readonly loadAvg1: [number, number];
  };
  /** Crypto-only baseline, measured in the large run's process (see rotateWorker). */
  readonly crypto?: CryptoRun | undefined;
  /** After population and a full GC, just before rotate(). */
  readonly memoryBefore: MemorySample;
  /** Largest value of each field over the onBatch samples. */
  readonly memoryPeak: MemorySample;
  /**
   * Live heap during the rotation: heapUsed right after a forced full GC at about ten
   * evenly spaced batch boundaries, the largest of them (what the rotation holds, not the
   * garbage a run of this length lets accumulate between V8's own collections). The
   * forced collections' time is taken out of the rotation's seconds.
   */
  readonly liveHeap: { readonly samples: number; readonly peakHeapUsed: number; readonly gcSeconds: number };
  /** After rotate() and a full GC. */
  readonly memoryAfter: MemorySample;
  readonly verification: {
    readonly sampled: number;
    readonly sampleUnwrapsUnderNewEpoch: boolean;
    readonly keysLeftOnOldEpoch: number;
    readonly oldEpochState: string;
    readonly oldEpochGoneFromProvider: boolean;
    readonly newEpochState: string;
    readonly newEpochKeys: number;
    readonly ok: boolean;
  };
}

export interface CryptoRun {
  readonly sampleKeys: number;
  readonly seconds: number;
  readonly keysPerSec: number;
  /** CPU time of this process over the timed loops (≈ seconds when the machine is idle). */
  readonly cpuSeconds: number;
}

export interface RewrapResult {
  readonly keys: number;
  readonly small: RotateRun;
  readonly large: RotateRun;
  readonly crypto: CryptoRun;
  /** Crypto-only time extrapolated to `keys`. */
  readonly cryptoSecondsExtrapolated: number;
  /** large rotation keys/s ÷ crypto-only keys/s. */
  readonly rotationVsCrypto: number;
  /** peak heapUsed large ÷ small (garbage included: depends on when V8 collects). */
  readonly peakHeapRatio: number;
  /** peak live heapUsed (after forced GCs) large ÷ small (≈ 1 = flat; the aim). */
  readonly liveHeapRatio: number;
  /** peak rss large ÷ small. */
  readonly peakRssRatio: number;
  /** Peak heap flat: large ÷ small within 0.8–1.2. */
  readonly aims: Aim[];
  readonly warnings: string[];
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

function mem(): MemorySample {
  const m = process.memoryUsage();
  return { heapUsed: m.heapUsed, rss: m.rss, external: m.external };
}

// ------------------------------------------------------------------ crypto-only baseline

/**
 * The per-key work of a rotation without the database: unwrap under epoch 1, wrap
 * under epoch 2, zeroize, through a LocalKeyringProvider (the class the vault uses)
 * on its own temporary keyring. `n` operations cycle over a set of distinct wrapped
 * keys (the work per operation does not depend on which key it is).
 */
class CryptoBaseline {
  readonly #dir: string;
  readonly #provider: LocalKeyringProvider;
  readonly #keyIds: string[] = [];
  readonly #wrapped: Uint8Array[] = [];
  ops = 0;
  seconds = 0;
  cpuSeconds = 0;

  private constructor(dir: string, provider: LocalKeyringProvider) {
    this.#dir = dir;
    this.#provider = provider;
  }

  static async create(distinct: number): Promise<CryptoBaseline> {
    const dir = await makeTempDir('rewrap-crypto');
    const provider = await LocalKeyringProvider.open(dir, new Uint8Array(randomBytes(32)));
    await provider.createEpoch(1);
    await provider.createEpoch(2);
    const b = new CryptoBaseline(dir, provider);
    for (let i = 0; i < distinct; i++) {
      const keyId = newId('key');
      const dek = new Uint8Array(randomBytes(32));
      b.#keyIds.push(keyId);
      b.#wrapped.push(await provider.wrap(1, dek, keyId, 'subject'));
      zeroize(dek);
    }
    return b;
  }

  async #step(i: number): Promise<void> {
    const j = i % this.#keyIds.length;
    const dek = await this.#provider.unwrap(1, this.#wrapped[j]!, this.#keyIds[j]!, 'subject');
    try {
      await this.#provider.wrap(2, dek, this.#keyIds[j]!, 'subject');
    } finally {
      zeroize(dek);
    }
  }

  async warmUp(n: number): Promise<void> {
    for (let i = 0; i < n; i++) await this.#step(i);
  }

  /** Times `n` operations and adds them to the totals. */
  async measure(n: number): Promise<void> {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await this.#step(i);
    this.seconds += (performance.now() - t0) / 1000;
    this.cpuSeconds += cpuSeconds(cpu0);
    this.ops += n;
  }

  async close(): Promise<void> {
    await this.#provider.close();
    await removeDir(this.#dir);
  }
}

// ------------------------------------------------------------------ rotation run

/** COPY text-format field for bytea (hex, backslash escaped for COPY). */
function byteaField(bytes: Uint8Array): string {
  return `\\\\x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')}`;
}

export interface RotateOptions {
  /** Names the scratch database and the progress lines (lowercase letters, digits, `_`; default `rewrap`). */
  readonly label?: string;
  /** Extra configuration for the vault, e.g. LETHE_KEY_PROVIDER and its settings (bench/providers.ts). */
  readonly env?: Readonly<Record<string, string>>;
  /** Wraps in flight while populating (default 1); an external provider answers faster with several. */
  readonly populateConcurrency?: number;
}

/**
 * One rotation run. With `cryptoSample` > 0 it also measures the crypto-only
 * baseline in this process, half just before and half just after the rotation, so
 * that both see the same machine (other load drifts over minutes).
 */
export async function rotateWorker(keys: number, cryptoSample: number, options: RotateOptions = {}): Promise<RotateRun> {
  const tag = options.label ?? 'rewrap';
  const populateConcurrency = options.populateConcurrency ?? 1;
  const scratch = await openScratch(`${tag}_${keys}`);
  const { db, dataDir } = scratch;
  try {
    const config = loadConfig({
      DATABASE_URL: db.url,
      LETHE_DATA_DIR: dataDir,
      LETHE_ROOT_KEY: randomRootKey(),
      LETHE_LOG_LEVEL: 'warn',
      // LETHE_REWRAP_BATCH_SIZE: default, unless the caller set one
      ...(process.env.LETHE_REWRAP_BATCH_SIZE ? { LETHE_REWRAP_BATCH_SIZE: process.env.LETHE_REWRAP_BATCH_SIZE } : {}),
      ...options.env,
    });
    let peak: MemorySample = { heapUsed: 0, rss: 0, external: 0 };
    let batches = 0;
    // live-heap samples: a forced full GC every `liveEvery` batches (set when the rotation starts)
    let liveEvery = 0;
    let liveSamples = 0;
    let livePeak = 0;
    let gcMs = 0;
    const timeline: Array<{ t: number; n: number }> = [];
    let t0 = 0;
    const vault = await openApp(config, {
      logger: createLogger('warn'),
      listen: false,
      onRewrapBatch: (n) => {
        const m = process.memoryUsage();
        if (m.heapUsed > peak.heapUsed) peak = { ...peak, heapUsed: m.heapUsed };
        if (m.rss > peak.rss) peak = { ...peak, rss: m.rss };
        if (m.external > peak.external) peak = { ...peak, external: m.external };
        batches += 1;
        if (liveEvery > 0 && batches % liveEvery === 0) {
          const g0 = performance.now();
          gc();
          gcMs += performance.now() - g0;
          livePeak = Math.max(livePeak, process.memoryUsage().heapUsed);
          liveSamples += 1;
        }
        timeline.push({ t: performance.now() - t0 - gcMs, n });
      },
    });
    try {
      const before = await vault.epochs.list();
      const fromEpoch = before.find((e) => e.state === 'active')!.epoch;

      // ---- population: wrap with the vault's provider, stream into COPY
      progress(`${tag}: populating ${fmtInt(keys)} keys (epoch ${fromEpoch})`);
      const sampleEvery = Math.max(1, Math.floor(keys / VERIFY_SAMPLE));
      const samples = new Map<string, Uint8Array>();
      const pg = postgres(db.url, { max: 1, onnotice: () => {} });
      const tPop = performance.now();
      let vacuumAnalyzeSeconds = 0;
      try {
        const chunkRows = 5000;
        async function* rows(): AsyncGenerator<string> {
          for (let done = 0; done < keys; ) {
            const n = Math.min(chunkRows, keys - done);
            const lines: string[] = new Array(n);
            let next = 0;
            const wrapRows = async (): Promise<void> => {
              for (let i = next++; i < n; i = next++) {
                const keyId = newId('key');
                const dek = new Uint8Array(randomBytes(32));
                const wrapped = await vault.provider.wrap(fromEpoch, dek, keyId, 'subject');
                if ((done + i) % sampleEvery === 0) samples.set(keyId, dek.slice());
                zeroize(dek);
                lines[i] = `${keyId}\t${byteaField(randomBytes(32))}\tactive\t${fromEpoch}\t${byteaField(wrapped)}\n`;
              }
            };
            await Promise.all(Array.from({ length: Math.min(populateConcurrency, n) }, wrapRows));
            done += n;
            if (done % 100_000 < chunkRows && keys >= 200_000) progress(`${tag}: populated ${fmtInt(done)} keys`);
            yield lines.join('');
          }
        }
        const copy = await pg`copy subject_keys (key_id, subject_hash, state, epoch, wrapped_dek) from stdin`.writable();
        await pipeline(Readable.from(rows()), copy);
        const tVac = performance.now();
        // a real table would have been vacuumed and analyzed by autovacuum by now
        await pg`vacuum analyze subject_keys`;
        vacuumAnalyzeSeconds = (performance.now() - tVac) / 1000;
        const [count] = await pg<{ n: number }[]>`select count(*)::int as n from subject_keys`;
        if (count?.n !== keys) throw new Error(`population inserted ${count?.n} rows, expected ${keys}`);
      } finally {
        await pg.end({ timeout: 5 });
      }
      const populationSeconds = (performance.now() - tPop) / 1000;

      // ---- crypto-only baseline, first half (its keyring is closed again before the
      // rotation so that it holds no memory during it)
      const cryptoTotals = { ops: 0, seconds: 0, cpuSeconds: 0 };
      const cryptoHalf = async (n: number) => {
        const c = await CryptoBaseline.create(Math.min(n, 1000));
        try {
          await c.warmUp(Math.min(1000, n));
          await c.measure(n);
          cryptoTotals.ops += c.ops;
          cryptoTotals.seconds += c.seconds;
          cryptoTotals.cpuSeconds += c.cpuSeconds;
        } finally {
          await c.close();
        }
      };
      if (cryptoSample > 0) {
        progress(`${tag}: crypto-only baseline, first ${fmtInt(Math.ceil(cryptoSample / 2))} of ${fmtInt(cryptoSample)} keys`);
        await cryptoHalf(Math.ceil(cryptoSample / 2));
      }

      // ---- rotation
      gc();
      gc();
      const memoryBefore = mem();
      const load0 = os.loadavg()[0]!;
      const cpu0 = process.cpuUsage();
      peak = { ...memoryBefore };
      livePeak = memoryBefore.heapUsed;
      liveEvery = Math.max(1, Math.floor(Math.ceil(keys / config.rewrapBatchSize) / 10));
      progress(`${tag}: rotating ${fmtInt(keys)} keys (batch size ${config.rewrapBatchSize})`);
      t0 = performance.now();
      const result = await vault.epochs.rotate('bench');
      // the forced collections of the live-heap samples are not the rotation's time
      const rotationSeconds = (performance.now() - t0 - gcMs) / 1000;
      const rotationCpuSeconds = cpuSeconds(cpu0);
      const load1 = os.loadavg()[0]!;
      gc();
      gc();
      const memoryAfter = mem();

      if (cryptoSample > 1) {
        progress(`${tag}: crypto-only baseline, second ${fmtInt(Math.floor(cryptoSample / 2))} keys`);
        await cryptoHalf(Math.floor(cryptoSample / 2));
      }

      /** Keys/s between the batch boundaries around key counts fromN and toN. */
      const rateBetween = (fromN: number, toN: number): number => {
        const start = [{ t: 0, n: 0 }, ...timeline].filter((p) => p.n <= fromN).at(-1)!;
        const end = timeline.find((p) => p.n >= toN);
        if (!end || end.t <= start.t) return NaN;
        return (end.n - start.n) / ((end.t - start.t) / 1000);
      };

      // ---- verification
      progress(`${tag}: verifying`);
      const after = await vault.epochs.list();
      const oldInfo = after.find((e) => e.epoch === fromEpoch);
      const newInfo = after.find((e) => e.epoch === result.epoch);
      const pg2 = postgres(db.url, { max: 1, onnotice: () => {} });
      let sampleOk = true;
      let keysLeftOnOldEpoch = -1;
      let oldEpochGone = false;
      try {
        const ids = [...samples.keys()];
        const rows = await pg2<{ key_id: string; epoch: number; wrapped_dek: Buffer }[]>`
          select key_id, epoch, wrapped_dek from subject_keys where key_id = any(${ids})`;
        if (rows.length !== ids.length) sampleOk = false;
        for (const row of rows) {
          if (row.epoch !== result.epoch) {
            sampleOk = false;
            continue;
          }
          const wrapped = new Uint8Array(row.wrapped_dek);
          const dek = await vault.provider.unwrap(result.epoch, wrapped, row.key_id, 'subject');
          if (Buffer.compare(Buffer.from(dek), Buffer.from(samples.get(row.key_id)!)) !== 0) sampleOk = false;
          zeroize(dek);
        }
        const first = rows[0];
        if (first) {
          try {
            zeroize(await vault.provider.unwrap(fromEpoch, new Uint8Array(first.wrapped_dek), first.key_id, 'subject'));
          } catch (e) {
            oldEpochGone = isLetheError(e, 'epoch_unavailable');
          }
        }
        const [left] = await pg2<{ n: number }[]>`select count(*)::int as n from subject_keys where epoch <> ${result.epoch}`;
        keysLeftOnOldEpoch = left?.n ?? -1;
      } finally {
        await pg2.end({ timeout: 5 });
        for (const dek of samples.values()) zeroize(dek);
      }
      const verification = {
        sampled: samples.size,
        sampleUnwrapsUnderNewEpoch: sampleOk,
        keysLeftOnOldEpoch,
        oldEpochState: oldInfo?.state ?? 'missing',
        oldEpochGoneFromProvider: oldEpochGone,
        newEpochState: newInfo?.state ?? 'missing',
        newEpochKeys: newInfo?.keys ?? 0,
        ok:
          sampleOk &&
          keysLeftOnOldEpoch === 0 &&
          oldInfo?.state === 'retired' &&
          oldEpochGone &&
          newInfo?.state === 'active' &&
          newInfo.keys === keys &&
          result.rewrapped === keys &&
          result.retired.includes(fromEpoch),
      };
      const tenth = Math.max(1, Math.floor(keys / 10));
      return {
        keys,
        batchSize: config.rewrapBatchSize,
        population: { seconds: populationSeconds, keysPerSec: keys / populationSeconds, vacuumAnalyzeSeconds },
        rotation: {
          seconds: rotationSeconds,
          rewrapped: result.rewrapped,
          keysPerSec: result.rewrapped / rotationSeconds,
          firstTenthKeysPerSec: rateBetween(0, tenth),
          lastTenthKeysPerSec: rateBetween(keys - tenth, keys),
          batches,
          fromEpoch,
          toEpoch: result.epoch,
          retired: result.retired,
          nodeCpuSeconds: rotationCpuSeconds,
          loadAvg1: [load0, load1],
        },
        crypto:
          cryptoTotals.ops > 0
            ? {
                sampleKeys: cryptoTotals.ops,
                seconds: cryptoTotals.seconds,
                keysPerSec: cryptoTotals.ops / cryptoTotals.seconds,
                cpuSeconds: cryptoTotals.cpuSeconds,
              }
            : undefined,
        memoryBefore,
        memoryPeak: peak,
        liveHeap: { samples: liveSamples, peakHeapUsed: livePeak, gcSeconds: gcMs / 1000 },
        memoryAfter,
        verification,
      };
    } finally {
      await vault.close();
    }
  } finally {
    await scratch.cleanup();
  }
}

// ------------------------------------------------------------------ orchestration

export async function runRewrap(): Promise<RewrapResult> {
  const keys = benchKeys();
  const small = Math.max(10, Math.floor(keys / 10));
  const cryptoSample = Math.min(keys, byMode({ quick: 10_000, normal: 25_000, full: 100_000 }));
  const nodeArgs = ['--expose-gc'];

  progress(`rewrap: small run, ${fmtInt(small)} keys`);
  const smallRun = await runChild<RotateRun>(SCRIPT, { nodeArgs, args: ['rotate', String(small), '0'] });
  progress(`rewrap: large run, ${fmtInt(keys)} keys (+ crypto-only baseline on ${fmtInt(cryptoSample)} keys)`);
  const largeRun = await runChild<RotateRun>(SCRIPT, { nodeArgs, args: ['rotate', String(keys), String(cryptoSample)] });
  const crypto = largeRun.crypto!;

  const warnings: string[] = [];
  for (const r of [smallRun, largeRun]) {
    if (!r.verification.ok) warnings.push(`verification FAILED for the ${fmtInt(r.keys)}-key run: ${JSON.stringify(r.verification)}`);
  }
  const peakHeapRatio = largeRun.memoryPeak.heapUsed / smallRun.memoryPeak.heapUsed;
  const liveHeapRatio = largeRun.liveHeap.peakHeapUsed / smallRun.liveHeap.peakHeapUsed;
  return {
    keys,
    small: smallRun,
    large: largeRun,
    crypto,
    cryptoSecondsExtrapolated: keys / crypto.keysPerSec,
    rotationVsCrypto: largeRun.rotation.keysPerSec / crypto.keysPerSec,
    peakHeapRatio,
    liveHeapRatio,
    peakRssRatio: largeRun.memoryPeak.rss / smallRun.memoryPeak.rss,
    aims: [
      aim(
        `rotation peak live heap, ${fmtInt(keys)} ÷ ${fmtInt(small)} keys`,
        liveHeapRatio,
        'flat (0.8–1.2)',
        Math.abs(liveHeapRatio - 1) <= 0.2 && smallRun.verification.ok && largeRun.verification.ok,
      ),
    ],
    warnings,
  };
}

export function formatRewrap(r: RewrapResult): string {
  const run = (x: RotateRun) => [
    fmtInt(x.keys),
    fmtSeconds(x.population.seconds),
    fmtInt(x.population.keysPerSec),
    fmtSeconds(x.rotation.seconds),
    fmtInt(x.rotation.keysPerSec),
    `${fmtInt(x.rotation.firstTenthKeysPerSec)} / ${fmtInt(x.rotation.lastTenthKeysPerSec)}`,
    fmtMiB(x.memoryBefore.heapUsed),
    fmtMiB(x.memoryPeak.heapUsed),
    `${fmtMiB(x.liveHeap.peakHeapUsed)} (${x.liveHeap.samples})`,
    fmtMiB(x.memoryAfter.heapUsed),
    fmtMiB(x.memoryPeak.rss),
    x.verification.ok ? 'ok' : 'FAILED',
  ];
  const lines = [
    `KEK rotation (re-wrap), batch size ${r.large.batchSize}; baseline: provider unwrap+wrap with no database (${fmtInt(r.crypto.sampleKeys)}-key sample)`,
    table(
      [
        'keys',
        'populate',
        'pop keys/s',
        'rotate',
        'rotate keys/s',
        'first/last 10% keys/s',
        'heap before',
        'peak heap',
        'peak live heap (samples)',
        'heap after',
        'peak rss',
        'verify',
      ],
      [run(r.small), run(r.large)],
    ),
    table(
      ['comparison', 'value'],
      [
        ['crypto-only unwrap+wrap keys/s', fmtInt(r.crypto.keysPerSec)],
        [`crypto-only time for ${fmtInt(r.keys)} keys (extrapolated)`, fmtSeconds(r.cryptoSecondsExtrapolated)],
        [`rotation ${fmtInt(r.keys)} keys/s ÷ crypto-only keys/s`, fmtRatio(r.rotationVsCrypto)],
        [`peak live heapUsed ${fmtInt(r.large.keys)} ÷ ${fmtInt(r.small.keys)} keys (~1 = flat; the aim)`, fmtRatio(r.liveHeapRatio)],
        [`peak heapUsed, garbage included, ${fmtInt(r.large.keys)} ÷ ${fmtInt(r.small.keys)} keys`, fmtRatio(r.peakHeapRatio)],
        [`peak rss ${fmtInt(r.large.keys)} ÷ ${fmtInt(r.small.keys)} keys`, fmtRatio(r.peakRssRatio)],
        ['crypto-only process CPU s ÷ wall s (GC threads count; << 1 = machine busy)', `${fmtNum(r.crypto.cpuSeconds / r.crypto.seconds, 2)}`],
        [`vault process CPU s ÷ wall s during the ${fmtInt(r.keys)}-key rotation`, `${fmtNum(r.large.rotation.nodeCpuSeconds / r.large.rotation.seconds, 2)}`],
        ['1-min load average before / after the large rotation', r.large.rotation.loadAvg1.map((l) => fmtNum(l, 2)).join(' / ')],
      ],
    ),
    'heap before/after: heapUsed after a full GC just before/after rotate(); peak heap/rss: largest process.memoryUsage() over the onRewrapBatch samples; ' +
      `peak live heap: largest heapUsed right after a forced full GC at ~10 evenly spaced batches (their ${fmtNum(r.large.liveHeap.gcSeconds, 2)} s taken out of the rotation's time)`,
    `verified: ${r.large.verification.sampled} sampled keys unwrap under epoch ${r.large.rotation.toEpoch} to their original DEK; ` +
      `epoch ${r.large.rotation.fromEpoch} is ${r.large.verification.oldEpochState} (${r.large.verification.keysLeftOnOldEpoch} keys left, ` +
      `${r.large.verification.oldEpochGoneFromProvider ? 'KEK gone from the provider' : 'KEK STILL UNWRAPS'}); ` +
      `population time includes VACUUM ANALYZE (${fmtSeconds(r.large.population.vacuumAnalyzeSeconds)} for the large run)`,
  ];
  lines.push(formatAims(r.aims));
  for (const w of r.warnings) lines.push(`WARNING: ${w}`);
  return lines.join('\n');
}

if (isMain(import.meta.url) && process.argv[2] === 'rotate') {
  await reportResult(await rotateWorker(Number(process.argv[3]), Number(process.argv[4] ?? 0)));
} else {
  await runIfMain(import.meta.url, runRewrap, formatRewrap);
}

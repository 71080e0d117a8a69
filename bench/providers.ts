/**
 * Key providers, same run: the local keyring (the baseline), a PKCS#11 token
 * (SoftHSM2, infra/softhsm.ts) and AWS KMS (local-kms on loopback,
 * infra/local-kms-server.ts). Each provider runs in its own child process (node
 * --expose-gc, as rewrap's rotation runs), one after the other, and measures:
 *
 *   throughput  wraps/s of fresh 32-byte DEKs for BENCH_PROVIDERS_SECONDS, then
 *               unwraps/s of those wraps (each checked against its DEK) for as
 *               long, at concurrency 1 and 16, through the KeyProvider that
 *               openKeyProvider opens from the configuration the vault reads
 *               (LETHE_KEY_PROVIDER): ExternalKeyProvider in front of a fresh keyring
 *               for the external stores, so every wrap goes to the store
 *   rotation    rewrap.ts's rotation run (rotateWorker): a vault on a scratch PostgreSQL
 *               database opened with that provider, N keys wrapped under its first epoch
 *               (16 in flight) and loaded with COPY, `vault.epochs.rotate()` (one unwrap
 *               and one wrap per key, in order), then the checks: sampled keys unwrap
 *               under the new epoch to their DEKs, the old epoch is retired and refused
 *               by the provider
 *
 * Every ratio is provider ÷ local keyring, measured in the same run. Nothing here has
 * an aim: the figures only.
 *
 * `npx tsx bench/providers.ts`. BENCH_PROVIDERS_KEYS: N (default 5,000; 100,000 with
 * BENCH_FULL=1; 1,000 with BENCH_QUICK=1). BENCH_PROVIDERS_KMS_KEYS: the rotation's keys
 * through AWS KMS (default 500; N with BENCH_FULL=1; 300 with BENCH_QUICK=1; at most
 * N): a rotation makes one KMS request per unwrap and one per wrap, one key after the
 * other, so N keys through local-kms do not fit the default run's share of 10 minutes. When it
 * is fewer than N, the time for N keys is computed from its measured rate and labelled
 * "computed". BENCH_PROVIDERS_SECONDS: each throughput phase (default 1; 2 with
 * BENCH_FULL=1; 0.5 with BENCH_QUICK=1). BENCH_FULL=1 took 608 s on the 2-core
 * development machine (docs/performance.md, "Key providers").
 */
import { randomBytes } from 'node:crypto';
import { type SoftHsmToken, createSoftHsmToken } from '../infra/softhsm.js';
import { type LocalKmsServer, localKmsBinary, startLocalKms } from '../infra/local-kms-server.js';
import { loadConfig } from '../src/config/index.js';
import { zeroize } from '../src/crypto/index.js';
import { openKeyProvider } from '../src/keyprovider/open.js';
import type { KeyProvider } from '../src/keyprovider/provider.js';
import { type RotateRun, rotateWorker } from './rewrap.js';
import { envInt, FULL, QUICK } from './support/mode.js';
import { makeTempDir, removeDir } from './support/scratch.js';
import { isMain, reportResult, runChild, runIfMain } from './support/process.js';
import { fmtInt, fmtRatio, fmtSeconds, progress, table } from './support/report.js';

const SCRIPT = new URL('./providers.ts', import.meta.url).pathname;
const KINDS = ['local', 'pkcs11', 'aws-kms'] as const;
export type ProviderKind = (typeof KINDS)[number];
const CONCURRENCIES = [1, 16] as const;
/** Wraps in flight while a rotation run populates its keys. */
const POPULATE_CONCURRENCY = 16;
/** local-kms checks no credentials; the AWS SDK's default chain needs some (the child's only, never real ones). */
export const KMS_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'AKIALETHEBENCH000000', AWS_SECRET_ACCESS_KEY: 'lethe-bench-not-checked-by-local-kms' };

export interface ThroughputFigure {
  readonly concurrency: number;
  /** Length of each phase (wraps, then unwraps). */
  readonly seconds: number;
  /** Calls made in each phase. */
  readonly wraps: number;
  readonly unwraps: number;
  readonly wrapsPerSec: number;
  readonly unwrapsPerSec: number;
}

export interface ProviderRun {
  readonly kind: ProviderKind;
  /** KeyProvider.name of the provider measured. */
  readonly provider: string;
  readonly throughput: ThroughputFigure[];
  readonly rotation: RotateRun;
}

export interface ProvidersResult {
  /** N: the rotation's keys (BENCH_PROVIDERS_KEYS). */
  readonly keys: number;
  readonly full: boolean;
  readonly runs: ProviderRun[];
  readonly warnings: string[];
}

// ------------------------------------------------------------------ one provider (child process)

/** The provider's infrastructure (a SoftHSM2 token, a local-kms server) and the vault configuration that selects it. */
export async function providerSetup(kind: ProviderKind): Promise<{ env: (namespace: string) => Record<string, string>; stop: () => Promise<void> }> {
  if (kind === 'local') return { env: () => ({ LETHE_KEY_PROVIDER: 'local' }), stop: async () => {} };
  if (kind === 'pkcs11') {
    const token: SoftHsmToken = await createSoftHsmToken();
    return {
      env: (namespace) => ({
        LETHE_KEY_PROVIDER: 'pkcs11',
        LETHE_PKCS11_MODULE: token.module,
        LETHE_PKCS11_TOKEN_LABEL: token.tokenLabel,
        LETHE_PKCS11_PIN: token.pin,
        LETHE_PKCS11_KEY_PREFIX: namespace,
      }),
      stop: () => token.cleanup(),
    };
  }
  const kms: LocalKmsServer = await startLocalKms(localKmsBinary());
  return {
    env: (namespace) => ({ LETHE_KEY_PROVIDER: 'aws-kms', LETHE_KMS_REGION: kms.region, LETHE_KMS_ENDPOINT: kms.endpoint, LETHE_KMS_ALIAS_PREFIX: namespace }),
    stop: () => kms.stop(),
  };
}

/**
 * Wraps of fresh 32-byte DEKs for `seconds`, then unwraps of those wraps (cycling over
 * them, each checked against its DEK) for `seconds`, `concurrency` calls in flight.
 * Each phase counts the calls that finished and the time until the last one did.
 */
async function throughput(provider: KeyProvider, seconds: number, concurrency: number): Promise<ThroughputFigure> {
  const deks: Uint8Array[] = [];
  const wrapped: Uint8Array[] = [];
  const run = async (op: (i: number) => Promise<void>): Promise<{ n: number; perSec: number }> => {
    let next = 0;
    const started = performance.now();
    const deadline = started + seconds * 1000;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < deadline) await op(next++);
      }),
    );
    return { n: next, perSec: next / ((performance.now() - started) / 1000) };
  };
  try {
    const wraps = await run(async (i) => {
      const dek = new Uint8Array(randomBytes(32));
      deks[i] = dek;
      wrapped[i] = await provider.wrap(1, dek, `bench-${i}`, 'subject');
    });
    const unwraps = await run(async (k) => {
      const i = k % wraps.n;
      const dek = await provider.unwrap(1, wrapped[i]!, `bench-${i}`, 'subject');
      const same = Buffer.from(dek).equals(Buffer.from(deks[i]!));
      zeroize(dek);
      if (!same) throw new Error(`key ${i} did not round-trip through the provider`);
    });
    return { concurrency, seconds, wraps: wraps.n, unwraps: unwraps.n, wrapsPerSec: wraps.perSec, unwrapsPerSec: unwraps.perSec };
  } finally {
    for (const d of deks) zeroize(d);
  }
}

/** Throughput through the provider the vault's configuration opens, on a fresh keyring (and a fresh store namespace). */
async function measureThroughput(kind: ProviderKind, env: Record<string, string>, seconds: number): Promise<{ provider: string; figures: ThroughputFigure[] }> {
  const dataDir = await makeTempDir(`providers-${kind}`);
  let provider: KeyProvider | undefined;
  try {
    const config = loadConfig({ ...env, LETHE_DATA_DIR: dataDir });
    provider = await openKeyProvider(config, new Uint8Array(randomBytes(32)));
    await provider.createEpoch(1);
    // warm-up at the highest concurrency: every connection opened, key handles found, JIT
    await throughput(provider, Math.min(seconds, 0.5), Math.max(...CONCURRENCIES));
    const figures: ThroughputFigure[] = [];
    for (const c of CONCURRENCIES) {
      progress(`providers: ${kind}: wraps, then unwraps, ${seconds} s each at concurrency ${c}`);
      figures.push(await throughput(provider, seconds, c));
    }
    return { provider: provider.name, figures };
  } finally {
    await provider?.close();
    await removeDir(dataDir);
  }
}

async function providerWorker(kind: ProviderKind, keys: number, seconds: number): Promise<ProviderRun> {
  const setup = await providerSetup(kind);
  try {
    const t = await measureThroughput(kind, setup.env('bench-ops'), seconds);
    progress(`providers: ${kind}: KEK rotation of ${fmtInt(keys)} keys`);
    const rotation = await rotateWorker(keys, 0, {
      label: `providers_${kind.replace('-', '_')}`,
      env: setup.env('bench-rotate'),
      populateConcurrency: POPULATE_CONCURRENCY,
    });
    return { kind, provider: t.provider, throughput: t.figures, rotation };
  } finally {
    await setup.stop();
  }
}

// ------------------------------------------------------------------ orchestration

export async function runProviders(): Promise<ProvidersResult> {
  const keys = envInt('BENCH_PROVIDERS_KEYS', QUICK ? 1_000 : FULL ? 100_000 : 5_000, 10);
  // one KMS request per unwrap and per wrap, key after key: N keys through local-kms do not fit the default run's time
  const kmsKeys = Math.min(keys, envInt('BENCH_PROVIDERS_KMS_KEYS', QUICK ? 300 : FULL ? keys : 500, 10));
  const seconds = envNumber('BENCH_PROVIDERS_SECONDS', QUICK ? 0.5 : FULL ? 2 : 1);
  const runs: ProviderRun[] = [];
  progress(`providers: rotations of ${fmtInt(keys)} keys (${fmtInt(kmsKeys)} through AWS KMS); throughput phases of ${seconds} s`);
  for (const kind of KINDS) {
    const k = kind === 'aws-kms' ? kmsKeys : keys;
    progress(`providers: ${kind} (its own process)`);
    runs.push(
      await runChild<ProviderRun>(SCRIPT, {
        nodeArgs: ['--expose-gc'],
        args: ['provider', kind, String(k), String(seconds)],
        ...(kind === 'aws-kms' ? { env: KMS_CREDENTIALS } : {}),
      }),
    );
  }
  const warnings: string[] = [];
  for (const r of runs) {
    if (!r.rotation.verification.ok) warnings.push(`verification FAILED for ${r.kind}: ${JSON.stringify(r.rotation.verification)}`);
  }
  return { keys, full: FULL, runs, warnings };
}

/** The local keyring's run (the baseline of every ratio). */
export function localRun(r: ProvidersResult): ProviderRun {
  const local = r.runs.find((x) => x.kind === 'local');
  if (!local) throw new Error('the providers result has no local keyring run');
  return local;
}

/** A positive number of seconds from the environment variable `name`, else `fallback`. */
function envNumber(name: string, fallback: number): number {
  const raw = process.env[name]?.trim();
  if (!raw) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0 || n > 600) throw new Error(`${name} must be a number of seconds above 0 and at most 600`);
  return n;
}

/** Seconds a rotation of `keys` keys takes at this run's measured rate: measured when the run did `keys` keys, else computed. */
export function rotationSecondsFor(run: ProviderRun, keys: number): { seconds: number; computed: boolean } {
  return run.rotation.keys === keys
    ? { seconds: run.rotation.rotation.seconds, computed: false }
    : { seconds: keys / run.rotation.rotation.keysPerSec, computed: true };
}

export function formatProviders(r: ProvidersResult): string {
  const local = localRun(r);
  const at = (run: ProviderRun, c: number) => run.throughput.find((f) => f.concurrency === c)!;
  const throughputRows = r.runs.flatMap((run) =>
    run.throughput.map((f) => {
      const base = at(local, f.concurrency);
      return [
        run.kind,
        String(f.concurrency),
        fmtInt(f.wraps),
        fmtInt(f.unwraps),
        fmtInt(f.wrapsPerSec),
        fmtInt(f.unwrapsPerSec),
        fmtRatio(f.wrapsPerSec / base.wrapsPerSec),
        fmtRatio(f.unwrapsPerSec / base.unwrapsPerSec),
      ];
    }),
  );
  const rotationRows = r.runs.map((run) => {
    const x = run.rotation;
    const n = rotationSecondsFor(run, r.keys);
    return [
      run.kind,
      fmtInt(x.keys),
      fmtSeconds(x.population.seconds),
      fmtSeconds(x.rotation.seconds),
      fmtInt(x.rotation.keysPerSec),
      fmtRatio(x.rotation.keysPerSec / local.rotation.rotation.keysPerSec),
      `${fmtSeconds(n.seconds)}${n.computed ? ' (computed)' : ''}`,
      x.rotation.loadAvg1.map((l) => l.toFixed(2)).join(' -> '),
      x.verification.ok ? 'ok' : 'FAILED',
    ];
  });
  const lines = [
    `Key providers (${r.runs.map((x) => `${x.kind} = ${x.provider}`).join(', ')}); baseline: the local keyring, same run; ratio = provider ÷ local`,
    `wraps of fresh 32-byte DEKs for ${local.throughput[0]?.seconds ?? '?'} s, then unwraps of them (checked) for as long, through the KeyProvider the vault opens ` +
      '(ExternalKeyProvider for the external stores)',
    table(['provider', 'concurrency', 'wraps', 'unwraps', 'wraps/s', 'unwraps/s', 'wraps ÷ local', 'unwraps ÷ local'], throughputRows),
    `KEK rotation (EpochService.rotate through a vault on PostgreSQL, batch size ${local.rotation.batchSize}); populate = wrap ${POPULATE_CONCURRENCY} at a time + COPY + VACUUM ANALYZE`,
    table(
      ['provider', 'keys', 'populate', 'rotate', 'rotate keys/s', 'keys/s ÷ local', `time for ${fmtInt(r.keys)} keys`, '1-min load', 'verify'],
      rotationRows,
    ),
  ];
  if (r.runs.some((run) => rotationSecondsFor(run, r.keys).computed)) {
    lines.push(`(computed) = ${fmtInt(r.keys)} ÷ the measured rotate keys/s of the smaller run, not measured`);
  }
  for (const w of r.warnings) lines.push(`WARNING: ${w}`);
  return lines.join('\n');
}

if (isMain(import.meta.url) && process.argv[2] === 'provider') {
  const kind = process.argv[3] as ProviderKind;
  if (!KINDS.includes(kind)) throw new Error(`unknown provider ${process.argv[3]}: one of ${KINDS.join(', ')}`);
  await reportResult(await providerWorker(kind, Number(process.argv[4]), Number(process.argv[5])));
} else {
  await runIfMain(import.meta.url, runProviders, formatProviders);
}

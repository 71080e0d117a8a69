/**
 * Configuration: every setting comes from the environment, parsed once at start-up by
 * one zod schema. A bad value is refused loudly with the variable's name (never its
 * value: some of these are secrets).
 */
import path from 'node:path';
import type { z } from 'zod';
import { crossProblems } from './cross-checks.js';
import { envSchema, type Role } from './env-schema.js';
import { unknownMessage, unknownVariables } from './unknown.js';

export { ROLES, type Role, tokenPairs } from './env-schema.js';

export interface Config {
  /** Variables that look like lethe's and are not (`LETHE_TOKEN`: did you mean LETHE_TOKENS?), said at start. */
  readonly warnings: readonly string[];
  readonly port: number;
  readonly host: string;
  /** PEM files `lethe serve` serves HTTPS with (read at start: src/config/tls.ts); undefined: plain HTTP. */
  readonly tls: { certFile: string; keyFile: string; clientCaFile: string | undefined } | undefined;
  /** LETHE_BEHIND_TLS_PROXY: a TLS-terminating proxy sits in front (plain HTTP on a non-loopback host is then allowed in production). */
  readonly behindTlsProxy: boolean;
  /** NODE_ENV is `production`, compared trimmed and case-insensitively (`Production`, ` PRODUCTION ` too). */
  readonly production: boolean;
  readonly tokens: ReadonlyArray<{ role: Role; token: string }>;
  readonly tokensFile: string | undefined;
  readonly databaseUrl: string | undefined;
  readonly dbPoolSize: number;
  /** MinIO / S3; undefined: the local filesystem store under dataDir/objects. */
  readonly s3: { endpoint: string; accessKey: string; secretKey: string; sessionToken?: string; region: string } | undefined;
  readonly bucket: string;
  readonly backupBucket: string;
  readonly dataDir: string;
  readonly keyringDir: string;
  /** 32-byte root key from LETHE_ROOT_KEY; the key provider takes ownership and zeroes it. */
  readonly rootKey: Uint8Array | undefined;
  readonly rootKeyFile: string | undefined;
  /**
   * Where epoch KEKs live: the local keyring (the default), a PKCS#11 token, or AWS KMS.
   * Certificate-signing keys and system subkeys stay under the root key in every case.
   */
  readonly keyProvider: KeyProviderConfig;
  readonly leaseTtlSeconds: number;
  /** Entries a subject key holds before it is rolled into a shard or split (src/vault/key-shards.ts). */
  readonly keyShardEntries: number;
  readonly probeThreshold: number;
  /** Cosine at or above which an embedding neighbour counts as carrying the erased text. */
  readonly probeSimilarity: number;
  /** How long a replica's claim on an erasure lasts without a heartbeat (a crashed replica's work is taken over after it). */
  readonly erasureClaimSeconds: number;
  /** How often each replica looks for erasure work it can claim. */
  readonly erasurePollMs: number;
  /** How many erasures each replica runs at once (each its own claim). */
  readonly erasureConcurrency: number;
  /** How long one erasure step may run before its claim is given up and the attempt counted (the step is retried). */
  readonly erasureStepDeadlineSeconds: number;
  /** A transient step failure is retried after base · 2^(attempt-1) ms, at most cap ms, for as long as it takes. */
  readonly erasureRetry: { baseMs: number; capMs: number };
  /** Each object-store operation's base deadline (and an HTTP request's idle timeout); transfers get 1 s per MiB more. */
  readonly storeTimeoutMs: number;
  /** Erasure events streams one token may hold open at once on a replica (429 `too_many_streams` above it). */
  readonly sseStreamsPerToken: number;
  /** How often an erasure watcher reads without a notification (a missed one delays an event by at most this). */
  readonly sseFallbackPollMs: number;
  readonly bodyLimitBytes: number;
  readonly dekCacheMaxEntries: number;
  readonly dekCacheTtlSeconds: number;
  readonly rewrapBatchSize: number;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** The built-in hashing embedder with this many dimensions, or an OpenAI-compatible endpoint's model. */
  readonly embeddingDimensions: number;
  readonly embeddings: { url: string; model: string; apiKey: string | undefined } | undefined;
  /** An OpenAI-compatible chat-completions endpoint; undefined: the built-in extractive regenerator. */
  readonly regenerator: { url: string; model: string; apiKey: string | undefined } | undefined;
  /** How often a replica catches up on key destructions not yet marked in backup manifests. */
  readonly backupPropagateSeconds: number;
  /** Object Lock on the backup bucket (MinIO / S3 only): mode and default retention. */
  readonly backupObjectLock: { mode: 'governance' | 'compliance'; days: number } | undefined;
  /**
   * Object Lock retention on the ledger chain's objects (ledger/), in this mode and for
   * this long: on by default, honoured wherever the backup bucket was created with
   * Object Lock (a new bucket is); undefined: off.
   */
  readonly ledgerLock: { mode: 'governance' | 'compliance'; days: number } | undefined;
  /** LETHE_ACCEPT_BYPASSABLE_LEDGER_LOCK: serve in production although lethe's own credential can remove retained ledger versions. */
  readonly acceptBypassableLedgerLock: boolean;
  /** How often the running service checks that the ledger chain still holds what it stored (src/backups/anchor.ts). */
  readonly ledgerCheckSeconds: number;
  /** A folder (another volume, another credential) each ledger head is mirrored to, read by restores as a witness; undefined: none. */
  readonly ledgerWitnessDir: string | undefined;
  /**
   * `lethe serve` applies pending migrations at start-up; when false it refuses to start
   * on a schema that is behind (run `lethe migrate`). LETHE_AUTO_MIGRATE; default true,
   * false in production (NODE_ENV=production) on PostgreSQL (DATABASE_URL).
   */
  readonly autoMigrate: boolean;
  /** Whether this replica drains the search indexing queue (LETHE_INDEXER; default true: every replica does). */
  readonly indexer: boolean;
  /** Subject-hash shards the in-memory indexes are split into among the replicas (LETHE_INDEX_SHARDS; 1: every replica indexes everything). */
  readonly indexShards: number;
  /** Where the other replicas reach this one (LETHE_REPLICA_URL; required when sharded). */
  readonly replicaUrl: string | undefined;
  /** Worker threads its indexer seals batches on (LETHE_SEAL_WORKERS; default one fewer than the cores, at most 2; 0: the service thread). */
  readonly sealWorkers: number | undefined;
}

export type KeyProviderConfig =
  | { readonly kind: 'local' }
  | {
      readonly kind: 'pkcs11';
      readonly module: string;
      readonly tokenLabel: string;
      /** The user PIN, or the file holding it (read at start, never logged). */
      readonly pin: string | undefined;
      readonly pinFile: string | undefined;
      readonly prefix: string;
    }
  | {
      readonly kind: 'aws-kms';
      readonly region: string;
      readonly endpoint: string | undefined;
      readonly aliasPrefix: string;
      readonly deletionWindowDays: number;
    };

export class ConfigError extends Error {
  readonly problems: ReadonlyArray<{ variable: string; message: string }>;
  constructor(problems: ReadonlyArray<{ variable: string; message: string }>) {
    super(`invalid configuration:\n${problems.map((p) => `  ${p.variable}: ${p.message}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** Parses the environment. Throws ConfigError naming every bad variable. */
export function loadConfig(env: Readonly<Record<string, string | undefined>> = process.env): Config {
  const picked: Record<string, string> = {};
  for (const key of Object.keys(envSchema.shape)) {
    const v = env[key];
    // blank means unset, for every variable alike
    if (v !== undefined && v.trim() !== '') picked[key] = v;
  }
  const parsed = envSchema.safeParse(picked);
  const problems: Array<{ variable: string; message: string }> = parsed.success
    ? []
    : parsed.error.issues.map((i) => ({ variable: String(i.path[0] ?? '?'), message: i.message }));
  // checks across variables run on the raw values, so they are reported alongside any per-variable problem
  problems.push(...crossProblems(picked, env, parsed.success ? parsed.data : undefined));
  // a typo'd variable is ignored as if unset: said at start, and in production an unknown LETHE_* one stops it
  const unknown = unknownVariables(env, CONFIG_VARIABLES);
  const production = (env.NODE_ENV ?? '').trim().toLowerCase() === 'production';
  for (const u of unknown) {
    if (production && u.variable.startsWith('LETHE_')) problems.push({ variable: u.variable, message: unknownMessage(u) });
  }
  if (problems.length > 0 || !parsed.success) throw new ConfigError(problems);
  const e = parsed.data;
  const dataDir = path.resolve(e.LETHE_DATA_DIR);
  return {
    warnings: unknown.map((u) => `${u.variable}: ${unknownMessage(u)}`),
    port: e.PORT,
    host: e.HOST,
    tls:
      e.LETHE_TLS_CERT && e.LETHE_TLS_KEY
        ? {
            certFile: path.resolve(e.LETHE_TLS_CERT),
            keyFile: path.resolve(e.LETHE_TLS_KEY),
            clientCaFile: e.LETHE_TLS_CLIENT_CA && path.resolve(e.LETHE_TLS_CLIENT_CA),
          }
        : undefined,
    behindTlsProxy: e.LETHE_BEHIND_TLS_PROXY,
    production: e.NODE_ENV.trim().toLowerCase() === 'production',
    tokens: e.LETHE_TOKENS,
    tokensFile: e.LETHE_TOKENS_FILE,
    databaseUrl: e.DATABASE_URL,
    dbPoolSize: e.LETHE_DB_POOL_SIZE,
    s3:
      e.S3_ENDPOINT && e.S3_ACCESS_KEY && e.S3_SECRET_KEY
        ? {
            endpoint: e.S3_ENDPOINT,
            accessKey: e.S3_ACCESS_KEY,
            secretKey: e.S3_SECRET_KEY,
            ...(e.S3_SESSION_TOKEN ? { sessionToken: e.S3_SESSION_TOKEN } : {}),
            region: e.S3_REGION,
          }
        : undefined,
    bucket: e.S3_BUCKET,
    backupBucket: e.S3_BACKUP_BUCKET,
    dataDir,
    keyringDir: path.resolve(e.LETHE_KEYRING_DIR ?? path.join(dataDir, 'keyring')),
    rootKey: e.LETHE_ROOT_KEY,
    rootKeyFile: e.LETHE_ROOT_KEY_FILE,
    keyProvider: keyProviderConfig(e, env),
    leaseTtlSeconds: e.LETHE_LEASE_TTL_SECONDS,
    keyShardEntries: e.LETHE_KEY_SHARD_ENTRIES,
    probeThreshold: e.LETHE_PROBE_THRESHOLD,
    probeSimilarity: e.LETHE_PROBE_SIMILARITY,
    erasureClaimSeconds: e.LETHE_ERASURE_CLAIM_SECONDS,
    erasurePollMs: e.LETHE_ERASURE_POLL_MS,
    erasureConcurrency: e.LETHE_ERASURE_CONCURRENCY,
    erasureStepDeadlineSeconds: e.LETHE_ERASURE_STEP_DEADLINE_SECONDS,
    erasureRetry: { baseMs: e.LETHE_ERASURE_RETRY_BASE_MS, capMs: Math.max(e.LETHE_ERASURE_RETRY_BASE_MS, e.LETHE_ERASURE_RETRY_CAP_MS) },
    storeTimeoutMs: e.LETHE_STORE_TIMEOUT_MS,
    sseStreamsPerToken: e.LETHE_SSE_STREAMS_PER_TOKEN,
    sseFallbackPollMs: e.LETHE_SSE_FALLBACK_POLL_MS,
    bodyLimitBytes: e.LETHE_BODY_LIMIT_BYTES,
    dekCacheMaxEntries: e.LETHE_DEK_CACHE_MAX_ENTRIES,
    dekCacheTtlSeconds: e.LETHE_DEK_CACHE_TTL_SECONDS,
    rewrapBatchSize: e.LETHE_REWRAP_BATCH_SIZE,
    logLevel: e.LETHE_LOG_LEVEL,
    embeddingDimensions: e.LETHE_EMBEDDING_DIMENSIONS,
    backupPropagateSeconds: e.LETHE_BACKUP_PROPAGATE_SECONDS,
    backupObjectLock: e.LETHE_BACKUP_OBJECT_LOCK === 'off' ? undefined : { mode: e.LETHE_BACKUP_OBJECT_LOCK, days: e.LETHE_BACKUP_RETENTION_DAYS },
    ledgerLock: e.LETHE_LEDGER_LOCK === 'off' ? undefined : { mode: e.LETHE_LEDGER_LOCK, days: e.LETHE_LEDGER_RETENTION_DAYS },
    acceptBypassableLedgerLock: e.LETHE_ACCEPT_BYPASSABLE_LEDGER_LOCK === 'true',
    ledgerCheckSeconds: e.LETHE_LEDGER_CHECK_SECONDS,
    ledgerWitnessDir: e.LETHE_LEDGER_WITNESS_DIR,
    indexer: e.LETHE_INDEXER === 'true',
    indexShards: e.LETHE_INDEX_SHARDS,
    replicaUrl: e.LETHE_REPLICA_URL,
    sealWorkers: e.LETHE_SEAL_WORKERS,
    autoMigrate: e.LETHE_AUTO_MIGRATE === undefined ? !(e.NODE_ENV.trim().toLowerCase() === 'production' && e.DATABASE_URL) : e.LETHE_AUTO_MIGRATE === 'true',
    embeddings:
      e.LETHE_EMBEDDINGS_URL && e.LETHE_EMBEDDINGS_MODEL
        ? { url: e.LETHE_EMBEDDINGS_URL, model: e.LETHE_EMBEDDINGS_MODEL, apiKey: e.LETHE_EMBEDDINGS_API_KEY }
        : undefined,
    regenerator:
      e.LETHE_REGENERATOR_URL && e.LETHE_REGENERATOR_MODEL
        ? { url: e.LETHE_REGENERATOR_URL, model: e.LETHE_REGENERATOR_MODEL, apiKey: e.LETHE_REGENERATOR_API_KEY }
        : undefined,
  };
}

function keyProviderConfig(e: z.infer<typeof envSchema>, env: Readonly<Record<string, string | undefined>>): KeyProviderConfig {
  switch (e.LETHE_KEY_PROVIDER) {
    case 'local':
      return { kind: 'local' };
    case 'pkcs11':
      return {
        kind: 'pkcs11',
        module: path.resolve(e.LETHE_PKCS11_MODULE!),
        tokenLabel: e.LETHE_PKCS11_TOKEN_LABEL!,
        pin: e.LETHE_PKCS11_PIN,
        pinFile: e.LETHE_PKCS11_PIN_FILE,
        prefix: e.LETHE_PKCS11_KEY_PREFIX,
      };
    case 'aws-kms':
      return {
        kind: 'aws-kms',
        region: e.LETHE_KMS_REGION ?? env.AWS_REGION!.trim(),
        endpoint: e.LETHE_KMS_ENDPOINT?.replace(/\/$/, ''),
        aliasPrefix: e.LETHE_KMS_ALIAS_PREFIX,
        deletionWindowDays: e.LETHE_KMS_DELETION_WINDOW_DAYS,
      };
  }
}

/** The variables this module reads, for --help output and the README. */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(envSchema.shape);

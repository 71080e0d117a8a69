/**
 * Configuration: every setting comes from the environment, parsed once at start-up by
 * one zod schema. A bad value is refused loudly with the variable's name (never its
 * value: some of these are secrets).
 */
import path from 'node:path';
import { z } from 'zod';
import { crossProblems } from './cross-checks.js';

export const ROLES = ['writer', 'backup', 'eraser', 'approver', 'admin'] as const;
export type Role = (typeof ROLES)[number];

const int = (def: number, min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .optional()
    .transform((v) => v ?? def);

/** A decimal from 0 to 1. */
const fraction = (def: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+(\.\d+)?$/, 'must be a decimal number from 0 to 1')
    .transform(Number)
    .pipe(z.number().min(0).max(1))
    .optional()
    .transform((v) => v ?? def);

const tokenPairs = z
  .string()
  .transform((raw, ctx) => {
    const out: Array<{ role: Role; token: string }> = [];
    for (const part of raw.split(',').map((p) => p.trim()).filter((p) => p.length > 0)) {
      const eq = part.indexOf('=');
      const role = part.slice(0, eq);
      const token = part.slice(eq + 1);
      if (eq <= 0 || !(ROLES as readonly string[]).includes(role)) {
        ctx.addIssue({ code: 'custom', message: `each entry must be role=token with role one of ${ROLES.join(', ')}` });
        return z.NEVER;
      }
      if (token.length < 8) {
        ctx.addIssue({ code: 'custom', message: `the ${role} token must be at least 8 characters` });
        return z.NEVER;
      }
      out.push({ role: role as Role, token });
    }
    return out;
  })
  .optional()
  .transform((v) => v ?? []);

const rootKey = z
  .string()
  .trim()
  .transform((raw, ctx) => {
    const bytes = Buffer.from(raw, raw.includes('-') || raw.includes('_') ? 'base64url' : 'base64');
    if (bytes.length !== 32) {
      ctx.addIssue({ code: 'custom', message: 'must be 32 bytes, base64 encoded' });
      return z.NEVER;
    }
    return new Uint8Array(bytes);
  })
  .optional();

/** A yes-or-no setting: true/false, 1/0, yes/no (any case); unset is false. */
const flag = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^(true|false|1|0|yes|no)$/, 'must be true or false')
  .transform((v) => v === 'true' || v === '1' || v === 'yes')
  .optional()
  .transform((v) => v ?? false);

const envSchema = z.object({
  PORT: int(8787, 0, 65535),
  HOST: z.string().trim().min(1).optional().default('127.0.0.1'),
  LETHE_TLS_CERT: z.string().trim().min(1).optional(),
  LETHE_TLS_KEY: z.string().trim().min(1).optional(),
  LETHE_TLS_CLIENT_CA: z.string().trim().min(1).optional(),
  LETHE_BEHIND_TLS_PROXY: flag,
  NODE_ENV: z.string().optional().default('development'),
  LETHE_TOKENS: tokenPairs,
  LETHE_TOKENS_FILE: z.string().trim().min(1).optional(),
  DATABASE_URL: z
    .string()
    .trim()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  LETHE_DB_POOL_SIZE: int(10, 1, 200),
  S3_ENDPOINT: z
    .string()
    .trim()
    .regex(/^https?:\/\/[^/\s]+\/?$/, 'must be http(s)://host[:port]')
    .optional(),
  S3_ACCESS_KEY: z.string().trim().min(1).optional(),
  S3_SECRET_KEY: z.string().min(1).optional(),
  S3_SESSION_TOKEN: z.string().trim().min(1).optional(),
  S3_REGION: z.string().trim().min(1).optional().default('us-east-1'),
  S3_BUCKET: z
    .string()
    .trim()
    .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be a valid S3 bucket name')
    .optional()
    .default('lethe'),
  S3_BACKUP_BUCKET: z
    .string()
    .trim()
    .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be a valid S3 bucket name')
    .optional()
    .default('lethe-backups'),
  LETHE_DATA_DIR: z.string().trim().min(1).optional().default('./.lethe'),
  LETHE_KEYRING_DIR: z.string().trim().min(1).optional(),
  LETHE_ROOT_KEY: rootKey,
  LETHE_ROOT_KEY_FILE: z.string().trim().min(1).optional(),
  LETHE_KEY_PROVIDER: z.enum(['local', 'pkcs11', 'aws-kms']).optional().default('local'),
  LETHE_PKCS11_MODULE: z.string().trim().min(1).optional(),
  LETHE_PKCS11_TOKEN_LABEL: z.string().trim().min(1).max(32).optional(),
  LETHE_PKCS11_PIN: z.string().min(1).optional(),
  LETHE_PKCS11_PIN_FILE: z.string().trim().min(1).optional(),
  LETHE_PKCS11_KEY_PREFIX: z.string().trim().regex(/^[A-Za-z0-9._-]{1,32}$/, 'must be 1 to 32 letters, digits, dots, dashes or underscores').optional().default('lethe'),
  LETHE_KMS_REGION: z.string().trim().regex(/^[a-z0-9-]{2,32}$/, 'must be an AWS region name such as eu-west-1').optional(),
  LETHE_KMS_ENDPOINT: z.string().trim().regex(/^https?:\/\/[^/\s]+\/?$/, 'must be http(s)://host[:port]').optional(),
  LETHE_KMS_ALIAS_PREFIX: z.string().trim().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, dashes or underscores').optional().default('lethe'),
  LETHE_KMS_DELETION_WINDOW_DAYS: int(7, 7, 30),
  LETHE_LEASE_TTL_SECONDS: int(300, 1, 86_400),
  LETHE_PROBE_THRESHOLD: fraction(0.15),
  LETHE_PROBE_SIMILARITY: fraction(0.9),
  LETHE_ERASURE_CLAIM_SECONDS: int(30, 1, 3600),
  LETHE_ERASURE_POLL_MS: int(1000, 10, 60_000),
  LETHE_ERASURE_CONCURRENCY: int(4, 1, 64),
  LETHE_ERASURE_STEP_DEADLINE_SECONDS: int(300, 1, 86_400),
  LETHE_ERASURE_RETRY_BASE_MS: int(1000, 1, 3_600_000),
  LETHE_ERASURE_RETRY_CAP_MS: int(300_000, 1, 86_400_000),
  LETHE_STORE_TIMEOUT_MS: int(10_000, 100, 3_600_000),
  LETHE_SSE_STREAMS_PER_TOKEN: int(32, 1, 100_000),
  LETHE_SSE_FALLBACK_POLL_MS: int(5000, 100, 600_000),
  LETHE_BODY_LIMIT_BYTES: int(1024 * 1024, 1024, 64 * 1024 * 1024),
  LETHE_DEK_CACHE_MAX_ENTRIES: int(10_000, 0, 10_000_000),
  LETHE_DEK_CACHE_TTL_SECONDS: int(60, 0, 86_400),
  LETHE_REWRAP_BATCH_SIZE: int(500, 1, 10_000),
  LETHE_EMBEDDING_DIMENSIONS: int(512, 16, 4096),
  LETHE_EMBEDDINGS_URL: z.string().trim().regex(/^https?:\/\/\S+$/, 'must be an http(s):// URL').optional(),
  LETHE_EMBEDDINGS_MODEL: z.string().trim().min(1).optional(),
  LETHE_EMBEDDINGS_API_KEY: z.string().trim().min(1).optional(),
  LETHE_REGENERATOR_URL: z.string().trim().regex(/^https?:\/\/\S+$/, 'must be an http(s):// URL').optional(),
  LETHE_REGENERATOR_MODEL: z.string().trim().min(1).optional(),
  LETHE_REGENERATOR_API_KEY: z.string().trim().min(1).optional(),
  LETHE_BACKUP_PROPAGATE_SECONDS: int(60, 1, 86_400),
  LETHE_BACKUP_OBJECT_LOCK: z.enum(['off', 'governance', 'compliance']).optional().default('off'),
  LETHE_BACKUP_RETENTION_DAYS: int(30, 1, 36_500),
  LETHE_LEDGER_LOCK: z.enum(['off', 'governance', 'compliance']).optional().default('compliance'),
  LETHE_ACCEPT_BYPASSABLE_LEDGER_LOCK: z.string().trim().toLowerCase().pipe(z.enum(['true', 'false'], { message: 'must be true or false' })).optional().default('false'),
  LETHE_LEDGER_RETENTION_DAYS: int(3650, 1, 36_500),
  LETHE_LEDGER_CHECK_SECONDS: int(60, 1, 86_400),
  LETHE_LEDGER_WITNESS_DIR: z.string().trim().min(1).optional(),
  LETHE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional().default('info'),
  // no default here: it depends on NODE_ENV and DATABASE_URL (loadConfig)
  LETHE_AUTO_MIGRATE: z.string().trim().toLowerCase().pipe(z.enum(['true', 'false'], { message: 'must be true or false' })).optional(),
  LETHE_INDEXER: z.string().trim().toLowerCase().pipe(z.enum(['true', 'false'], { message: 'must be true or false' })).optional().default('true'),
});

export interface Config {
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
  if (problems.length > 0 || !parsed.success) throw new ConfigError(problems);
  const e = parsed.data;
  const dataDir = path.resolve(e.LETHE_DATA_DIR);
  return {
    port: e.PORT,
    host: e.HOST,
    tls:
      e.LETHE_TLS_CERT && e.LETHE_TLS_KEY
        ? { certFile: path.resolve(e.LETHE_TLS_CERT), keyFile: path.resolve(e.LETHE_TLS_KEY), clientCaFile: e.LETHE_TLS_CLIENT_CA && path.resolve(e.LETHE_TLS_CLIENT_CA) }
        : undefined,
    behindTlsProxy: e.LETHE_BEHIND_TLS_PROXY,
    production: e.NODE_ENV.trim().toLowerCase() === 'production',
    tokens: e.LETHE_TOKENS,
    tokensFile: e.LETHE_TOKENS_FILE,
    databaseUrl: e.DATABASE_URL,
    dbPoolSize: e.LETHE_DB_POOL_SIZE,
    s3:
      e.S3_ENDPOINT && e.S3_ACCESS_KEY && e.S3_SECRET_KEY
        ? { endpoint: e.S3_ENDPOINT, accessKey: e.S3_ACCESS_KEY, secretKey: e.S3_SECRET_KEY, ...(e.S3_SESSION_TOKEN ? { sessionToken: e.S3_SESSION_TOKEN } : {}), region: e.S3_REGION }
        : undefined,
    bucket: e.S3_BUCKET,
    backupBucket: e.S3_BACKUP_BUCKET,
    dataDir,
    keyringDir: path.resolve(e.LETHE_KEYRING_DIR ?? path.join(dataDir, 'keyring')),
    rootKey: e.LETHE_ROOT_KEY,
    rootKeyFile: e.LETHE_ROOT_KEY_FILE,
    keyProvider: keyProviderConfig(e, env),
    leaseTtlSeconds: e.LETHE_LEASE_TTL_SECONDS,
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
export const CONFIG_VARIABLES = Object.keys(envSchema.shape);

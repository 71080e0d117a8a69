/** The environment's schema: every variable the service reads, its default and bounds (loadConfig in index.ts parses with it). */
import { z } from 'zod';

import { parseTokenPairs } from './token-pairs.js';

export { ROLES, type Role } from './token-pairs.js';

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

/** LETHE_TOKENS (token-pairs.ts). */
export const tokenPairs = z
  .string()
  .transform((raw, ctx) => {
    const parsed = parseTokenPairs(raw);
    if ('problem' in parsed) {
      ctx.addIssue({ code: 'custom', message: parsed.problem });
      return z.NEVER;
    }
    return parsed.pairs;
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

export const envSchema = z.object({
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
    .superRefine((value, ctx) => {
      const problem = s3EndpointProblem(value);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
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
  LETHE_PKCS11_KEY_PREFIX: z
    .string()
    .trim()
    .regex(/^[A-Za-z0-9._-]{1,32}$/, 'must be 1 to 32 letters, digits, dots, dashes or underscores')
    .optional()
    .default('lethe'),
  LETHE_KMS_REGION: z
    .string()
    .trim()
    .regex(/^[a-z0-9-]{2,32}$/, 'must be an AWS region name such as eu-west-1')
    .optional(),
  LETHE_KMS_ENDPOINT: z
    .string()
    .trim()
    .regex(/^https?:\/\/[^/\s]+\/?$/, 'must be http(s)://host[:port]')
    .optional(),
  LETHE_KMS_ALIAS_PREFIX: z
    .string()
    .trim()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, dashes or underscores')
    .optional()
    .default('lethe'),
  LETHE_KMS_DELETION_WINDOW_DAYS: int(7, 7, 30),
  LETHE_LEASE_TTL_SECONDS: int(300, 1, 86_400),
  LETHE_KEY_SHARD_ENTRIES: int(256, 2, 1_000_000),
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
  LETHE_EMBEDDINGS_URL: z
    .string()
    .trim()
    .regex(/^https?:\/\/\S+$/, 'must be an http(s):// URL')
    .optional(),
  LETHE_EMBEDDINGS_MODEL: z.string().trim().min(1).optional(),
  LETHE_EMBEDDINGS_API_KEY: z.string().trim().min(1).optional(),
  LETHE_REGENERATOR_URL: z
    .string()
    .trim()
    .regex(/^https?:\/\/\S+$/, 'must be an http(s):// URL')
    .optional(),
  LETHE_REGENERATOR_MODEL: z.string().trim().min(1).optional(),
  LETHE_REGENERATOR_API_KEY: z.string().trim().min(1).optional(),
  LETHE_BACKUP_PROPAGATE_SECONDS: int(60, 1, 86_400),
  LETHE_BACKUP_OBJECT_LOCK: z.enum(['off', 'governance', 'compliance']).optional().default('off'),
  LETHE_BACKUP_RETENTION_DAYS: int(30, 1, 36_500),
  LETHE_LEDGER_LOCK: z.enum(['off', 'governance', 'compliance']).optional().default('compliance'),
  LETHE_ACCEPT_BYPASSABLE_LEDGER_LOCK: z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.enum(['true', 'false'], { message: 'must be true or false' }))
    .optional()
    .default('false'),
  LETHE_LEDGER_RETENTION_DAYS: int(3650, 1, 36_500),
  LETHE_LEDGER_CHECK_SECONDS: int(60, 1, 86_400),
  LETHE_LEDGER_WITNESS_DIR: z.string().trim().min(1).optional(),
  LETHE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional().default('info'),
  // no default here: it depends on NODE_ENV and DATABASE_URL (loadConfig)
  LETHE_AUTO_MIGRATE: z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.enum(['true', 'false'], { message: 'must be true or false' }))
    .optional(),
  // no default here: it depends on the machine's cores (src/vectors/seal-pool.ts)
  LETHE_SEAL_WORKERS: z.string().trim().regex(/^\d+$/, 'must be a whole number').transform(Number).pipe(z.number().int().min(0).max(16)).optional(),
  LETHE_INDEX_SHARDS: int(1, 1, 1024),
  LETHE_REPLICA_URL: z
    .string()
    .trim()
    .refine((v) => {
      try {
        const u = new URL(v);
        return (
          (u.protocol === 'http:' || u.protocol === 'https:') && !u.username && !u.password && (u.pathname === '/' || u.pathname === '') && !u.search && !u.hash
        );
      } catch {
        return false;
      }
    }, 'must be the http(s) address other replicas reach this one at, with no path, query or credentials')
    .optional(),
  LETHE_INDEXER: z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.enum(['true', 'false'], { message: 'must be true or false' }))
    .optional()
    .default('true'),
});

/**
 * What is wrong with an S3_ENDPOINT, said without repeating it (a URL may carry a
 * credential): one http(s)://host[:port], or the servers of one cluster, comma-separated.
 */
export function s3EndpointProblem(value: string): string | undefined {
  const shape = 'must be http(s)://host[:port], or the servers of one cluster, comma-separated';
  const seen = new Set<string>();
  let scheme: string | undefined;
  for (const member of value.split(',').map((m) => m.trim())) {
    let url: URL;
    try {
      url = new URL(member);
    } catch {
      return shape;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return shape;
    if (url.username || url.password) return 'must not carry a user or password: use S3_ACCESS_KEY and S3_SECRET_KEY';
    if (url.pathname !== '/' || url.search || url.hash || member.includes('\\')) return `${shape} (no path, query or fragment)`;
    if (scheme !== undefined && url.protocol !== scheme) return 'names servers of one cluster: give them all the same scheme (http or https)';
    scheme = url.protocol;
    if (seen.has(url.host)) return 'names a server twice';
    seen.add(url.host);
  }
  return undefined;
}

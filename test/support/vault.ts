/**
 * Test fixtures: a configuration, an opened vault and a Hono app over a real
 * PostgreSQL database (or PGlite when asked), with a private data dir and keyring.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { OpenAPIHono } from '@hono/zod-openapi';
import { inject } from 'vitest';
import { type Config, loadConfig } from '../../src/config/index.js';
import { createHttpApp } from '../../src/http/app.js';
import { type AuthEnv, TokenStore } from '../../src/http/auth.js';
import { createLogger } from '../../src/observability/logger.js';
import { openApp, type OpenAppOptions, type App } from '../../src/app/open.js';
import { createTestDatabase, type TestDatabase } from './pg.js';

export const TOKENS = {
  writer: 'writer-token-0001',
  backup: 'backup-token-0001',
  eraser: 'eraser-token-0001',
  approver: 'approver-token-01',
  admin: 'admin-token-00001',
} as const;

export type TestRole = keyof typeof TOKENS;

/** A second token of some roles: another principal with the same role (a dismissal's approver must be a second person). */
export const SECOND_TOKENS = {
  writer: 'writer-token-0002',
  eraser: 'eraser-token-0002',
  approver: 'approver-token-02',
  admin: 'admin-token-00002',
} as const;

export const TOKENS_ENV = [...Object.entries(TOKENS), ...Object.entries(SECOND_TOKENS)].map(([role, token]) => `${role}=${token}`).join(',');

/** The environment that points a test vault at the suite's MinIO, with fresh buckets named after `prefix`. */
export function minioEnv(prefix: string): Record<string, string> {
  const minio = inject('minio');
  const tag = randomBytes(5).toString('hex');
  return {
    S3_ENDPOINT: minio.endpoint,
    S3_ACCESS_KEY: minio.accessKey,
    S3_SECRET_KEY: minio.secretKey,
    S3_BUCKET: `${prefix}-${tag}`,
    S3_BACKUP_BUCKET: `${prefix}-bak-${tag}`,
  };
}

export function tempDir(prefix = 'lethe-test-'): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

/**
 * Makes a vault's keyring look as lethe left it before certificate-signing keys (issue
 * 13): its epochs, no `certificate-signing/` folder. Its next signature or listing makes
 * the list as for such a vault: a key of its own, and the root-derived key (retired)
 * that signed its certificates before. Call before the vault signs anything: the
 * service reads the keys from the keyring at every use, so it needs no restart.
 */
export function asKeyringBeforeSigningKeys(keyringDir: string): void {
  rmSync(path.join(keyringDir, 'certificate-signing'), { recursive: true, force: true });
}

/** Environment for a vault on `databaseUrl` (PGlite when undefined) in `dataDir`. */
export function testEnv(options: {
  databaseUrl?: string | undefined;
  dataDir: string;
  rootKey?: string;
  extra?: Record<string, string>;
}): Record<string, string> {
  return {
    ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : {}),
    LETHE_DATA_DIR: options.dataDir,
    LETHE_ROOT_KEY: options.rootKey ?? randomBytes(32).toString('base64'),
    LETHE_TOKENS: TOKENS_ENV,
    LETHE_LOG_LEVEL: 'silent',
    ...options.extra,
  };
}

export interface TestVault {
  /** The opened app (src/app/open.ts): its services. */
  readonly app: App;
  readonly config: Config;
  readonly env: Record<string, string>;
  readonly db: TestDatabase | undefined;
  readonly dataDir: string;
  /** Opens a second vault on the same database and keyring (another replica). */
  reopen(options?: Partial<OpenAppOptions>, extraEnv?: Record<string, string>): Promise<App>;
  close(): Promise<void>;
}

export async function openTestVault(
  options: { embedded?: boolean; extraEnv?: Record<string, string>; app?: Partial<OpenAppOptions> } = {},
): Promise<TestVault> {
  const db = options.embedded ? undefined : await createTestDatabase();
  const dataDir = tempDir();
  // each test vault is a deployment of its own: on MinIO, its own backup bucket (two databases never share a ledger chain)
  const extra =
    options.extraEnv?.S3_ENDPOINT && !options.extraEnv.S3_BACKUP_BUCKET
      ? { ...options.extraEnv, S3_BACKUP_BUCKET: `lethe-bak-${randomBytes(5).toString('hex')}` }
      : options.extraEnv;
  const env = testEnv({ databaseUrl: db?.url, dataDir, ...(extra ? { extra } : {}) });
  const config = loadConfig(env);
  const logger = createLogger('silent');
  const app = await openApp(config, { logger, ...options.app });
  const others: App[] = [];
  return {
    app,
    config,
    env,
    db,
    dataDir,
    async reopen(more = {}, extraEnv = {}) {
      const v = await openApp(loadConfig({ ...env, ...extraEnv }), { logger, ...more });
      others.push(v);
      return v;
    },
    async close() {
      for (const v of others) await v.close().catch(() => {});
      await app.close();
      await db?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** `second`: the call presents the role's second token (SECOND_TOKENS), another principal. */
export type CallOptions = { role?: TestRole | 'none'; second?: boolean; body?: unknown; rawBody?: string; headers?: Record<string, string> };

/** The fetch init of a test call: the role's bearer token (or none), a JSON or raw body. */
export function requestInit(method: string, o: CallOptions = {}): RequestInit {
  const headers: Record<string, string> = { ...o.headers };
  const role = o.role ?? 'writer';
  if (role !== 'none') headers.authorization = `Bearer ${o.second && role in SECOND_TOKENS ? SECOND_TOKENS[role as keyof typeof SECOND_TOKENS] : TOKENS[role]}`;
  let body: string | undefined;
  if (o.rawBody !== undefined) body = o.rawBody;
  else if (o.body !== undefined) body = JSON.stringify(o.body);
  if (body !== undefined) headers['content-type'] ??= 'application/json';
  return { method, headers, ...(body !== undefined ? { body } : {}) };
}

export interface TestApp extends TestVault {
  /** The HTTP app over it (src/http/app.ts). */
  readonly http: OpenAPIHono<AuthEnv>;
  /** http.request with the role's bearer token (or none). */
  call(method: string, path: string, options?: CallOptions): Promise<Response>;
}

export async function openTestApp(options: Parameters<typeof openTestVault>[0] = {}): Promise<TestApp> {
  const tv = await openTestVault(options);
  const http = createHttpApp({ services: tv.app, tokens: TokenStore.fromPairs(tv.config.tokens) });
  return {
    ...tv,
    http,
    call(method, p, o = {}) {
      return Promise.resolve(http.request(p, requestInit(method, o)));
    },
  };
}

/** Gives a test vault an audit history of every kind: two leases, a destruction, a rotation. */
export async function withAuditHistory(tv: TestVault, reason: string): Promise<TestVault> {
  const a = await tv.app.keys.lease('user:a', 'writer');
  await tv.app.keys.lease('user:b', 'writer');
  await tv.app.keys.destroyKey(a.keyId, { reason, actor: 'admin' });
  await tv.app.epochs.rotate('admin');
  return tv;
}

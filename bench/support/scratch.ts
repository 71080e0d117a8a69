/**
 * The scaffold every section stands on, written once: scratch lethe_bench_* databases
 * (dropped on exit and on Ctrl-C), temp directories, root keys, a vault opened in
 * process on them (scratchVault), and openScratch — a database, a data directory and,
 * when asked, a MinIO server, released together by one cleanup.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { openApp, type App } from '../../src/app/open.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/logger.js';
import { minioBinary, type MinioServer, startMinio } from '../../infra/minio-server.js';
import { progress } from './report.js';

/** Server holding the scratch databases (admin connection; trust auth). */
export const PG_ADMIN_URL = process.env.BENCH_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export function databaseUrl(name: string): string {
  const u = new URL(PG_ADMIN_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

const liveDatabases = new Set<string>();
let interruptHandler = false;

/** Ctrl-C / SIGTERM: drop this process's scratch databases before exiting. */
function dropOnInterrupt(): void {
  if (interruptHandler) return;
  interruptHandler = true;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      progress(`${signal}: dropping ${[...liveDatabases].join(', ') || 'no databases'}`);
      Promise.allSettled([...liveDatabases].map((n) => dropScratchDatabase(n))).finally(() => process.exit(130));
    });
  }
}

/** Creates a fresh lethe_bench_* database; returns its name and URL. */
export async function createScratchDatabase(label: string): Promise<{ name: string; url: string }> {
  const name = `lethe_bench_${label}_${process.pid}_${randomBytes(3).toString('hex')}`;
  if (!/^lethe_bench_[a-z0-9_]+$/.test(name)) throw new Error(`bad database name ${name}`);
  dropOnInterrupt();
  const sql = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    await sql.unsafe(`create database ${name}`);
    liveDatabases.add(name);
  } finally {
    await sql.end({ timeout: 5 });
  }
  return { name, url: databaseUrl(name) };
}

/** Drops a database this benchmark created (only lethe_bench_* names). */
export async function dropScratchDatabase(name: string): Promise<void> {
  if (!/^lethe_bench_[a-z0-9_]+$/.test(name)) throw new Error(`refusing to drop ${name}`);
  const sql = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    await sql.unsafe(`drop database if exists ${name} with (force)`);
    liveDatabases.delete(name);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

export async function makeTempDir(label: string): Promise<string> {
  return mkdtemp(path.join(tmpdir(), `lethe-bench-${label}-`));
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/** A random root key in the form LETHE_ROOT_KEY expects. */
export function randomRootKey(): string {
  return randomBytes(32).toString('base64');
}

export interface ScratchVault {
  readonly vault: App;
  readonly db: { readonly name: string; readonly url: string };
  readonly dataDir: string;
  /** Closes the vault, drops the database and removes the data directory; a failing step is reported, not thrown. */
  readonly cleanup: () => Promise<void>;
}

/**
 * Opens a vault on a fresh scratch database (migrations run; local filesystem object
 * store under a fresh temp dir; no listener, so no search index rebuild at open).
 */
export async function scratchVault(
  label: string,
  options: { beforeOpen?: (db: { readonly name: string; readonly url: string }) => Promise<void> } = {},
): Promise<ScratchVault> {
  const db = await createScratchDatabase(label);
  const dataDir = await makeTempDir(label);
  const env: Record<string, string> = { DATABASE_URL: db.url, LETHE_DATA_DIR: dataDir, LETHE_ROOT_KEY: randomRootKey(), LETHE_LOG_LEVEL: 'warn' };
  let vault: App;
  try {
    // database settings that must be in place before the vault's sessions connect
    await options.beforeOpen?.(db);
    // no S3_* variables: the local filesystem object store under dataDir; listen false: no rebuild at open
    vault = await openApp(loadConfig(env), { logger: createLogger('warn', process.stderr), listen: false });
  } catch (e) {
    await dropScratchDatabase(db.name).catch(() => {});
    await removeDir(dataDir);
    throw e;
  }
  return {
    vault,
    db,
    dataDir,
    cleanup: () =>
      cleanup(label, [
        ['vault', () => vault.close()],
        ['database', () => dropScratchDatabase(db.name)],
        ['data dir', () => removeDir(dataDir)],
      ]),
  };
}

/**
 * Runs cleanup steps in order. A step that fails is reported on stderr as
 * `<label>: cleanup of the <name> failed: <message>`, not thrown, and the next step still runs.
 */
export async function cleanup(label: string, steps: Array<[string, () => Promise<unknown>]>): Promise<void> {
  for (const [name, step] of steps) {
    try {
      await step();
    } catch (e) {
      progress(`${label}: cleanup of the ${name} failed: ${(e as Error).message}`);
    }
  }
}

/** A scratch database: its name (lethe_bench_*) and URL. */
export interface ScratchDatabase {
  readonly name: string;
  readonly url: string;
}

/**
 * What a section runs on: a fresh database (none with `database: false`: the embedded
 * PGlite under the data directory), a fresh data directory and, when asked, a MinIO
 * server of its own. Resources the section opens on top (a service, a vault, a
 * client, a connection) are handed to `defer`; `cleanup` releases them, last first,
 * then the database, MinIO and the data directory. A step that fails is reported, not
 * thrown, and the next one still runs.
 */
export interface Scratch<Db extends ScratchDatabase | undefined = ScratchDatabase> {
  readonly label: string;
  readonly db: Db;
  readonly dataDir: string;
  /** Started when openScratch was asked for it ({ minio: true }). */
  readonly minio: MinioServer | undefined;
  /** The S3_* settings of this scaffold's MinIO (endpoint and keys; buckets are the section's). */
  readonly s3: Record<string, string>;
  /** Registers `step` (called `name` in a failure's report) to run at cleanup, before the scaffold's own. */
  defer(name: string, step: () => Promise<unknown>): void;
  cleanup(): Promise<void>;
}

/** Opens a scaffold: MinIO first when asked (`<label>: starting MinIO`), then a scratch database and a data directory. */
export async function openScratch(label: string, options?: { readonly minio?: boolean; readonly database?: true }): Promise<Scratch>;
export async function openScratch(label: string, options: { readonly minio?: boolean; readonly database: false }): Promise<Scratch<undefined>>;
export async function openScratch(
  label: string,
  options: { readonly minio?: boolean; readonly database?: boolean } = {},
): Promise<Scratch<ScratchDatabase | undefined>> {
  const deferred: Array<[string, () => Promise<unknown>]> = [];
  let minio: MinioServer | undefined;
  let db: ScratchDatabase | undefined;
  let dataDir: string | undefined;
  const own = (): Array<[string, () => Promise<unknown>]> => [
    ['database', async () => db && dropScratchDatabase(db.name)],
    ['MinIO', async () => minio?.stop()],
    ['data dir', async () => dataDir && removeDir(dataDir)],
  ];
  try {
    if (options.minio) {
      progress(`${label}: starting MinIO`);
      minio = await startMinio(minioBinary());
    }
    if (options.database !== false) db = await createScratchDatabase(label);
    dataDir = await makeTempDir(label);
  } catch (e) {
    await cleanup(label, own());
    throw e;
  }
  const s3: Record<string, string> = minio ? { S3_ENDPOINT: minio.endpoint, S3_ACCESS_KEY: minio.accessKey, S3_SECRET_KEY: minio.secretKey } : {};
  return {
    label,
    db,
    dataDir,
    minio,
    s3,
    defer: (name, step) => {
      deferred.push([name, step]);
    },
    cleanup: () => cleanup(label, [...deferred.splice(0).reverse(), ...own()]),
  };
}

/**
 * The database handle: drizzle over postgres.js (DATABASE_URL) or over PGlite (the
 * embedded default). Services receive a `Db` and never open connections themselves.
 */
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import type { SQL } from 'drizzle-orm';
import { PgDialect, type PgDatabase, type PgQueryResultHKT, type PgTransaction } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { errorCodes, LetheError, MisconfiguredError } from '../errors.js';
import { listenPostgres } from './listener.js';
import * as schema from './schema.js';

export type Schema = typeof schema;
export type Database = PgDatabase<PgQueryResultHKT, Schema>;
export type Transaction = PgTransaction<PgQueryResultHKT, Schema, any>;
/** Anything that runs queries: the database or an open transaction. */
export type Executor = Database | Transaction;

/** Where migrations live: drizzle/ at the package root, from src/ and from dist/ alike. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../drizzle', import.meta.url));

/** The one channel replicas use to tell each other to drop cached key material. */
export const EVENTS_CHANNEL = 'lethe_events';

export interface Db {
  readonly db: Database;
  readonly kind: 'postgres' | 'pglite';
  /** Applies pending migrations from drizzle/. */
  migrate(): Promise<void>;
  /**
   * Subscribes to NOTIFY on `channel`. `onDown` runs when the listening connection is
   * lost, `onReconnect` whenever it was re-established (notifications may have been
   * missed meanwhile). On PostgreSQL the listener has a connection of its own
   * (`listener.ts`); PGlite is in-process and never loses it.
   */
  listen(channel: string, onPayload: (payload: string) => void, onReconnect?: () => void, onDown?: () => void): Promise<() => Promise<void>>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Rows of a raw `execute` on either driver (postgres.js returns an array, PGlite `{ rows }`). */
export async function queryRows<T>(exec: Executor, query: SQL): Promise<T[]> {
  const result: unknown = await exec.execute(query);
  if (Array.isArray(result)) return result as T[];
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}

const dialect = new PgDialect();

/**
 * Rows of a raw query run as a named prepared statement: on PostgreSQL the server
 * parses and plans it once per connection and reuses the plan (drizzle's `execute`
 * sends every query unnamed, so it is parsed and planned each time). For the hot
 * statements whose text never changes — only their parameters do (the lease and
 * key-creation group commits). `name` says which statement it is; the text must be
 * the same whenever the name is. PGlite runs it as a plain query.
 */
export async function queryPrepared<T>(exec: Executor, name: string, query: SQL): Promise<T[]> {
  const result: unknown = await exec._.session.prepareQuery(dialect.sqlToQuery(query), undefined, name, false).execute();
  if (Array.isArray(result)) return result as T[];
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}

/**
 * A query prepared once per database handle, built on first use: `build` returns a
 * drizzle `.prepare(name)` query, which PostgreSQL parses and plans once per connection.
 */
export function preparedPer<T>(build: (db: Database) => T): (db: Database) => T {
  const built = new WeakMap<Database, T>();
  return (db) => {
    let query = built.get(db);
    if (!query) built.set(db, (query = build(db)));
    return query;
  };
}

export interface OpenDbOptions {
  readonly databaseUrl?: string | undefined;
  /** PGlite data directory; `memory://` (or undefined) for an in-memory database. */
  readonly dataDir?: string | undefined;
  readonly poolSize?: number;
}

export async function openDb(options: OpenDbOptions): Promise<Db> {
  return options.databaseUrl ? openPostgres(options.databaseUrl, options.poolSize ?? 10) : openPglite(options.dataDir);
}

async function openPostgres(url: string, max: number): Promise<Db> {
  const client = postgres(url, {
    max,
    onnotice: () => {},
    // Keep failures fast and legible instead of hanging on a dead server.
    connect_timeout: 10,
    // postgres.js backs off reconnects by a counter shared by the whole pool and bumped by
    // every failed connection, up to 20 s by default: after a short outage the pool sat
    // idle for up to 20 s with requests queued (the fault suite's unanswered requests).
    // Capped at 1 s, a pool of 10 tries the server at most 10 times a second while it is down.
    backoff: (attempt: number) => Math.min(0.05 * 2 ** attempt, 1),
    connection: { application_name: 'lethe' },
  });
  const db = drizzlePostgres(client, { schema }) as unknown as Database;
  return {
    db,
    kind: 'postgres',
    migrate: () => migratePostgres(db as never, { migrationsFolder: MIGRATIONS_DIR }),
    listen: (channel, onPayload, onReconnect, onDown) => listenPostgres(url, channel, onPayload, { onReconnect, onDown }),
    async ping() {
      await client`select 1`;
    },
    close: () => client.end({ timeout: 5 }),
  };
}

/**
 * Connects to the PostgreSQL server of `url` once (what start-up does first), so that a
 * wrong DATABASE_URL is said plainly: the variable, the server's host and port (never the
 * user's password), and what answered there. A server that answered and refused what the
 * URL asks (no such database, authentication refused) is a `MisconfiguredError`; nothing
 * answering is `unavailable` (the server may be starting).
 */
export async function reachDatabase(db: Db, url: string, timeoutMs = REACH_TIMEOUT_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  // postgres.js waits for ever on a server that answers in another protocol (a web server)
  const silent = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new NoPostgresAnswer(timeoutMs)), timeoutMs);
  });
  const ping = db.ping();
  ping.catch(() => {});
  try {
    await Promise.race([ping, silent]);
  } catch (e) {
    throw databaseFailure(url, e);
  } finally {
    clearTimeout(timer);
  }
}

/** How long the first connection may take: longer than the driver's connect timeout (10 s). */
const REACH_TIMEOUT_MS = 15_000;

class NoPostgresAnswer extends Error {
  readonly code = 'LETHE_NO_POSTGRES_ANSWER';
  constructor(ms: number) {
    super(`no PostgreSQL answer within ${ms / 1000} s`);
  }
}

const DATABASE_NETWORK_REASONS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused (nothing listens there)',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'the host name cannot be resolved now',
  EHOSTUNREACH: 'no route to the host',
  ENETUNREACH: 'no route to the network',
  ETIMEDOUT: 'no answer (timed out)',
  CONNECT_TIMEOUT: 'no answer within 10 s (connect timeout)',
  ECONNRESET: 'the connection was closed before PostgreSQL answered: is this a PostgreSQL server?',
  CONNECTION_CLOSED: 'the connection was closed before PostgreSQL answered: is this a PostgreSQL server?',
  CONNECTION_ENDED: 'the connection was closed before PostgreSQL answered: is this a PostgreSQL server?',
  LETHE_NO_POSTGRES_ANSWER: `connected, but no PostgreSQL answer within ${REACH_TIMEOUT_MS / 1000} s: is this a PostgreSQL server?`,
};

/** SQLSTATEs that say DATABASE_URL asks for what the server has not: no such database, authentication refused (class 28). */
const DATABASE_URL_REFUSED = /^(3D000|28[0-9A-Z]{3})$/;

/**
 * The parts of a postgres:// URL, read without `new URL` (which refuses the multi-host
 * form `postgres://u:p@h1:5432,h2:5432/db` that postgres.js and libpq take). The user
 * part ends at the last `@` (a password may hold `@`, `/` or `?`); `secrets` are the
 * password as written and decoded, for blotting.
 */
function urlParts(url: string): { secrets: string[]; hosts: string[]; params: URLSearchParams } | undefined {
  const m = /^postgres(?:ql)?:\/\/(.*)$/s.exec(url.trim());
  if (!m) return undefined;
  const rest = m[1]!;
  const at = rest.lastIndexOf('@');
  const userinfo = at < 0 ? '' : rest.slice(0, at);
  const afterUser = rest.slice(at + 1);
  const end = afterUser.search(/[/?]/);
  const hostPart = end < 0 ? afterUser : afterUser.slice(0, end);
  const query = end < 0 ? '' : afterUser.slice(end).replace(/^[^?]*\??/, '');
  const colon = userinfo.indexOf(':');
  const raw = colon < 0 ? '' : userinfo.slice(colon + 1);
  const secrets = raw ? [raw] : [];
  try {
    const decoded = decodeURIComponent(raw);
    if (decoded && decoded !== raw) secrets.push(decoded);
  } catch {
    // not percent-encoded as a whole: the raw form is what can be repeated
  }
  return { secrets, hosts: hostPart.split(',').filter((h) => h !== ''), params: new URLSearchParams(query) };
}

/** A host as a URL names one: a name or an address, an optional port; nothing that could be a credential's piece. */
const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(:\d{1,5})?$/;

/** The hosts and ports (or socket directory) DATABASE_URL names: nothing else of it (no user, no password). */
export function databaseAddress(url: string): string {
  const parts = urlParts(url);
  if (!parts) return 'its server';
  const host = parts.params.get('host');
  if (host) return host.startsWith('/') ? host : `${host}:${parts.params.get('port') || '5432'}`;
  if (parts.hosts.length === 0) return 'localhost:5432';
  if (!parts.hosts.every((h) => HOST_PORT.test(h))) return 'its server';
  return parts.hosts.map((h) => (/:\d+$/.test(h) ? h : `${h}:${parts.params.get('port') || '5432'}`)).join(',');
}

/** A failed first connection as the error it is (see reachDatabase). */
export function databaseFailure(url: string, e: unknown): LetheError {
  const at = databaseAddress(url);
  const codes = [...errorCodes(e)];
  const nested = (e as { errors?: unknown } | null)?.errors;
  if (Array.isArray(nested)) for (const inner of nested) codes.push(...errorCodes(inner));
  const sqlState = codes.find((c) => /^[0-9A-Z]{5}$/.test(c) && /\d/.test(c));
  const said = withoutPassword(url, (e as Error | null)?.message ?? String(e));
  if (sqlState !== undefined && DATABASE_URL_REFUSED.test(sqlState)) {
    return new MisconfiguredError('DATABASE_URL', `${at}: PostgreSQL answered: ${said}`, { cause: e });
  }
  if (sqlState !== undefined) return new LetheError('unavailable', `DATABASE_URL ${at}: PostgreSQL answered: ${said} (SQLSTATE ${sqlState})`, { cause: e });
  const network = codes.find((c) => c in DATABASE_NETWORK_REASONS);
  if (network !== undefined) return new LetheError('unavailable', `DATABASE_URL ${at}: ${DATABASE_NETWORK_REASONS[network]}`, { cause: e });
  return new LetheError('unavailable', `DATABASE_URL ${at}: cannot connect: ${said}`, { cause: e });
}

/** `text` with the URL's password (if it has one) blotted out, in case a driver repeats it. */
export function withoutPassword(url: string, text: string): string {
  let out = text;
  for (const secret of urlParts(url)?.secrets ?? []) out = out.split(secret).join('***');
  return out;
}

/**
 * PGlite is one process's database: a second process opening the same directory
 * would corrupt it. A lock file holding the owner's pid keeps a second `lethe`
 * (a CLI command while `npm start` runs) out, with a clear message; a lock left by a
 * dead process is taken over.
 */
function lockDataDir(dataDir: string): () => void {
  const lockFile = `${dataDir}.lock`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lockFile, String(process.pid), { flag: 'wx', mode: 0o600 });
      return () => rmSync(lockFile, { force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const owner = Number(readFileSync(lockFile, 'utf8').trim());
      // our own pid: this process already has it open (the lock is removed on close)
      let alive = owner === process.pid;
      try {
        if (!alive && Number.isSafeInteger(owner) && owner > 0) {
          process.kill(owner, 0);
          alive = true;
        }
      } catch {
        alive = false;
      }
      if (alive) {
        throw new LetheError(
          'unavailable',
          `the embedded database ${dataDir} is in use by process ${owner}: stop it first, or use DATABASE_URL for more than one process`,
        );
      }
      rmSync(lockFile, { force: true });
    }
  }
  throw new LetheError('unavailable', `cannot lock the embedded database ${dataDir}`);
}

/** Every folder under `dir` (itself included) 0700, every file 0600; symbolic links left alone. */
function makePrivate(dir: string): void {
  const stat = lstatSync(dir, { throwIfNoEntry: false });
  if (!stat || stat.isSymbolicLink()) return;
  const wanted = stat.isDirectory() ? 0o700 : 0o600;
  if ((stat.mode & 0o777) !== wanted) chmodSync(dir, wanted);
  if (stat.isDirectory()) for (const name of readdirSync(dir)) makePrivate(path.join(dir, name));
}

async function openPglite(dataDir: string | undefined): Promise<Db> {
  const inMemory = dataDir === undefined || dataDir.startsWith('memory://');
  let unlock = () => {};
  if (!inMemory) {
    mkdirSync(path.dirname(dataDir), { recursive: true, mode: 0o700 });
    unlock = lockDataDir(dataDir);
  }
  let client: PGlite;
  try {
    if (!inMemory) {
      // PGlite unpacks its first cluster world-writable: into a folder no one else can enter
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      chmodSync(dataDir, 0o700);
    }
    client = new PGlite(inMemory ? undefined : dataDir);
    await client.waitReady;
  } catch (e) {
    unlock();
    throw e;
  }
  if (!inMemory) {
    // PGlite unpacks its initial cluster world-writable (files 0666, folders 0755) and
    // writes a few files with the process umask, inside the 0700 folder made above;
    // PostgreSQL itself creates 0600 files afterwards. Make the whole cluster private once it is open.
    try {
      makePrivate(dataDir);
    } catch (e) {
      await client.close().catch(() => {});
      unlock();
      throw e;
    }
  }
  const db = drizzlePglite(client, { schema }) as unknown as Database;
  return {
    db,
    kind: 'pglite',
    migrate: () => migratePglite(db as never, { migrationsFolder: MIGRATIONS_DIR }),
    async listen(channel, onPayload) {
      const unlisten = await client.listen(channel, onPayload);
      return () => unlisten();
    },
    async ping() {
      await client.query('select 1');
    },
    async close() {
      try {
        await client.close();
      } finally {
        unlock();
      }
    },
  };
}

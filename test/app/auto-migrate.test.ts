/**
 * LETHE_AUTO_MIGRATE: `lethe serve` migrates at start-up by default, but not in
 * production on PostgreSQL, where `lethe migrate` is the deployment step and a schema
 * behind drizzle/ stops the start with the command to run — before anything is
 * written to the database. Real processes on a fresh PostgreSQL database and on the
 * embedded PGlite.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.js';
import { openDb } from '../../src/db/client.js';
import { pendingMigrations } from '../../src/db/migrations.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { runCli, startService } from '../support/process.js';
import { tempDir, TOKENS } from '../support/vault.js';

// generous: on a loaded machine a first PGlite start alone has taken over a minute
const TIMEOUT_MS = 240_000;
const JOURNAL = (JSON.parse(readFileSync('drizzle/meta/_journal.json', 'utf8')) as { entries: unknown[] }).entries.length;
const PG = 'postgres://u@h/db';

describe('LETHE_AUTO_MIGRATE (configuration)', () => {
  it('defaults to off only in production on PostgreSQL', () => {
    expect(loadConfig({ NODE_ENV: 'production', DATABASE_URL: PG }).autoMigrate).toBe(false);
    expect(loadConfig({ NODE_ENV: ' Production ', DATABASE_URL: PG }).autoMigrate).toBe(false);
    expect(loadConfig({ NODE_ENV: 'production' }).autoMigrate).toBe(true);
    expect(loadConfig({ DATABASE_URL: PG }).autoMigrate).toBe(true);
    expect(loadConfig({}).autoMigrate).toBe(true);
  });

  it('an explicit value wins either way, and anything but true or false is refused by name', () => {
    expect(loadConfig({ NODE_ENV: 'production', DATABASE_URL: PG, LETHE_AUTO_MIGRATE: 'TRUE' }).autoMigrate).toBe(true);
    expect(loadConfig({ LETHE_AUTO_MIGRATE: 'false' }).autoMigrate).toBe(false);
    let error: unknown;
    try {
      loadConfig({ LETHE_AUTO_MIGRATE: 'sometimes' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([{ variable: 'LETHE_AUTO_MIGRATE', message: 'must be true or false' }]);
  });
});

describe('lethe serve and the schema', () => {
  let db: TestDatabase;
  const dirs: string[] = [];
  const dir = () => {
    const d = tempDir('lethe-auto-migrate-');
    dirs.push(d);
    return d;
  };

  beforeAll(async () => {
    db = await createTestDatabase('lethe_automig');
  });
  afterAll(async () => {
    await db?.drop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  /** Every table in the database outside PostgreSQL's own catalogs (drizzle's bookkeeping too). */
  async function tables(): Promise<string[]> {
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      const rows = await sql<{ name: string }[]>`
        select table_schema || '.' || table_name as name from information_schema.tables
        where table_schema not in ('pg_catalog', 'information_schema')`;
      return rows.map((r) => r.name);
    } finally {
      await sql.end({ timeout: 1 });
    }
  }

  it('production on PostgreSQL: refuses a fresh database with the command to run and leaves it untouched; after `lethe migrate` it starts', {
    timeout: TIMEOUT_MS,
  }, async () => {
    const env = {
      NODE_ENV: 'production',
      DATABASE_URL: db.url,
      LETHE_DATA_DIR: path.join(dir(), 'data'),
      LETHE_ROOT_KEY: randomBytes(32).toString('base64'),
      LETHE_TOKENS: `writer=${TOKENS.writer}`,
      LETHE_LOG_LEVEL: 'warn',
    };
    const refused = await runCli(['serve'], { ...env, PORT: '0' }, { timeoutMs: 120_000 });
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stderr).toContain(`the database schema is ${JOURNAL} migrations behind: run \`lethe migrate\` (or set LETHE_AUTO_MIGRATE=true)`);
    expect(await tables()).toEqual([]);

    const migrated = await runCli(['migrate'], env, { timeoutMs: 120_000 });
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(JSON.parse(migrated.stdout)).toMatchObject({ migrated: true, database: 'postgres', activeEpoch: 1 });

    const service = await startService(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve'], env, 180_000);
    try {
      const ready = await fetch(`${service.url}/healthz`);
      expect(ready.status).toBe(200);
    } finally {
      await service.stop();
    }
  });

  it('the embedded default migrates by itself', { timeout: TIMEOUT_MS }, async () => {
    const dataDir = path.join(dir(), 'data');
    const service = await startService(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', 'serve'],
      {
        LETHE_DATA_DIR: dataDir,
        LETHE_TOKENS: `writer=${TOKENS.writer}`,
      },
      180_000,
    );
    try {
      const lease = await fetch(`${service.url}/v1/subjects/user:auto/key/lease`, { method: 'POST', headers: { authorization: `Bearer ${TOKENS.writer}` } });
      expect(lease.status).toBe(200);
    } finally {
      await service.stop();
    }
    // the embedded database the service left behind is at drizzle/'s last migration
    const embedded = await openDb({ dataDir: `${dataDir}/pgdata` });
    try {
      expect(await pendingMigrations(embedded.db)).toBe(0);
    } finally {
      await embedded.close();
    }
  });
});

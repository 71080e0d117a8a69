/**
 * `lethe audit verify` as a child process against a real PostgreSQL database: the
 * head-MAC findings (issue 13) on stdout and stderr, `--anchor`, and exit codes.
 */
import { rmSync } from 'node:fs';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/logger.js';
import { openApp } from '../../src/app/open.js';
import type { AuditTip } from '../../src/vault/audit.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.js';
import { type CliRun, runCli } from '../support/process.js';
import { tempDir, testEnv } from '../support/vault.js';

const CLI_TIMEOUT_MS = 60_000;
const TEST_TIMEOUT_MS = 90_000;

let db: TestDatabase;
let dataDir: string;
let env: Record<string, string>;
let earlier: { seq: number; mac: Buffer; head_mac: Buffer };
let anchor: AuditTip;

function cli(args: string[]): Promise<CliRun> {
  return runCli(args, env, { timeoutMs: CLI_TIMEOUT_MS });
}

function json<T>(run: CliRun): T {
  try {
    return JSON.parse(run.stdout) as T;
  } catch {
    throw new Error(`stdout is not JSON:\n${run.stdout}\nstderr:\n${run.stderr}`);
  }
}

const hex = (tip: AuditTip): string => `${tip.seq}:${Buffer.from(tip.mac).toString('hex')}`;

async function withSql<T>(fn: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    return await fn(sql);
  } finally {
    await sql.end({ timeout: 1 });
  }
}

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = tempDir('lethe-cli-audit-');
  env = testEnv({ databaseUrl: db.url, dataDir });
  const vault = await openApp(loadConfig(env), { logger: createLogger('silent'), listen: false });
  try {
    await vault.keys.lease('user:cli-a', 'writer');
    earlier = await withSql(
      async (sql) => (await sql<Array<{ seq: number; mac: Buffer; head_mac: Buffer }>>`select seq::int as seq, mac, head_mac from audit_head`)[0]!,
    );
    await vault.keys.lease('user:cli-b', 'writer');
    await vault.keys.lease('user:cli-a', 'writer');
    anchor = await vault.audit.tip(vault.db.db);
  } finally {
    await vault.close();
  }
}, TEST_TIMEOUT_MS);
afterAll(async () => {
  await db?.drop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('lethe audit verify', () => {
  it('exits 0 on a sound chain: head anchored, no problems, no warnings; --anchor of a recorded tip matches', { timeout: TEST_TIMEOUT_MS }, async () => {
    const run = await cli(['audit', 'verify']);
    expect(run.code, run.stderr).toBe(0);
    expect(json(run)).toMatchObject({ ok: true, rows: anchor.seq, headSeq: anchor.seq, head: 'anchored', problems: [], warnings: [] });
    expect(run.stderr).not.toMatch(/warning/);
    const anchored = await cli(['audit', 'verify', '--anchor', hex(anchor)]);
    expect(anchored.code, anchored.stderr).toBe(0);
    expect(json(anchored)).toMatchObject({ ok: true, anchor: { seq: anchor.seq, state: 'matches' } });
  });

  it('exits 2 with a plain message on a malformed --anchor, printing nothing on stdout', { timeout: TEST_TIMEOUT_MS }, async () => {
    const run = await cli(['audit', 'verify', '--anchor', '12:not-hex']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/--anchor must be <row number>:<64 hex digits/);
  });

  it('a rollback of the audit tables to an earlier state: exit 0 alone, exit 1 naming the anchor with --anchor', { timeout: TEST_TIMEOUT_MS }, async () => {
    await withSql(async (sql) => {
      await sql`delete from audit_log where seq > ${earlier.seq}`;
      await sql`update audit_head set seq = ${earlier.seq}, mac = ${earlier.mac}, head_mac = ${earlier.head_mac} where id = 1`;
    });
    const alone = await cli(['audit', 'verify']);
    expect(alone.code, alone.stderr).toBe(0);
    const run = await cli(['audit', 'verify', '--anchor', hex(anchor)]);
    expect(run.code).toBe(1);
    expect(json(run)).toMatchObject({ ok: false, rows: earlier.seq, anchor: { seq: anchor.seq, state: 'missing' } });
    expect(run.stderr).toContain(`the anchor names row ${anchor.seq} but the chain ends at row ${earlier.seq}`);
  });

  it('tail rows deleted and the head moved to the new last row: exit 1 naming the head whose MAC does not verify', { timeout: TEST_TIMEOUT_MS }, async () => {
    const cut = earlier.seq - 2;
    await withSql(async (sql) => {
      await sql`delete from audit_log where seq > ${cut}`;
      await sql`update audit_head set seq = ${cut}, mac = (select mac from audit_log where seq = ${cut}) where id = 1`;
    });
    const run = await cli(['audit', 'verify']);
    expect(run.code).toBe(1);
    expect(json(run)).toMatchObject({ ok: false, rows: cut, head: 'invalid', brokenAt: cut + 1 });
    expect(run.stderr).toContain(`audit chain broken at row ${cut + 1}: the head (row ${cut}) carries a MAC that does not verify`);
  });

  it('a head without a MAC on a chain that was anchored: exit 1 saying the MAC was removed', { timeout: TEST_TIMEOUT_MS }, async () => {
    await withSql((sql) => sql`update audit_head set head_mac = null where id = 1`);
    const run = await cli(['audit', 'verify']);
    expect(run.code).toBe(1);
    expect(json(run)).toMatchObject({ ok: false, head: 'unanchored' });
    expect(run.stderr).toMatch(/carries no MAC, but the chain was anchored at row 1: its MAC was removed/);
  });

  it('a legacy chain (no anchor row, no head MAC): exit 0 with the unanchored head said on stderr as a warning', { timeout: TEST_TIMEOUT_MS }, async () => {
    const vault = await openApp(loadConfig(env), { logger: createLogger('silent'), listen: false });
    let legacy: ReturnType<typeof vault.audit.chain>;
    try {
      legacy = vault.audit.chain(
        [
          { actor: 'admin', action: 'kek.epoch.create', epoch: 1, detail: { provider: 'local' } },
          { actor: 'admin', action: 'kek.rotate', epoch: 1, detail: {} },
        ],
        { seq: 0, mac: new Uint8Array(32) },
      );
    } finally {
      await vault.close();
    }
    await withSql(async (sql) => {
      await sql`delete from audit_log`;
      await sql`insert into audit_log (seq, at, actor, action, key_id, subject_hash, epoch, detail, prev_mac, mac)
        select v.seq, v.at, v.actor, v.action, v.key_id, decode(v.subject_hash, 'hex'), v.epoch, v.detail, decode(v.prev_mac, 'hex'), decode(v.mac, 'hex')
          from json_to_recordset(${legacy.json}::text::json) as v(seq bigint, at timestamptz, actor text, action text, key_id text,
               subject_hash text, epoch integer, detail text, prev_mac text, mac text)`;
      await sql`update audit_head set seq = ${legacy.tip.seq}, mac = ${Buffer.from(legacy.tip.mac)}, head_mac = null where id = 1`;
    });
    const run = await cli(['audit', 'verify']);
    expect(run.code, run.stderr).toBe(0);
    expect(json(run)).toMatchObject({ ok: true, rows: 2, head: 'unanchored', problems: [] });
    expect(run.stderr).toMatch(/lethe: warning: the head \(row 2\) carries no MAC yet/);
  });
});

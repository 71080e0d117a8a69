/**
 * `lethe serve` pointed at the wrong thing (issue 33): each failure names the variable
 * it came from, the host and port (never a password, an access key or a secret key)
 * and what answered there, on stderr without a stack trace, and the process exits
 * non-zero — 2 when the configuration is wrong (an `S3_ENDPOINT` that answers HTTP but
 * is no S3 API, a `DATABASE_URL` naming a database that does not exist), 1 when
 * nothing answers (a `DATABASE_URL` where nothing listens: the server may be down) or
 * what answers never speaks PostgreSQL (a web server's port: the start no longer hangs).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminUrl, createTestDatabase, type TestDatabase } from '../support/pg.js';
import { runCli } from '../support/process.js';
import { tempDir, testEnv } from '../support/vault.js';

const TIMEOUT = 90_000;
const ACCESS_KEY = `AKIA${randomBytes(6).toString('hex').toUpperCase()}`;
const SECRET_KEY = `secret-${randomBytes(12).toString('hex')}`;
const DB_PASSWORD = `pw-${randomBytes(8).toString('hex')}`;

/** A port nothing listens on: one the system gave out and took back. */
async function deadPort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as { port: number };
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** What every failed start must show: no stack frame, no secret. */
function expectPlain(stderr: string, secrets: string[]): void {
  expect(stderr).toMatch(/^lethe: /);
  expect(stderr).not.toMatch(/^\s+at /m);
  for (const secret of secrets) expect(stderr).not.toContain(secret);
}

let db: TestDatabase;
let web: Server;
let webPort = 0;
const dirs: string[] = [];
const dataDir = () => {
  const dir = tempDir();
  dirs.push(dir);
  return dir;
};

beforeAll(async () => {
  db = await createTestDatabase();
  // a web server, not an object store: every path answers 404 with an HTML page
  web = createServer((_req, res) => {
    res.writeHead(404, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>Not Found</title><h1>Not Found</h1>');
  });
  await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
  webPort = (web.address() as { port: number }).port;
}, TIMEOUT);

afterAll(async () => {
  await new Promise<void>((resolve) => (web ? web.close(() => resolve()) : resolve()));
  await db?.drop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('lethe serve against the wrong endpoints', () => {
  it('an S3_ENDPOINT that answers HTTP but is no S3 API: exit 2, naming S3_ENDPOINT, its host and port, and what answered', { timeout: TIMEOUT }, async () => {
    const env = testEnv({
      databaseUrl: db.url,
      dataDir: dataDir(),
      extra: { PORT: '0', S3_ENDPOINT: `http://127.0.0.1:${webPort}`, S3_ACCESS_KEY: ACCESS_KEY, S3_SECRET_KEY: SECRET_KEY },
    });
    const run = await runCli(['serve'], env, { timeoutMs: TIMEOUT - 10_000 });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`S3_ENDPOINT: http://127.0.0.1:${webPort} answered HTTP 404 (text/html), not an S3 API: is this the MinIO/S3 endpoint?`);
    expect(run.stderr).not.toMatch(/failed: *$/m);
    expectPlain(run.stderr, [ACCESS_KEY, SECRET_KEY, env.LETHE_ROOT_KEY!]);
  });

  it('a DATABASE_URL where nothing listens: exit 1, naming DATABASE_URL, its host and port, and that nothing listens there', { timeout: TIMEOUT }, async () => {
    const port = await deadPort();
    const env = testEnv({ databaseUrl: `postgres://lethe:${DB_PASSWORD}@127.0.0.1:${port}/lethe`, dataDir: dataDir(), extra: { PORT: '0' } });
    const run = await runCli(['serve'], env, { timeoutMs: TIMEOUT - 10_000 });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain(`DATABASE_URL 127.0.0.1:${port}: connection refused (nothing listens there)`);
    expectPlain(run.stderr, [DB_PASSWORD, env.LETHE_ROOT_KEY!]);
  });

  it('a DATABASE_URL at a server that speaks another protocol (a web server): exit 1, not a hang, asking whether it is PostgreSQL', {
    timeout: TIMEOUT,
  }, async () => {
    const env = testEnv({ databaseUrl: `postgres://lethe:${DB_PASSWORD}@127.0.0.1:${webPort}/lethe`, dataDir: dataDir(), extra: { PORT: '0' } });
    const run = await runCli(['serve'], env, { timeoutMs: TIMEOUT - 10_000 });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain(`DATABASE_URL 127.0.0.1:${webPort}: connected, but no PostgreSQL answer within 15 s: is this a PostgreSQL server?`);
    expectPlain(run.stderr, [DB_PASSWORD, env.LETHE_ROOT_KEY!]);
  });

  it('a DATABASE_URL naming a database that does not exist: exit 2, naming DATABASE_URL, its host and port, and what the server said', {
    timeout: TIMEOUT,
  }, async () => {
    const admin = new URL(adminUrl());
    const missing = `does_not_exist_${randomBytes(4).toString('hex')}`;
    const url = new URL(admin);
    url.pathname = `/${missing}`;
    const env = testEnv({ databaseUrl: url.toString(), dataDir: dataDir(), extra: { PORT: '0' } });
    const run = await runCli(['serve'], env, { timeoutMs: TIMEOUT - 10_000 });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`DATABASE_URL: ${admin.hostname}:${admin.port || '5432'}: PostgreSQL answered: database "${missing}" does not exist`);
    expectPlain(run.stderr, [env.LETHE_ROOT_KEY!, ...(admin.password ? [decodeURIComponent(admin.password)] : [])]);
  });
});

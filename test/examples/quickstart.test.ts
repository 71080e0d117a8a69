/**
 * examples/quickstart.ts as the README's quickstart runs it: against `lethe serve` on
 * the embedded default (PGlite, local folders) with a short lease, from the folder the
 * service keeps its data in (LETHE_DATA_DIR here, ./.lethe in the README). Asserted from
 * its output: exit 0, each step's line, the erasure completed, the certificate verified
 * offline, and the report it points at is the erasure's HTML report.
 */
import { readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, type RunningService, spawnProcess, startService } from '../support/process.js';
import { TOKENS, TOKENS_ENV, tempDir } from '../support/vault.js';

describe('examples/quickstart.ts', () => {
  const dataDir = tempDir('lethe-quickstart-');
  let service: RunningService | undefined;

  beforeAll(async () => {
    service = await startService(
      process.execPath,
      [...CLI, 'serve'],
      { LETHE_DATA_DIR: dataDir, LETHE_TOKENS: TOKENS_ENV, LETHE_LEASE_TTL_SECONDS: '30' },
      120_000,
    );
  }, 150_000);
  afterAll(async () => {
    await service?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const quickstart = async (env: Record<string, string>) => {
    const run = spawnProcess(process.execPath, ['--import', 'tsx', 'examples/quickstart.ts'], env);
    return { code: await run.exited, stdout: run.stdout(), stderr: run.stderr() };
  };

  it('writes, derives, searches, backs up, erases alice to the end and verifies the certificate offline', async () => {
    const run = await quickstart({ LETHE_URL: service!.url, LETHE_TOKENS: `admin=${TOKENS.admin}`, LETHE_DATA_DIR: dataDir });
    expect(run.code, `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`).toBe(0);
    const out = run.stdout;
    expect(out).toMatch(/^ 1\. connected to http:\/\/127\.0\.0\.1:\d+/m);
    expect(out).toMatch(/user:alice-\w+: 3 memories sealed in this process by LetheWriter .*its lease released on close\(\)/);
    expect(out).toMatch(/user:bob-\w+: 3 memories appended through the service/);
    expect(out).toMatch(/shared summary \S+: derived from 6 memories of 2 users \(v1\)/);
    expect(out).toMatch(/search scoped to alice: \d+ hits, all hers/);
    expect(out).toMatch(/backup \S+: \d+ objects, \d+ wrapped keys/);
    expect(out).toMatch(
      /erasure completed in [\d.]+ s: class \w+, probe recovered 0 .*, 1 artifact\(s\) regenerated, \d+ residual\(s\) stated with their bounds/,
    );
    expect(out).toMatch(/afterwards: alice's memories answer key_destroyed, her key is destroyed, the summary is v2 from bob alone/);
    expect(out).toMatch(/certificate verified offline: signed by \S+, one of the vault's \d+ key\(s\)/);

    const report = /report: open (file:\S+)/.exec(out)?.[1];
    expect(report).toBeDefined();
    const html = readFileSync(fileURLToPath(report!), 'utf8');
    expect(html).toMatch(/^<!doctype html>/i);
    expect(html).toContain(/erasure (\S+) accepted/.exec(out)![1]);
    // the shareable link opens the same report without a token
    const link = /report link \(no token needed, expires \S+\): (\S+)/.exec(out)?.[1];
    expect(link).toBeDefined();
    const shared = await fetch(link!);
    expect(shared.status).toBe(200);
    expect(await shared.text()).toContain(/erasure (\S+) accepted/.exec(out)![1]);
    // the command it suggests to check the certificate again verifies it too
    const [file, keys] = /npx lethe certificate verify (\S+) --public-key-file (\S+)/.exec(out)!.slice(1);
    const verify = spawnProcess(process.execPath, [...CLI, 'certificate', 'verify', file!, '--public-key-file', keys!], {});
    expect(await verify.exited, verify.stderr()).toBe(0);
    expect(JSON.parse(verify.stdout())).toMatchObject({ valid: true });
  }, 300_000);

  it('fails with a plain message and a non-zero exit when the token is refused', async () => {
    const run = await quickstart({ LETHE_URL: service!.url, LETHE_TOKENS: 'admin=not-a-token-of-this-vault', LETHE_DATA_DIR: dataDir });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('refused the token (unauthorized): start it with');
    expect(run.stderr).not.toContain('not-a-token-of-this-vault');
  }, 60_000);

  it('fails with a plain message when no service answers', async () => {
    const run = await quickstart({ LETHE_URL: 'http://127.0.0.1:9', LETHE_DATA_DIR: dataDir });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('quickstart failed: no lethe service answers at http://127.0.0.1:9');
    expect(run.stderr).toContain('LETHE_TOKENS=admin=dev-admin-token LETHE_LEASE_TTL_SECONDS=30 npm start');
  }, 60_000);
});

/**
 * What a command loads: the client commands (backup run/list, erase, erasure …,
 * certificate verify) talk HTTP to a running service and must start without the app,
 * the database client or the service's modules; those load on first use, for the
 * commands that need them.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CLI } from '../support/process.js';

/** The files under src/ the CLI loads for `args` (against a service that is not there). */
async function loaded(args: string[]): Promise<string[]> {
  const child = spawn(process.execPath, ['--import', './test/support/load-trace.mjs', ...CLI, ...args], {
    cwd: process.cwd(),
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      LETHE_URL: 'http://127.0.0.1:9',
      LETHE_TOKENS: 'eraser=eraser-token,backup=backup-token',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  // 'close', not 'exit': the pipes read whole (test/support/process.ts)
  await new Promise((resolve) => child.on('close', resolve));
  return [...new Set(stderr.split('\n').flatMap((l) => (l.startsWith('lethe-loaded ') ? [l.slice('lethe-loaded '.length)] : [])))];
}

const SERVICE_SIDE = /^src\/(app|db|http|vault|log|artifacts|search|vectors|backups|storage|keyprovider\/local)\b|^src\/erasure\/(engine|service)/;

describe('lazy loading', () => {
  for (const args of [
    ['erase', 'user:ok'],
    ['erasure', 'show', `ers_${'A'.repeat(22)}`],
    ['erasure', 'watch', 'not-an-id'],
    ['backup', 'list'],
    ['backup', 'run'],
    ['erasure', 'certificate', `ers_${'A'.repeat(22)}`],
    ['certificate', 'verify', 'no-such-file.json', '--url', 'http://127.0.0.1:9'],
    ['subject', 'reinstate', 'user:ok', '--reason', 'back'],
  ]) {
    it(`\`lethe ${args.join(' ')}\` loads the client, not the app, the database client or the service`, { timeout: 60_000 }, async () => {
      const files = await loaded(args);
      expect(files).toContain('src/cli/main.ts');
      expect(files).toContain('src/client/http.ts');
      expect(files.filter((f) => SERVICE_SIDE.test(f))).toEqual([]);
    });
  }

  it('`lethe token new writer` loads token hashing on first use (the trace sees lazy imports)', { timeout: 60_000 }, async () => {
    expect(await loaded(['token', 'new', 'writer'])).toContain('src/http/auth.ts');
  });
});

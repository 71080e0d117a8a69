/**
 * The serving process carries on past a database rejection nothing waited for (a
 * query in flight when its connection was terminated, its caller gone), and still
 * ends on any other unhandled rejection, as Node does by default. Found by the fault
 * suite: a replica exited with an unhandled 57P01 while connections were terminated.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CLI } from '../support/process.js';

const run = (kind: string) =>
  spawnSync(process.execPath, [...CLI.slice(0, 2), 'test/support/rejection-guard.ts', kind], { encoding: 'utf8', timeout: 30_000 });

describe('the unhandled-rejection guard of lethe serve', () => {
  it('a dropped connection\'s rejection that nothing waited for is logged and counted, and the process lives on', () => {
    const r = run('dropped');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('alive, swallowed 1');
    expect(r.stderr).toContain('a database call nobody was waiting for failed');
    expect(r.stderr).toContain('57P01');
  });

  it('any other unhandled rejection still ends the process, logged as fatal', () => {
    const r = run('bug');
    expect(r.status).not.toBe(0);
    expect(r.stdout).not.toContain('alive');
    expect(r.stderr).toContain('unhandled rejection: the process ends');
  });
});

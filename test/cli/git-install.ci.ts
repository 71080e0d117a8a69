/**
 * The `lethe` package installed from a git URL, as the README says: npm clones the
 * repository, installs its dependencies there and runs its `prepare` — which builds dist/
 * only in that clone (npm marks its git-dependency installs with `_PACOTE_NO_PREPARE_`; a
 * developer's `npm ci` and the image's do not build) — then packs it and installs the
 * tarball. The installed `lethe --help` exits 0.
 *
 * The repository is a commit of test/support/clone.ts's copy of the working tree (what CI's
 * clean clone holds), reached by a `git+file://` URL. It installs every dev dependency in
 * npm's clone, so it runs as a CI step of its own (vitest.ci.config.ts), not in the suite.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { copyOfWorkingTree } from '../support/clone.js';
import { installInto, run } from '../support/npm.js';

describe('npm install from a git URL', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'lethe-git-install-'));

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it("builds dist/ in npm's clone and installs a lethe command that runs; prepare anywhere else builds nothing", async () => {
    const repository = copyOfWorkingTree(path.join(dir, 'repository'));
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=lethe-test', '-c', 'user.email=test@lethe.invalid', ...args], { cwd: repository });
    git('init', '--quiet', '--initial-branch=main');
    git('add', '--all');
    git('commit', '--quiet', '--no-gpg-sign', '-m', 'the working tree');

    const app = path.join(dir, 'app');
    await installInto(app, 'lethe-git-consumer', `git+file://${repository}#main`);
    const installed = path.join(app, 'node_modules', 'lethe');
    expect(existsSync(path.join(installed, 'dist', 'cli', 'bin.js')), 'the installed package has dist/').toBe(true);
    const { stdout } = await run('npx', ['--no', '--', 'lethe', '--help'], { cwd: app });
    expect(stdout).toContain('Usage: lethe');

    // the same prepare in an ordinary install of the repository itself builds nothing
    const { stdout: prepared } = await run('npm', ['run', 'prepare'], { cwd: repository, env: { ...process.env, _PACOTE_NO_PREPARE_: '' } });
    expect(prepared).not.toContain('tsc -p tsconfig.build.json');
    expect(existsSync(path.join(repository, 'dist')), 'an ordinary install leaves dist/ to npm start').toBe(false);
  });
});

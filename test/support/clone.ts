/**
 * A "fresh clone" of the repository for tests that run what a user runs in one: a copy of
 * the files git knows in this working tree (`git ls-files -co --exclude-standard`: tracked,
 * and untracked but not ignored) in an empty folder, not `git clone`. In CI, which runs on a
 * clean clone, that is exactly the clone; on a working tree it also holds the changes not
 * committed yet, which a clone would miss. No node_modules, no dist/.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const REPOSITORY = execFileSync('git', ['rev-parse', '--show-toplevel'], { encoding: 'utf8' }).trim();

/** The working tree's files as a clone would have them, in `dir` (default: a new temporary folder); answers the folder. */
export function copyOfWorkingTree(dir = mkdtempSync(path.join(tmpdir(), 'lethe-fresh-clone-'))): string {
  const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: REPOSITORY, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
    .split('\0')
    .filter((f) => f !== '');
  for (const file of files) {
    const from = path.join(REPOSITORY, file);
    // a tracked file deleted in the working tree is not part of it
    if (!existsSync(from)) continue;
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    copyFileSync(from, path.join(dir, file));
  }
  return dir;
}

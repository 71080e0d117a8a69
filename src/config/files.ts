/**
 * lethe's own directories on disk — the data directory (embedded database, local
 * object store, development root key) and the local keyring — are private to the
 * service's user: created 0700, their files 0600, and refused at start-up when
 * someone else may write into them (whoever can write there can swap the keyring,
 * the root key file or the database under the service).
 */
import { chmodSync, lstatSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { LetheError } from '../errors.js';

/** Mode bits that let the group or everyone else write. */
const WRITABLE_BY_OTHERS = 0o022;

function octal(mode: number): string {
  return `0${(mode & 0o777).toString(8).padStart(3, '0')}`;
}

/**
 * Creates `dir` (and missing parents) with mode 0700 when it does not exist; refuses
 * an existing one that is not a directory or that the group or others may write,
 * naming the path, its mode and the fix. `what` names the directory and its setting.
 */
export function ensurePrivateDir(dir: string, what: string): void {
  const absolute = path.resolve(dir);
  if (checkPrivateDir(absolute, what)) return;
  mkdirSync(absolute, { recursive: true, mode: 0o700 });
  // mkdir's mode is filtered by the umask, never widened: 0700 at most; make it exact
  chmodSync(absolute, 0o700);
}

/**
 * Refuses `dir` when it exists and is not a directory, or the group or others may
 * write into it (the message names the path, its mode and the fix). True when it
 * exists, false when it does not (nothing is created).
 */
export function checkPrivateDir(dir: string, what: string): boolean {
  const absolute = path.resolve(dir);
  let stat;
  try {
    stat = statSync(absolute);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
  if (!stat.isDirectory()) {
    throw new LetheError('validation_failed', `${what} ${absolute} is not a directory`);
  }
  if ((stat.mode & WRITABLE_BY_OTHERS) !== 0) {
    throw new LetheError(
      'validation_failed',
      `${what} ${absolute} has mode ${octal(stat.mode)}: it is writable by its group or by everyone, who could replace ` +
        `the keys and the database in it. Refusing to start. Fix it with: chmod 700 '${absolute}' (and make sure it is owned by the user running lethe)`,
    );
  }
  return true;
}

/**
 * Makes every directory under `dir` (itself included) 0700 and every file 0600.
 * Symbolic links are left alone (their targets are not ours to change); entries that
 * vanish meanwhile are skipped.
 */
export function tightenTree(dir: string): void {
  let stat;
  try {
    stat = lstatSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  if (stat.isSymbolicLink()) return;
  const wanted = stat.isDirectory() ? 0o700 : 0o600;
  if ((stat.mode & 0o777) !== wanted) {
    try {
      chmodSync(dir, wanted);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      return;
    }
  }
  if (stat.isDirectory()) for (const name of readdirSync(dir)) tightenTree(path.join(dir, name));
}

/**
 * The dependencies step of `npm start` (scripts/start.mjs) and `npm test`
 * (scripts/test.mjs): plain Node, no dependency (it runs before node_modules exists).
 *
 * node_modules is current when it was installed from this package-lock.json:
 *   - node_modules/.lethe-lock-hash holds the SHA-256 of this package-lock.json (written
 *     after `npm ci` here, or after the check below passed), or
 *   - npm's own record of what it installed, node_modules/.package-lock.json (an install
 *     made otherwise: `npm ci` in CI, `npm install <package>`), names every package of
 *     package-lock.json that is not optional, each at the same version and source, and
 *     nothing else.
 * Otherwise `npm ci --no-audit --no-fund` installs exactly what the lockfile says.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const HASH_FILE = '.lethe-lock-hash';

/** A failure the person running the command can act on: its message is the whole story. */
export class StepError extends Error {}

function lockHash(root) {
  return createHash('sha256')
    .update(readFileSync(path.join(root, 'package-lock.json')))
    .digest('hex');
}

/** Whether npm's record of what it installed matches package-lock.json; a reason when not. */
function installedMatchesLock(root) {
  const hidden = path.join(root, 'node_modules', '.package-lock.json');
  if (!existsSync(hidden)) return 'node_modules has no record of what npm installed';
  let lock;
  let installed;
  try {
    lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')).packages ?? {};
    installed = JSON.parse(readFileSync(hidden, 'utf8')).packages ?? {};
  } catch {
    return "npm's record of what it installed cannot be read";
  }
  for (const [name, entry] of Object.entries(lock)) {
    if (name === '' || entry.optional) continue;
    const got = installed[name];
    if (!got) return `${name.replace(/^node_modules\//, '')} is not installed`;
    if (got.version !== entry.version || got.resolved !== entry.resolved) return `${name.replace(/^node_modules\//, '')} is not at the locked version`;
  }
  for (const name of Object.keys(installed)) {
    if (!(name in lock)) return `${name.replace(/^node_modules\//, '')} is installed but not in package-lock.json`;
  }
  return undefined;
}

/**
 * Whether the dependencies are current: `{ current: true }`, or `{ current: false, reason }`
 * saying why they must be installed. Reads files only.
 */
export function dependencyState(root) {
  if (!existsSync(path.join(root, 'package-lock.json')))
    throw new StepError('package-lock.json is missing: the dependencies cannot be installed from a lockfile');
  if (!existsSync(path.join(root, 'node_modules'))) return { current: false, reason: 'first run: node_modules is missing' };
  const stored = path.join(root, 'node_modules', HASH_FILE);
  const hash = lockHash(root);
  if (existsSync(stored) && readFileSync(stored, 'utf8').trim() === hash) return { current: true };
  // installed some other way (npm ci in CI, npm install of a package): npm's record decides
  const mismatch = installedMatchesLock(root);
  if (mismatch) return { current: false, reason: `node_modules does not match package-lock.json: ${mismatch}` };
  writeFileSync(stored, `${hash}\n`);
  return { current: true };
}

/** npm as the running `npm start` is (npm_execpath), else the `npm` on PATH. */
function npmCommand() {
  const cli = process.env.npm_execpath;
  return cli && /npm-cli\.js$/.test(cli) ? [process.execPath, [cli]] : ['npm', []];
}

/** Runs `npm ci` in root, its output shown; rejects with a StepError saying what went wrong. */
function npmCi(root, ignoreScripts) {
  const [command, prefix] = npmCommand();
  return new Promise((resolve, reject) => {
    const child = spawn(command, [...prefix, 'ci', '--no-audit', '--no-fund', ...(ignoreScripts ? ['--ignore-scripts'] : [])], { cwd: root, stdio: 'inherit' });
    child.on('error', (e) =>
      reject(
        new StepError(
          e.code === 'ENOENT' ? 'npm was not found on PATH: install Node.js 20 (it comes with npm) and run again' : `npm could not be started: ${e.message}`,
        ),
      ),
    );
    child.on('exit', (code, signal) => {
      if (code === 0) resolve();
      else
        reject(
          new StepError(
            `npm ci failed (${signal ?? `exit ${code}`}): the dependencies could not be installed from package-lock.json; npm's messages above say why (no network, registry unreachable, a build tool missing for a native module)`,
          ),
        );
    });
  });
}

/**
 * Installs the dependencies from package-lock.json when they are not current, saying so
 * through `say` in one line. Resolves with what it did: `{ installed, reason?, seconds? }`.
 * `what` names them (another package's, such as an example's); `ignoreScripts` installs
 * without running any package's install script (no native build).
 */
export async function ensureDeps(root, say = (line) => console.log(line), { what = 'dependencies', size = 'about 180 MB', ignoreScripts = false } = {}) {
  const state = dependencyState(root);
  if (state.current) {
    say(`lethe: ${what} are current (node_modules matches package-lock.json)`);
    return { installed: false };
  }
  say(`lethe: installing ${what} from package-lock.json with npm ci (${state.reason}; ${size} from the npm registry the first time)`);
  const started = Date.now();
  await npmCi(root, ignoreScripts);
  writeFileSync(path.join(root, 'node_modules', HASH_FILE), `${lockHash(root)}\n`);
  const seconds = Math.round((Date.now() - started) / 100) / 10;
  say(`lethe: ${what} installed in ${seconds} s`);
  return { installed: true, reason: state.reason, seconds };
}

#!/usr/bin/env node
/**
 * `npm start`: from a fresh clone to a running `lethe serve`, one line per step.
 *
 *   1. dependencies: `npm ci` when node_modules is missing or stale against
 *      package-lock.json (scripts/ensure-deps.mjs), else nothing;
 *   2. build: src/ transpiled into dist/ by esbuild (scripts/build.mjs; about a second,
 *      types are checked by `npm test` and CI) when dist/ is missing or a file under src/,
 *      tsconfig*.json or package.json is newer than the last build made here
 *      (dist/.lethe-build-stamp), else nothing;
 *   3. serve: `node dist/cli/bin.js serve` with the arguments given to this script.
 *
 * The server runs in a process group of its own, so it hears a signal once: SIGINT,
 * SIGTERM and SIGHUP sent to this script (Ctrl-C reaches it both from the terminal and
 * through npm: the same signal twice within a second is passed on once) are passed to
 * it, and this script says so and exits with its exit code when it ends (npm itself,
 * when the signal reached it too, exits 128 + the signal's number). A step that fails
 * ends the script with a plain message and exit code 1.
 *
 * Plain Node, no dependency: it runs before node_modules exists.
 */
import { existsSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runForwardingSignals } from './child.mjs';
import { buildDist } from './build.mjs';
import { ensureDeps, StepError } from './ensure-deps.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const STAMP = path.join(root, 'dist', '.lethe-build-stamp');
const say = (line) => console.log(line);

/** The newest modification time among the build's inputs (directories count: a deleted file changes its folder's). */
function newestInput() {
  let newest = 0;
  const visit = (p) => {
    const s = statSync(p);
    newest = Math.max(newest, s.mtimeMs);
    if (s.isDirectory()) for (const name of readdirSync(p)) visit(path.join(p, name));
  };
  visit(path.join(root, 'src'));
  for (const name of readdirSync(root)) if (/^tsconfig.*\.json$/.test(name) || name === 'package.json') visit(path.join(root, name));
  return newest;
}

/** Why the build is stale, or undefined when dist/ is current. */
function buildStaleness() {
  if (!existsSync(path.join(root, 'dist', 'cli', 'bin.js'))) return 'first build: dist/ is missing';
  if (!existsSync(STAMP)) return 'dist/ was not built by npm start';
  return newestInput() > statSync(STAMP).mtimeMs ? 'src/ changed since the last build' : undefined;
}

async function ensureBuild() {
  const reason = buildStaleness();
  if (!reason) {
    say('lethe: build is current (dist/ is newer than src/)');
    return;
  }
  say(`lethe: compiling src/ into dist/ with esbuild (${reason})`);
  const started = Date.now();
  try {
    await buildDist(root);
  } catch (e) {
    throw new StepError(`the build (esbuild, scripts/build.mjs) failed: ${e instanceof Error ? e.message : String(e)}`);
  }
  // stamped with the time the build started: a file saved during the build makes the next start build again
  writeFileSync(STAMP, '');
  utimesSync(STAMP, new Date(started), new Date(started));
  say(`lethe: built in ${Math.round((Date.now() - started) / 100) / 10} s`);
}

function serve(args) {
  say(`lethe: starting lethe serve (node dist/cli/bin.js serve${args.length ? ` ${args.join(' ')}` : ''})`);
  runForwardingSignals(path.join(root, 'dist', 'cli', 'bin.js'), ['serve', ...args], {
    cwd: root,
    what: 'lethe serve',
    ipc: true,
    onExit: (code, signal) => say(`lethe: lethe serve exited (${signal ?? `code ${code}`})`),
  });
}

try {
  await ensureDeps(root, say);
  await ensureBuild();
  serve(process.argv.slice(2));
} catch (e) {
  console.error(`lethe: ${e instanceof StepError ? e.message : `npm start failed: ${e instanceof Error ? e.message : String(e)}`}`);
  process.exit(1);
}

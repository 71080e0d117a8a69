#!/usr/bin/env node
/**
 * `npm test` after the type check: vitest (with the arguments npm passes on, e.g. the
 * CI's reporters), then the Python client's tests (clients/python) against a fresh
 * build of dist/ — they start a real `node dist/cli/main.js serve`, and npm test does
 * not otherwise build. Both always run; the exit code is non-zero when either failed.
 *
 * The Python suite needs python3 (3.9 or newer; LETHE_PYTHON names another
 * interpreter): without one it fails, saying so — it never passes silently.
 *
 * LETHE_TEST_SUMMARY=<file>: also writes { vitestExit, python: { passed, failed, skipped, notes } }
 * there, for .ci/run to add the Python counts to vitest's.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const run = (command, args, options = {}) => spawnSync(command, args, { cwd: root, stdio: 'inherit', ...options });

const vitest = run(path.join(root, 'node_modules', '.bin', 'vitest'), ['run', ...process.argv.slice(2)]);
const vitestExit = vitest.status ?? 1;

const python = pythonSuite();
console.log(`\npython client (clients/python): ${python.passed} passed, ${python.failed} failed${python.notes.length ? ` (${python.notes.join('; ')})` : ''}`);

if (process.env.LETHE_TEST_SUMMARY) {
  writeFileSync(process.env.LETHE_TEST_SUMMARY, `${JSON.stringify({ vitestExit, python })}\n`);
}
process.exit(vitestExit !== 0 ? vitestExit : python.failed > 0 ? 1 : 0);

function pythonSuite() {
  const failed = (note) => {
    console.error(`\nlethe: the Python client's tests did not run: ${note}`);
    return { passed: 0, failed: 1, skipped: 0, notes: [note] };
  };
  const interpreter = process.env.LETHE_PYTHON || 'python3';
  const version = spawnSync(interpreter, ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], { encoding: 'utf8' });
  if (version.error || version.status !== 0) {
    return failed(
      `${interpreter} was not found or does not run (${version.error?.code ?? `exit ${version.status}`}). npm test also runs the Python client's tests ` +
        '(clients/python) and needs Python 3.9 or newer: install it (Debian: apt-get install python3) or set LETHE_PYTHON to an interpreter',
    );
  }
  const [major, minor] = version.stdout.trim().split('.').map(Number);
  if (major < 3 || (major === 3 && minor < 9)) return failed(`${interpreter} is Python ${version.stdout.trim()}; the Python client needs 3.9 or newer`);

  console.log('\n== the Python client: npm run build (its tests run dist/cli/main.js)');
  const build = run('npm', ['run', 'build', '--silent']);
  if (build.status !== 0) return failed('npm run build failed');

  console.log(`== the Python client's tests (${interpreter} ${version.stdout.trim()})`);
  const dir = mkdtempSync(path.join(tmpdir(), 'lethe-python-report-'));
  const report = path.join(dir, 'report.json');
  try {
    const tests = run(interpreter, [path.join('clients', 'python', 'run_tests.py'), '-q', '--json-file', report]);
    let counts;
    try {
      counts = JSON.parse(readFileSync(report, 'utf8'));
    } catch {
      return failed(`the runner wrote no report (exit ${tests.status ?? tests.signal})`);
    }
    const result = { passed: Number(counts.passed) || 0, failed: Number(counts.failed) || 0, skipped: Number(counts.skipped) || 0, notes: counts.notes ?? [] };
    // a runner that failed without counting a failure still failed
    if (tests.status !== 0 && result.failed === 0) result.failed = 1;
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

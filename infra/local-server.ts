/**
 * What the servers the tests and benchmarks start for themselves share (MinIO,
 * Toxiproxy, local-kms): the binary from its install script, a free loopback port, and
 * stopping the process.
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The binary an infra/ install script prints (building it the first time). Throws a plain message naming `what` when it cannot. */
export function installedBinary(script: string, what: string): string {
  try {
    return execFileSync('bash', [fileURLToPath(new URL(`./${script}`, import.meta.url))], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  } catch (e) {
    throw new Error(`${what} and infra/${script} could not provide it: ${(e as Error).message}`);
  }
}

export { freePort } from './free-port.mjs';

/**
 * Stops a server the harness started: SIGCONT first (a paused server does not act on
 * SIGTERM), then SIGTERM, and SIGKILL if it has not exited after `graceMs`.
 */
export async function stopChild(child: ChildProcess, graceMs = 5_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGCONT');
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(t);
}

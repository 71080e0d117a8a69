/**
 * What the servers the tests and benchmarks start for themselves share (MinIO,
 * Toxiproxy): the binary from its install script, and a free loopback port.
 */
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/** The binary an infra/ install script prints (building it the first time). Throws a plain message naming `what` when it cannot. */
export function installedBinary(script: string, what: string): string {
  try {
    return execFileSync('bash', [fileURLToPath(new URL(`./${script}`, import.meta.url))], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  } catch (e) {
    throw new Error(`${what} and infra/${script} could not provide it: ${(e as Error).message}`);
  }
}

/** A loopback port nothing listens on now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * `lethe serve` as a child process (tsx, the repository's src/cli/main.ts): started on
 * the environment a section gives it (never the caller's LETHE_* settings), ready when it
 * logs "lethe listening" with its port; stopped with SIGTERM (SIGKILL after 10 s). With
 * `ownGroup` it leads a process group of its own, so a section can SIGKILL the whole
 * replica at once (killGroup) as a crash would; such groups are killed when the bench exits.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { REPO_ROOT } from './mode.js';
import { randomRootKey, type Scratch, type ScratchDatabase } from './scratch.js';

export interface Server {
  readonly child: ChildProcess;
  readonly port: number;
  readonly stderrTail: string[];
  /** The child leads its own process group (startService's `ownGroup`). */
  readonly ownGroup?: boolean;
}

/** Process groups started with `ownGroup` and not yet gone: a Ctrl-C does not reach them, so the bench's exit kills them. */
const groups = new Set<number>();
let groupsReaped = false;

function reapGroupsOnExit(): void {
  if (groupsReaped) return;
  groupsReaped = true;
  process.once('exit', () => {
    for (const pid of groups) signalGroup(pid, 'SIGKILL');
  });
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

/** Sends `signal` to a server's whole process group (its own pid when it leads none); resolves once the child exited. */
export async function killGroup(server: Server, signal: NodeJS.Signals): Promise<void> {
  const { child } = server;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  if (server.ownGroup) signalGroup(child.pid!, signal);
  else child.kill(signal);
  await exited;
}

export function serviceEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    // never let the caller's lethe settings leak into the benchmark service
    if (k.startsWith('LETHE_') || k.startsWith('BENCH_') || ['DATABASE_URL', 'PORT', 'HOST', 'NODE_ENV'].includes(k)) continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

/**
 * `startWithinMs`: how long the service may take to log "lethe listening" (default 60 s; a large embedded store rebuilds its indexes first).
 * `ownGroup`: the child leads a process group of its own (killGroup ends it whole).
 */
export async function startService(env: Record<string, string>, startWithinMs = 60_000, options: { readonly ownGroup?: boolean } = {}): Promise<Server> {
  // BENCH_SERVER_NODE_ARGS: extra node flags for the service (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof")
  const extraArgs = process.env.BENCH_SERVER_NODE_ARGS?.split(/\s+/).filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...extraArgs, '--import', 'tsx', 'src/cli/main.ts', 'serve'], {
    cwd: REPO_ROOT,
    env: serviceEnv(env),
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: options.ownGroup === true,
  });
  if (options.ownGroup && child.pid !== undefined) {
    reapGroupsOnExit();
    const pid = child.pid;
    groups.add(pid);
    child.once('exit', () => groups.delete(pid));
  }
  const stderrTail: string[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      // a service that never said it listens is not left running behind the failed section
      if (options.ownGroup) signalGroup(child.pid!, 'SIGKILL');
      else child.kill('SIGKILL');
      reject(new Error(`service did not log "lethe listening" within ${startWithinMs / 1000} s:\n${stderrTail.join('\n')}`));
    }, startWithinMs);
    const lines = createInterface({ input: child.stderr! });
    lines.on('line', (line) => {
      stderrTail.push(line);
      if (stderrTail.length > 50) stderrTail.shift();
      try {
        const entry = JSON.parse(line) as { msg?: string; port?: number };
        if (entry.msg === 'lethe listening' && typeof entry.port === 'number') {
          clearTimeout(timer);
          resolve(entry.port);
        }
      } catch {
        // not a JSON log line (a stack trace, a tsx warning): kept in the tail
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`service exited (code ${code}, signal ${signal}) before listening:\n${stderrTail.join('\n')}`));
    });
    child.once('error', reject);
  });
  return { child, port, stderrTail, ownGroup: options.ownGroup === true };
}

export async function stopService(server: Server): Promise<void> {
  const { child } = server;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const send = (signal: NodeJS.Signals) => (server.ownGroup ? signalGroup(child.pid!, signal) : child.kill(signal));
  send('SIGTERM');
  const timer = setTimeout(() => send('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/**
 * `lethe serve` on a scaffold's database (or its embedded one) and data directory, with a fresh root key, on a
 * free loopback port, logging at info ("lethe listening", with the port, is an info line;
 * nothing is logged per request below debug); `env` on top. Stopped by the scaffold's cleanup.
 */
export async function startScratchService(
  scratch: Scratch<ScratchDatabase | undefined>,
  env: Record<string, string>,
  startWithinMs?: number,
  options: { readonly ownGroup?: boolean } = {},
): Promise<Server> {
  const server = await startService(
    {
      ...(scratch.db ? { DATABASE_URL: scratch.db.url } : {}),
      LETHE_DATA_DIR: scratch.dataDir,
      LETHE_ROOT_KEY: randomRootKey(),
      PORT: '0',
      HOST: '127.0.0.1',
      LETHE_LOG_LEVEL: 'info',
      ...env,
    },
    startWithinMs,
    options,
  );
  scratch.defer('service', () => stopService(server));
  return server;
}

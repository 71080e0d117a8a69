/** Spawning `lethe` processes (the CLI or the service) for tests that need real processes. */
import { type ChildProcess, spawn } from 'node:child_process';

export interface Spawned {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code once the process exited and its output was read whole. */
  exited: Promise<number | null>;
}

export const CLI = ['--import', 'tsx', 'src/cli/main.ts'];

/** How long an exited process's pipes may stay open (held by a process it started) before its output is taken as read. */
const PIPES_CLOSE_MS = 5_000;

export function spawnProcess(command: string, args: string[], env: Record<string, string>): Spawned {
  const child = spawn(command, args, {
    cwd: process.cwd(),
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // its own process group, so stopping `npm start` also stops the node it runs
    detached: true,
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  // 'exit' can come before the pipes are read whole (seen under load: a CLI's exit code without its stderr); 'close'
  // comes after, bounded in case a process the child started keeps the pipes open
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      const bound = setTimeout(() => resolve(code), PIPES_CLOSE_MS);
      void closed.then(() => {
        clearTimeout(bound);
        resolve(code);
      });
    }),
  );
  return { child, stdout: () => out, stderr: () => err, exited };
}

export interface CliRun {
  /** The exit code; null when the process was killed. */
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI to completion; past `timeoutMs` it is killed (code null, said on stderr). */
export async function runCli(args: string[], env: Record<string, string>, options: { timeoutMs?: number } = {}): Promise<CliRun> {
  const p = spawnProcess(process.execPath, [...CLI, ...args], env);
  let timedOut = false;
  const timer =
    options.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          try {
            process.kill(-p.child.pid!, 'SIGKILL');
          } catch {
            // already gone
          }
        }, options.timeoutMs);
  const code = await p.exited;
  clearTimeout(timer);
  return { code, stdout: p.stdout(), stderr: timedOut ? `${p.stderr()}\n[lethe ${args.join(' ')} killed after ${options.timeoutMs} ms]` : p.stderr() };
}

export interface RunningService extends Spawned {
  readonly port: number;
  readonly url: string;
  stop(): Promise<void>;
}

/** Starts a service process and waits for its "lethe listening" log line. */
export async function startService(command: string, args: string[], env: Record<string, string>, timeoutMs = 90_000): Promise<RunningService> {
  const p = spawnProcess(command, args, { PORT: '0', ...env, LETHE_LOG_LEVEL: 'info' });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      // never leave a half-started service behind
      try {
        process.kill(-p.child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
      reject(new Error(`service did not start in ${timeoutMs} ms:\n${p.stderr()}`));
    }, timeoutMs);
    const check = () => {
      for (const line of p.stderr().split('\n')) {
        if (!line.includes('lethe listening')) continue;
        try {
          const parsed = JSON.parse(line) as { port?: number };
          if (parsed.port) {
            clearTimeout(timer);
            resolve(parsed.port);
            return;
          }
        } catch {
          // not a JSON line
        }
      }
    };
    p.child.stderr?.on('data', check);
    p.exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`service exited with ${code} before listening:\n${p.stderr()}`));
    });
  });
  return {
    ...p,
    port,
    url: `http://127.0.0.1:${port}`,
    async stop() {
      if (p.child.exitCode === null && p.child.signalCode === null) {
        const group = (signal: NodeJS.Signals) => {
          try {
            process.kill(-p.child.pid!, signal);
          } catch {
            // already gone
          }
        };
        group('SIGTERM');
        const t = setTimeout(() => group('SIGKILL'), 10_000);
        await p.exited;
        // wait for the whole group (npm's child too) to be gone
        for (let i = 0; i < 200; i++) {
          try {
            process.kill(-p.child.pid!, 0);
          } catch {
            break;
          }
          await new Promise((r) => setTimeout(r, 50));
        }
        clearTimeout(t);
      }
    },
  };
}

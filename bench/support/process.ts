/**
 * The bench's processes: a section run as a child that reports JSON (runChild,
 * reportResult, runIfMain), CPU and memory readings, sleeping, a bounded pool.
 */
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { REPO_ROOT } from './mode.js';
import { makeTempDir, removeDir } from './scratch.js';

/** user + system CPU seconds of this process since `since` (a process.cpuUsage() reading). */
export function cpuSeconds(since: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1e6;
}

/** Forces full garbage collections (node --expose-gc; run.ts passes it to the sections that measure memory). */
export function gcNow(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('this benchmark needs node --expose-gc (run.ts passes it)');
  for (let i = 0; i < 4; i++) gc();
}

/** The heap and array-buffer bytes in use now. */
export function memNow(): { heapUsed: number; arrayBuffers: number } {
  const m = process.memoryUsage();
  return { heapUsed: m.heapUsed, arrayBuffers: m.arrayBuffers };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Runs a TypeScript file in a fresh Node process (tsx loader, optional extra node
 * flags). The child writes its JSON result to the file named by BENCH_RESULT_FILE;
 * its stdout and stderr pass through. Resolves to the parsed result.
 */
export async function runChild<T>(script: string, options: { nodeArgs?: string[]; args?: string[]; env?: Record<string, string> } = {}): Promise<T> {
  const dir = await makeTempDir('result');
  const resultFile = path.join(dir, 'result.json');
  try {
    const child = spawn(process.execPath, [...(options.nodeArgs ?? []), '--import', 'tsx', script, ...(options.args ?? [])], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...options.env, BENCH_RESULT_FILE: resultFile, BENCH_CHILD: '1' },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (c, signal) => resolve(signal ? 128 : c));
    });
    if (code !== 0) throw new Error(`${path.relative(REPO_ROOT, script)} exited with code ${code}`);
    return JSON.parse(await readFile(resultFile, 'utf8')) as T;
  } finally {
    await removeDir(dir);
  }
}

/** In a child started by runChild: hands the result back. */
export async function reportResult(result: unknown): Promise<void> {
  const file = process.env.BENCH_RESULT_FILE;
  if (file) await writeFile(file, JSON.stringify(result));
}

/** True when `importMetaUrl` is the script node was started with. */
export function isMain(importMetaUrl: string): boolean {
  const entry = process.argv[1];
  return entry !== undefined && path.resolve(entry) === fileURLToPath(importMetaUrl);
}

/**
 * A benchmark script's entry point: when `importMetaUrl` is the script node was started
 * with, runs the benchmark, hands the result back (reportResult) and, unless it runs as
 * a child of run.ts (BENCH_CHILD), prints it formatted on stdout.
 */
export async function runIfMain<T>(importMetaUrl: string, run: () => Promise<T>, format: (r: T) => string): Promise<void> {
  if (!isMain(importMetaUrl)) return;
  const result = await run();
  await reportResult(result);
  if (!process.env.BENCH_CHILD) process.stdout.write(`${format(result)}\n`);
}

/** Runs fn(0..count-1) with at most `limit` in flight. */
export async function pool(count: number, limit: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, count) }, async () => {
      while (next < count) await fn(next++);
    }),
  );
}

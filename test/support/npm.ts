/** npm as a user runs it, for the tests that pack a package and install the tarball into an empty project. */
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

export const run = promisify(execFile);

/** Quiet, offline-first installs: the repository's npm cache makes them fast. */
export const NPM_FLAGS = ['--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'];

export async function npm(args: string[], cwd: string): Promise<string> {
  const { stdout } = await run('npm', args, { cwd, env: process.env, maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

export interface Packed {
  readonly filename: string;
  readonly files: Array<{ path: string }>;
}

/** `npm pack` of the package in `packageDir` into `destination`: the tarball's path and what npm says it holds. */
export async function pack(packageDir: string, destination: string, extra: string[] = []): Promise<{ tarball: string; packed: Packed }> {
  const out = await npm(['pack', '--json', '--pack-destination', destination, ...extra], packageDir);
  // should a prepack build print on stdout, the JSON starts at the first line opening an array
  const [packed] = JSON.parse(out.slice(out.search(/^\[/m))) as Packed[];
  return { tarball: path.join(destination, packed!.filename), packed: packed! };
}

/** An empty project in `dir` (ES modules unless `type` says commonjs) with `packages` (tarballs, `name@range`s) installed into it. */
export async function installInto(dir: string, name: string, packages: string | readonly string[], type: 'module' | 'commonjs' = 'module'): Promise<void> {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name, private: true, type }));
  await npm(['install', ...(typeof packages === 'string' ? [packages] : packages), ...NPM_FLAGS], dir);
}

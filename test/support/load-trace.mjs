// `node --import ./test/support/load-trace.mjs …` prints `lethe-loaded <path>` on stderr
// for every file under src/ the process loads (tests of what a command loads). The hooks
// run on their own thread: the line is written synchronously, or a command that exits at
// once (process.exit) could leave it unwritten.
import { writeSync } from 'node:fs';
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

if (isMainThread) register(import.meta.url);

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  const at = resolved.url.lastIndexOf('/src/');
  if (resolved.url.startsWith('file:') && at >= 0 && !resolved.url.includes('/node_modules/')) writeSync(2, `lethe-loaded ${resolved.url.slice(at + 1)}\n`);
  return resolved;
}

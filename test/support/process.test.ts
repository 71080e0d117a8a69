/** The test harness's processes: what a test reads of a process that exited is all it wrote (the child ends on its own, flushing). */
import { expect, it } from 'vitest';
import { spawnProcess } from './process.js';

it("a process seen to exit has had its output read whole (exit can come before the pipes' last bytes)", async () => {
  const size = 1 << 20;
  const runs = await Promise.all(
    Array.from({ length: 20 }, async () => {
      const p = spawnProcess(
        process.execPath,
        ['-e', `process.stdout.write('o'.repeat(${size})); process.stderr.write('e'.repeat(${size})); process.exitCode = 2`],
        {},
      );
      return { code: await p.exited, out: p.stdout().length, err: p.stderr().length };
    }),
  );
  for (const r of runs) expect(r).toEqual({ code: 2, out: size, err: size });
});

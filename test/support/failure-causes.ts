/**
 * Keeps an error's causes in a failed test's report. vitest's JSON reporter (what
 * .ci/run reads, .ci/vitest-report.json) records only each error's stack, and a
 * drizzle error's stack says only "Failed query: …": why it failed — the driver's
 * error — is its `cause`. The causes' lines are appended to the stack, which the JSON
 * keeps; the console reporter prints them from `cause` as before.
 */
import { beforeEach } from 'vitest';

/** "Caused by: <name>: <message> (<code>)" for each cause, outermost first, at most five deep. */
export function causeLines(error: unknown): string[] {
  const lines: string[] = [];
  let cause = (error as { cause?: unknown } | null)?.cause;
  for (let depth = 0; depth < 5 && cause !== undefined && cause !== null; depth++) {
    const c = cause as { name?: unknown; message?: unknown; code?: unknown };
    const code = typeof c.code === 'string' ? ` (${c.code})` : '';
    lines.push(`Caused by: ${typeof c.name === 'string' ? c.name : 'Error'}: ${typeof c.message === 'string' ? c.message : String(cause)}${code}`);
    cause = (cause as { cause?: unknown }).cause;
  }
  return lines;
}

beforeEach(({ onTestFailed }) => {
  onTestFailed(({ task }) => {
    for (const error of task.result?.errors ?? []) {
      const lines = causeLines(error);
      if (lines.length > 0 && typeof error.stack === 'string' && !error.stack.includes(lines[0]!)) error.stack = `${error.stack}\n${lines.join('\n')}`;
    }
  });
});

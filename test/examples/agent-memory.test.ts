/**
 * examples/agent-memory.ts end to end, as `npm run example:agent` runs it: it starts
 * `lethe serve` on the embedded default in a temp dir, two users talk to the LangGraph
 * agent, a shared summary is derived from both, alice is erased. Asserted from its
 * output: the certificate verifies, the agent recalls nothing of alice and may not learn
 * her again, bob's memories survive, and the summary keeps bob's part without alice's.
 */
import { describe, expect, it } from 'vitest';
import { spawnProcess } from '../support/process.js';

interface Outcome {
  alice: string;
  bob: string;
  aliceBefore: string;
  aliceAfter: string;
  bobAfter: string;
  bobMemories: string[];
  relearn: string;
  erasure: { status: string; class: string; certificateState: string };
  certificate: { valid: boolean; keyId: string; keyState: string };
  summary: { before: string; after: string; version: number };
  bobScope: { before: boolean; after: boolean };
}

describe('examples/agent-memory.ts', () => {
  it('erases alice with a verified certificate while bob, and his part of the shared summary, survive', async () => {
    const run = spawnProcess(process.execPath, ['--import', 'tsx', 'examples/agent-memory.ts', '--json'], {});
    const code = await run.exited;
    expect(code, `stdout:\n${run.stdout()}\nstderr:\n${run.stderr()}`).toBe(0);
    const out = run.stdout();
    const lines = out.trim().split('\n');
    const outcome = JSON.parse(lines.at(-1)!) as Outcome;

    expect(out).toMatch(/lethe serve started on the embedded default at http:\/\/127\.0\.0\.1:\d+/);
    expect(outcome.aliceBefore).toContain('I live at 14 Rue des Lilas in Lyon');
    expect(outcome.erasure).toMatchObject({ status: 'completed', class: 'B', certificateState: 'provisional' });
    expect(outcome.certificate).toMatchObject({ valid: true, keyState: 'current' });
    expect(out).toContain('signature verified against GET /v1/certificates/keys');

    expect(outcome.aliceAfter).toBe("I don't remember anything about you.");
    expect(outcome.relearn).toBe('subject_erased');
    expect(outcome.bobAfter).toContain('I am training for the Berlin marathon in September');
    expect(outcome.bobMemories.sort()).toEqual(['I am training for the Berlin marathon in September', 'my cat Pixel hides during thunderstorms']);

    expect(outcome.summary.before).toMatch(/Rue des Lilas.*Chloé.*Berlin marathon.*Pixel/s);
    expect(outcome.summary.version).toBe(2);
    expect(outcome.summary.after).toContain('Berlin marathon');
    expect(outcome.summary.after).toContain('Pixel');
    expect(outcome.summary.after).not.toMatch(/Lilas|Lyon|Chloé|oboe|alice/);
    // a scoped search of bob never held the shared summary while it reached alice; it does once it is bob's alone
    expect(outcome.bobScope).toEqual({ before: false, after: true });
    // nothing of alice in what the example printed after her erasure, but the agent's refusal to learn her again
    const after = out.slice(out.indexOf('== afterwards'), out.lastIndexOf('\n{'));
    expect(after.split('\n').filter((l) => /Lilas|Chloé|oboe/.test(l))).toEqual([`${outcome.alice}> Remember that I live at 14 Rue des Lilas in Lyon`]);
  }, 300_000);
});

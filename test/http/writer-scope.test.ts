/**
 * What a writer token reads (issue 29, a low finding): writer tokens are not bound to
 * subjects. A writer that never named a subject still reads that subject's entries by
 * id — ids an artifact's provenance hands it included — as SECURITY.md states: scope
 * writer tokens per deployment, not per subject.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ok } from '../support/http.js';
import { openTestApp, type TestApp } from '../support/vault.js';

let t: TestApp;
beforeAll(async () => {
  t = await openTestApp();
});
afterAll(async () => {
  await t?.close();
});

describe('a writer token and the subjects it never named', () => {
  it("reads another subject's entry by the id an artifact's provenance names", async () => {
    const other = await t.app.log.append('user:scope-other', { text: 'Olga keeps her passport in the freezer.' }, 'writer');
    const mine = await t.app.log.append('user:scope-mine', { text: 'Milo waters the ferns on Sundays.' }, 'writer');
    const art = await t.app.artifacts.write({ kind: 'summary', text: 'Two households.', sources: [other.entryId, mine.entryId] }, 'writer');
    const graph = await ok<{ sources: Array<{ id: string; type: string }> }>(
      t.call('GET', `/v1/artifacts/${art.artifactId}/provenance`, { role: 'writer' }),
      200,
    );
    expect(graph.sources.map((s) => s.id)).toContain(other.entryId);
    const read = await ok<{ text: string }>(t.call('GET', `/v1/entries/${other.entryId}`, { role: 'writer' }), 200);
    expect(read.text).toBe('Olga keeps her passport in the freezer.');
  });
});

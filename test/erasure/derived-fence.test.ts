/**
 * Derived data is fenced from the erasure request's commit (issue 29, M4): a summary or
 * digest whose closure holds an entry being erased — the whole subject, or forgotten
 * entries — answers 409 `erasure_in_progress` and leaves search (scoped to the erased
 * subject or not) until the cascade has regenerated it. Here no worker runs the erasure
 * until the test settles it: what the API serves in between is what any reader sees
 * for as long as the erasure waits on leases or a backup-store outage.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, ok } from '../support/http.js';
import { openTestApp, type TestApp } from '../support/vault.js';
import { classB, type ClassB, expectArtifactsRegenerated } from './fixtures.js';

type Hits = { hits: Array<{ id: string; type: string; text: string }> };

describe('derived data fenced from the erasure request', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await openTestApp({ app: { erasureWorker: false } });
  });
  afterAll(async () => {
    await t?.close();
  });

  async function searchIds(s: ClassB, body: Record<string, unknown>): Promise<string[]> {
    const { hits } = await ok<Hits>(t.call('POST', '/v1/search', { role: 'admin', body: { query: `synthesizers ${s.bCanary}`, k: 50, ...body } }), 200);
    return hits.map((h) => h.id);
  }

  it("a subject's erasure: its summary and the digest above it answer erasure_in_progress and leave every search from the request's commit; regenerated, they are served again", async () => {
    const s = await classB(t.app, 'dfence');
    expect(await searchIds(s, { subjects: [s.A, s.B] })).toEqual(expect.arrayContaining([s.summary]));
    expect(await searchIds(s, { allSubjects: true })).toEqual(expect.arrayContaining([s.summary, s.digest]));

    const { erasureId } = await ok<{ erasureId: string }>(
      t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject: s.A, legalBasis: 'gdpr-art17' } }),
      202,
    );
    // the request committed; no step has run
    expect(await t.app.erasures.status(erasureId)).toBe('pending');
    await expectProblem(t.call('GET', `/v1/artifacts/${s.summary}`), 409, 'erasure_in_progress');
    await expectProblem(t.call('GET', `/v1/artifacts/${s.digest}`), 409, 'erasure_in_progress');
    for (const body of [{ subjects: [s.A] }, { subjects: [s.A, s.B] }, { allSubjects: true }]) {
      const ids = await searchIds(s, body);
      expect(ids, JSON.stringify(body)).not.toContain(s.summary);
      expect(ids, JSON.stringify(body)).not.toContain(s.digest);
    }
    // what is not derived from A is served as before
    expect((await ok<{ text: string }>(t.call('GET', `/v1/entries/${s.b1}`), 200)).text).toContain(s.bCanary);
    expect(await searchIds(s, { subjects: [s.B] })).toContain(s.b1);

    expect((await t.app.erasures.settle(erasureId)).status).toBe('completed');
    await expectArtifactsRegenerated(t.call, s);
    expect(await searchIds(s, { allSubjects: true })).toEqual(expect.arrayContaining([s.summary, s.digest]));
  });

  it('forgetting one entry: the artifacts citing it answer erasure_in_progress from the DELETE, those that do not are untouched', async () => {
    const s = await classB(t.app, 'dforget');
    const bOnly = await t.app.artifacts.write({ kind: 'fact', text: `Bob's hobby: synthesizers ${s.bCanary}.`, sources: [s.b1] }, 'writer');
    const { erasureId } = await ok<{ erasureId: string }>(t.call('DELETE', `/v1/entries/${s.aEntries[0]}`, { role: 'eraser' }), 202);
    await expectProblem(t.call('GET', `/v1/entries/${s.aEntries[0]}`), 410, 'entry_forgotten');
    await expectProblem(t.call('GET', `/v1/artifacts/${s.summary}`), 409, 'erasure_in_progress');
    await expectProblem(t.call('GET', `/v1/artifacts/${s.digest}`), 409, 'erasure_in_progress');
    expect((await ok<{ text: string }>(t.call('GET', `/v1/artifacts/${bOnly.artifactId}`), 200)).text).toContain(s.bCanary);
    const ids = await searchIds(s, { subjects: [s.A, s.B] });
    expect(ids).not.toContain(s.summary);
    expect(ids).toContain(bOnly.artifactId);
    // and nothing new may cite the forgotten entry meanwhile
    await expectProblem(
      t.call('POST', '/v1/artifacts', { body: { kind: 'fact', text: 'A fact about birds.', sources: [s.aEntries[0]] } }),
      409,
      'erasure_in_progress',
    );

    expect((await t.app.erasures.settle(erasureId)).status).toBe('completed');
    const summary = await ok<{ version: number; text: string }>(t.call('GET', `/v1/artifacts/${s.summary}`), 200);
    expect(summary.version).toBe(2);
    expect(summary.text).not.toContain(s.aCanaries[0]);
  });
});

/**
 * The training-exposure registry over HTTP: POST /v1/training-exposures records which
 * entries and artifacts went into a corpus, resolves the subjects they hold (artifacts
 * through their closures) at registration, and vault.exposures.forSubjectHash answers
 * the class C question for a subject: which corpora hold its content.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, ok } from '../support/http.js';
import { openTestApp, type TestApp, type TestRole } from '../support/vault.js';

interface Appended {
  entryId: string;
  keyId: string;
}
interface Registered {
  exposureId: string;
  records: number;
  subjects: number;
}

let t: TestApp;
beforeAll(async () => {
  t = await openTestApp();
});
afterAll(async () => {
  await t?.close();
});

async function append(subject: string, text = `${subject} said something.`): Promise<Appended> {
  return ok<Appended>(await t.call('POST', `/v1/subjects/${subject}/entries`, { role: 'writer', body: { text } }), 201);
}

async function artifact(sources: string[]): Promise<string> {
  const res = await t.call('POST', '/v1/artifacts', { role: 'writer', body: { kind: 'summary', text: 'A summary.', sources } });
  return (await ok<{ artifactId: string }>(res, 201)).artifactId;
}

const expose = (body: unknown, role: TestRole | 'none' = 'writer') => t.call('POST', '/v1/training-exposures', { role, body });

async function register(body: { corpus: string; model?: string; ids: string[] }): Promise<Registered> {
  return ok<Registered>(await expose(body), 201);
}

/** The corpora registered as holding the subject's content. */
const corporaOf = async (subject: string) => (await t.app.exposures.forSubjectHash(t.app.keys.subjectHash(subject))).map((e) => e.corpus);

describe('POST /v1/training-exposures', () => {
  it('answers 201 {exposureId, records, subjects}', async () => {
    const e = await append('user:exp-basic');
    const r = await register({ corpus: 'corpus-basic', ids: [e.entryId] });
    expect(Object.keys(r).sort()).toEqual(['exposureId', 'records', 'subjects']);
    expect(r.exposureId).toEqual(expect.any(String));
    expect(r).toMatchObject({ records: 1, subjects: 1 });
  });

  it('counts the subjects reached through artifact closures, not only those of entries named directly', async () => {
    const direct = await append('user:exp-direct');
    const viaSummary = await append('user:exp-via-summary');
    const viaDigest = await append('user:exp-via-digest');
    const summary = await artifact([viaSummary.entryId]);
    const digest = await artifact([summary, viaDigest.entryId]);
    const r = await register({ corpus: 'corpus-closure', model: 'distil-1', ids: [direct.entryId, digest] });
    expect(r).toMatchObject({ records: 2, subjects: 3 });
    for (const s of ['user:exp-direct', 'user:exp-via-summary', 'user:exp-via-digest']) {
      expect(await corporaOf(s), s).toEqual(['corpus-closure']);
    }
  });

  it('counts a subject reached several ways once, and a record named twice once', async () => {
    const a = await append('user:exp-twice');
    const b = await append('user:exp-twice');
    const summary = await artifact([a.entryId, b.entryId]);
    const r = await register({ corpus: 'corpus-twice', ids: [a.entryId, b.entryId, summary, summary] });
    expect(r).toMatchObject({ records: 3, subjects: 1 });
  });

  it('each registration is its own exposure', async () => {
    const e = await append('user:exp-distinct');
    const first = await register({ corpus: 'corpus-d', ids: [e.entryId] });
    const second = await register({ corpus: 'corpus-d', ids: [e.entryId] });
    expect(second.exposureId).not.toBe(first.exposureId);
  });
});

describe('vault.exposures.forSubjectHash', () => {
  it('lists the corpus, with its model, for an exposed subject and nothing for a subject left out', async () => {
    const inCorpus = await append('user:x');
    await append('user:left-out');
    const r = await register({ corpus: 'corpus-x', model: 'model-x', ids: [inCorpus.entryId] });
    const exposures = await t.app.exposures.forSubjectHash(t.app.keys.subjectHash('user:x'));
    expect(exposures).toEqual([{ exposureId: r.exposureId, corpus: 'corpus-x', model: 'model-x', createdAt: expect.any(Date) }]);
    expect(await t.app.exposures.forSubjectHash(t.app.keys.subjectHash('user:left-out'))).toEqual([]);
    expect(await t.app.exposures.forSubjectHash(t.app.keys.subjectHash('user:never-seen'))).toEqual([]);
  });

  it('records a null model when none is named', async () => {
    const e = await append('user:exp-nomodel');
    await register({ corpus: 'corpus-nomodel', ids: [e.entryId] });
    const [exposure] = await t.app.exposures.forSubjectHash(t.app.keys.subjectHash('user:exp-nomodel'));
    expect(exposure?.model).toBeNull();
  });

  it('lists every corpus that holds the subject, whether through an entry or an artifact', async () => {
    const e = await append('user:exp-many');
    await register({ corpus: 'corpus-m1', ids: [e.entryId] });
    await register({ corpus: 'corpus-m2', ids: [await artifact([e.entryId])] });
    expect((await corporaOf('user:exp-many')).sort()).toEqual(['corpus-m1', 'corpus-m2']);
  });

  it('a later regeneration that drops the subject does not hide that the earlier version went into a corpus', async () => {
    const kept = await append('user:exp-kept');
    const dropped = await append('user:exp-dropped');
    const summary = await artifact([kept.entryId, dropped.entryId]);
    await register({ corpus: 'corpus-before-regen', ids: [summary] });
    await t.app.artifacts.regenerate([summary], { excluding: [dropped.entryId], actor: 't' });
    expect((await t.app.artifacts.provenance(summary)).nodes.map((n) => n.id)).toEqual([kept.entryId]);
    expect(await corporaOf('user:exp-dropped')).toEqual(['corpus-before-regen']);
    expect(await corporaOf('user:exp-kept')).toEqual(['corpus-before-regen']);
  });
});

describe('erased records', () => {
  it('an entry whose key was destroyed is still accepted and counted, and its subject is still listed', async () => {
    const gone = await append('user:exp-erased');
    await t.app.keys.destroyKey(gone.keyId, { reason: 't', actor: 'admin' });
    const live = await append('user:exp-alive');
    const r = await register({ corpus: 'corpus-erased', ids: [gone.entryId, live.entryId] });
    expect(r).toMatchObject({ records: 2, subjects: 2 });
    expect(await corporaOf('user:exp-erased')).toEqual(['corpus-erased']);
  });

  it('an artifact erased by regeneration is still accepted and counted as a record', async () => {
    const e = await append('user:exp-erased-art');
    const summary = await artifact([e.entryId]);
    const result = await t.app.artifacts.regenerate([summary], { excluding: [e.entryId], actor: 't' });
    expect(result.removed).toEqual([summary]);
    const r = await register({ corpus: 'corpus-erased-art', ids: [summary] });
    expect(r.records).toBe(1);
  });
});

describe('refusals', () => {
  const UNKNOWN_ENTRY = `entry_${'Q'.repeat(22)}`;
  const UNKNOWN_ARTIFACT = `art_${'Q'.repeat(22)}`;

  it('unknown ids are 422 unknown_source, and nothing is registered for the known ones next to them', async () => {
    const e = await append('user:exp-unknown');
    await expectProblem(await expose({ corpus: 'corpus-u', ids: [UNKNOWN_ENTRY] }), 422, 'unknown_source');
    await expectProblem(await expose({ corpus: 'corpus-u', ids: [UNKNOWN_ARTIFACT] }), 422, 'unknown_source');
    await expectProblem(await expose({ corpus: 'corpus-u', ids: ['garbage'] }), 422, 'unknown_source');
    await expectProblem(await expose({ corpus: 'corpus-u', ids: [e.entryId, UNKNOWN_ENTRY] }), 422, 'unknown_source');
    expect(await corporaOf('user:exp-unknown')).toEqual([]);
  });

  const INVALID: ReadonlyArray<[string, unknown, string]> = [
    ['empty ids', { corpus: 'c', ids: [] }, 'ids'],
    ['missing ids', { corpus: 'c' }, 'ids'],
    ['ids that is not an array', { corpus: 'c', ids: 'entry_x' }, 'ids'],
    ['a missing corpus', { ids: [`entry_${'Q'.repeat(22)}`] }, 'corpus'],
    ['an empty corpus', { corpus: '', ids: [`entry_${'Q'.repeat(22)}`] }, 'corpus'],
    ['a 201-character corpus', { corpus: 'c'.repeat(201), ids: [`entry_${'Q'.repeat(22)}`] }, 'corpus'],
  ];
  for (const [what, body, field] of INVALID) {
    it(`${what} is 400 validation_failed naming ${field}`, async () => {
      expect((await expectProblem(await expose(body), 400, 'validation_failed')).detail).toContain(field);
    });
  }

  it('malformed JSON is 400 validation_failed', async () => {
    await expectProblem(await t.call('POST', '/v1/training-exposures', { role: 'writer', rawBody: '{"corpus": "c", "ids": [' }), 400, 'validation_failed');
  });

  it('the backup and eraser roles are 403 forbidden, no token is 401', async () => {
    const e = await append('user:exp-roles');
    await expectProblem(await expose({ corpus: 'corpus-roles', ids: [e.entryId] }, 'backup'), 403, 'forbidden');
    await expectProblem(await expose({ corpus: 'corpus-roles', ids: [e.entryId] }, 'eraser'), 403, 'forbidden');
    await expectProblem(await expose({ corpus: 'corpus-roles', ids: [e.entryId] }, 'none'), 401, 'unauthorized');
    expect(await corporaOf('user:exp-roles')).toEqual([]);
  });
});

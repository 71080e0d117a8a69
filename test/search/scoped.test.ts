/**
 * Scoped search over HTTP, on PostgreSQL and MinIO: a search names whose records it
 * may answer (subject, subjects, or allSubjects for an admin), ranks only those
 * records' vectors, and serves an artifact only when every subject its provenance
 * closure reaches is named.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_SEARCH_SUBJECTS } from '../../src/search/service.js';
import { expectProblem, ok } from '../support/http.js';
import { minioEnv, openTestApp, type TestApp } from '../support/vault.js';

interface Hit {
  id: string;
  type: 'entry' | 'artifact';
  score: number;
  text: string;
  subject: string | null;
  kind: string | null;
  metadata: Record<string, unknown> | null;
  createdAt: string;
}
interface Result {
  hits: Hit[];
  readFence: string;
}

const ALICE = 'user:alice';
const BOB = 'user:bob';
/** What Bob's entries and the shared summaries say, near word for word: Bob's are the nearest records to it. */
const QUERY = 'lives in a flat near the river in Lisbon';
/** More than a global search over-fetches for k = 5 (2k + 4): filtering a global search afterwards would leave Alice nothing. */
const BOB_ENTRIES = 30;
const SHARED_SUMMARIES = 20;

describe('POST /v1/search, scoped to subjects', () => {
  let t: TestApp;
  const alice: Array<{ entryId: string; keyId: string; text: string }> = [];
  const bob: Array<{ entryId: string; keyId: string; text: string }> = [];
  /** Summaries of Alice's and Bob's entries together, and a digest above the first. */
  const shared: string[] = [];
  let sharedDigest = '';
  /** A summary of Alice's entries alone, and a digest above it. */
  let aliceSummary = '';
  let aliceDigest = '';

  const search = (body: Record<string, unknown>, role: 'writer' | 'admin' = 'writer') =>
    t.call('POST', '/v1/search', { role, body: { query: QUERY, ...body } });
  const append = async (subject: string, text: string, extra: Record<string, unknown> = {}) =>
    ok<{ entryId: string; keyId: string }>(t.call('POST', `/v1/subjects/${subject}/entries`, { body: { text, ...extra } }), 201);
  const write = async (kind: string, text: string, sources: string[]) =>
    (await ok<{ artifactId: string }>(t.call('POST', '/v1/artifacts', { body: { kind, text, sources } }), 201)).artifactId;

  beforeAll(async () => {
    t = await openTestApp({ extraEnv: minioEnv('lethe-scoped') });
    for (const [text, extra] of [
      ['Alice lives in a small house in Porto with two cats.', { kind: 'note', metadata: { source: 'chat', turn: 3 } }],
      ['Alice plays chess on Sunday mornings.', {}],
      ['Alice is allergic to penicillin.', {}],
    ] as const) {
      alice.push({ ...(await append(ALICE, text, extra)), text });
    }
    for (let i = 0; i < BOB_ENTRIES; i++) {
      const text = `Bob lives in a flat near the river in Lisbon, note ${i}.`;
      bob.push({ ...(await append(BOB, text)), text });
    }
    for (let i = 0; i < SHARED_SUMMARIES; i++) {
      shared.push(
        await write('summary', `Alice and Bob: he lives in a flat near the river in Lisbon, summary ${i}.`, [
          alice[i % alice.length]!.entryId,
          bob[i]!.entryId,
        ]),
      );
    }
    sharedDigest = await write('digest', 'Digest: a flat near the river in Lisbon.', [shared[0]!]);
    aliceSummary = await write(
      'summary',
      'Alice: a house in Porto, chess, penicillin.',
      alice.map((a) => a.entryId),
    );
    aliceDigest = await write('digest', 'Digest of Alice: Porto.', [aliceSummary]);
  });
  afterAll(async () => {
    await t?.close();
  });

  it("Bob's records are the nearest to the query (what the scoped searches below must not fall for)", async () => {
    const { hits } = await ok<Result>(search({ k: 10, allSubjects: true }, 'admin'), 200);
    const bobs = new Set([...bob.map((b) => b.entryId), ...shared, sharedDigest]);
    expect(hits.length).toBe(10);
    for (const h of hits) expect(bobs.has(h.id), h.text).toBe(true);
  });

  it("Alice's search answers only her entries and the artifacts derived from her alone, even with Bob's records nearest", async () => {
    const { hits, readFence } = await ok<Result>(search({ k: 5, subject: ALICE }), 200);
    expect(hits.map((h) => h.id).sort()).toEqual([...alice.map((a) => a.entryId), aliceSummary, aliceDigest].sort());
    for (const h of hits) expect(h.subject).toBe(ALICE);
    const scores = hits.map((h) => h.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    // entries carry their kind, metadata and append time
    const house = hits.find((h) => h.id === alice[0]!.entryId)!;
    const entry = await ok<{ createdAt: string }>(t.call('GET', `/v1/entries/${alice[0]!.entryId}`), 200);
    expect(house).toEqual({
      id: alice[0]!.entryId,
      type: 'entry',
      score: expect.any(Number),
      text: alice[0]!.text,
      subject: ALICE,
      kind: 'note',
      metadata: { source: 'chat', turn: 3 },
      createdAt: entry.createdAt,
    });
    expect(hits.find((h) => h.id === alice[1]!.entryId)).toMatchObject({ kind: null, metadata: null });
    // artifacts: their kind, no metadata, and when their current version was written
    const summary = await ok<{ updatedAt: string }>(t.call('GET', `/v1/artifacts/${aliceSummary}`), 200);
    expect(hits.find((h) => h.id === aliceSummary)).toMatchObject({
      type: 'artifact',
      subject: ALICE,
      kind: 'summary',
      metadata: null,
      createdAt: summary.updatedAt,
    });
    expect(hits.find((h) => h.id === aliceDigest)).toMatchObject({ type: 'artifact', subject: ALICE, kind: 'digest', metadata: null });
    // the fence covers exactly what was returned: Alice's key and her artifacts' version keys
    const versionKeys = (await t.app.artifacts.current([aliceSummary, aliceDigest])).map((a) => a.keyId!);
    expect(t.app.fences.parse(readFence).sort()).toEqual([...new Set([alice[0]!.keyId, ...versionKeys])].sort());
  });

  it("a summary shared with Bob never appears in Alice's search, however many there are and however near", async () => {
    const { hits } = await ok<Result>(search({ k: 100, subject: ALICE }), 200);
    const ids = hits.map((h) => h.id);
    expect(ids.sort()).toEqual([...alice.map((a) => a.entryId), aliceSummary, aliceDigest].sort());
    for (const id of [...shared, sharedDigest, ...bob.map((b) => b.entryId)]) expect(ids).not.toContain(id);
    // nor in Bob's: it holds Alice's entries too; Alice's own summary is not his either
    const bobs = (await ok<Result>(search({ k: 100, subject: BOB }), 200)).hits;
    expect(bobs.map((h) => h.id).sort()).toEqual(bob.map((b) => b.entryId).sort());
    for (const h of bobs) expect(h).toMatchObject({ type: 'entry', subject: BOB });
  });

  it('subjects: [alice, bob] answers both, each hit naming its subject, and the shared summaries with subject null', async () => {
    const { hits, readFence } = await ok<Result>(search({ k: 100, subjects: [ALICE, BOB] }), 200);
    const expected = [...alice.map((a) => a.entryId), ...bob.map((b) => b.entryId), ...shared, sharedDigest, aliceSummary, aliceDigest];
    expect(hits.map((h) => h.id).sort()).toEqual(expected.sort());
    for (const a of alice) expect(hits.find((h) => h.id === a.entryId)?.subject).toBe(ALICE);
    for (const b of bob) expect(hits.find((h) => h.id === b.entryId)?.subject).toBe(BOB);
    for (const id of [...shared, sharedDigest]) expect(hits.find((h) => h.id === id)).toMatchObject({ type: 'artifact', subject: null, metadata: null });
    expect(hits.find((h) => h.id === aliceSummary)?.subject).toBe(ALICE);
    // the nearest first: Bob's and the shared records lead
    expect(hits[0]!.subject === BOB || shared.includes(hits[0]!.id) || hits[0]!.id === sharedDigest).toBe(true);
    const fenced = t.app.fences.parse(readFence);
    expect(fenced).toContain(alice[0]!.keyId);
    expect(fenced).toContain(bob[0]!.keyId);
  });

  it("allSubjects answers everyone's records, every hit with subject null, for an admin; a writer asking for it is 403", async () => {
    const { hits } = await ok<Result>(search({ k: 100, allSubjects: true }, 'admin'), 200);
    const ids = hits.map((h) => h.id);
    for (const id of [alice[0]!.entryId, bob[0]!.entryId, shared[0]!, aliceSummary]) expect(ids).toContain(id);
    for (const h of hits) expect(h.subject).toBeNull();
    const refused = await expectProblem(search({ allSubjects: true }), 403, 'forbidden');
    expect(refused.detail).toMatch(/allSubjects.*admin/);
  });

  it('a subject lethe has never seen has no hits: 200 with an empty list, no error', async () => {
    const { hits, readFence } = await ok<Result>(search({ subject: 'user:nobody-ever' }), 200);
    expect(hits).toEqual([]);
    expect(t.app.fences.parse(readFence)).toEqual([]);
    // among known subjects it changes nothing
    const mixed = await ok<Result>(search({ k: 100, subjects: [ALICE, 'user:nobody-ever'] }), 200);
    expect(mixed.hits.map((h) => h.id).sort()).toEqual([...alice.map((a) => a.entryId), aliceSummary, aliceDigest].sort());
  });

  const BAD: ReadonlyArray<[string, Record<string, unknown>, RegExp]> = [
    ['no scope', {}, /^body: name the subject to search: subject, subjects or allSubjects$/],
    ['allSubjects: false alone', { allSubjects: false }, /^body: name the subject to search/],
    ['subject and subjects', { subject: ALICE, subjects: [BOB] }, /^body: name the subject to search one way only/],
    ['subject and allSubjects', { subject: ALICE, allSubjects: true }, /^body: name the subject to search one way only/],
    ['an empty subjects list', { subjects: [] }, /^body\.subjects: /],
    [`${MAX_SEARCH_SUBJECTS + 1} subjects`, { subjects: Array.from({ length: MAX_SEARCH_SUBJECTS + 1 }, (_, i) => `user:${i}`) }, /^body\.subjects: /],
    ['a malformed subject', { subject: 'not a subject!' }, /^body\.subject: subject must be/],
    ['a malformed subject in the list', { subjects: [ALICE, 'a/b'] }, /^body\.subjects\.1: subject must be/],
    ['a subject that is not a string', { subject: 42 }, /^body\.subject: /],
  ];
  for (const [what, body, detail] of BAD) {
    it(`is 400 validation_failed for ${what}`, async () => {
      const refused = await expectProblem(search(body, 'admin'), 400, 'validation_failed');
      expect(refused.detail).toMatch(detail);
    });
  }

  it('takes 100 subjects at once', async () => {
    const subjects = [ALICE, ...Array.from({ length: MAX_SEARCH_SUBJECTS - 1 }, (_, i) => `user:unseen-${i}`)];
    const { hits } = await ok<Result>(search({ k: 100, subjects }), 200);
    expect(hits.map((h) => h.id).sort()).toEqual([...alice.map((a) => a.entryId), aliceSummary, aliceDigest].sort());
  });

  it('an entry being forgotten is never a hit', async () => {
    const forgotten = alice[2]!.entryId;
    await t.app.db.db.execute(sql`update log_entries set forgotten_by = 'ers_scopedsearchtest00000' where entry_id = ${forgotten}`);
    try {
      for (const body of [
        { k: 100, subject: ALICE },
        { k: 100, subjects: [ALICE, BOB] },
      ]) {
        const { hits } = await ok<Result>(search(body), 200);
        expect(hits.map((h) => h.id)).not.toContain(forgotten);
        expect(hits.map((h) => h.id)).toContain(alice[1]!.entryId);
      }
      const all = await ok<Result>(search({ k: 100, allSubjects: true }, 'admin'), 200);
      expect(all.hits.map((h) => h.id)).not.toContain(forgotten);
    } finally {
      await t.app.db.db.execute(sql`update log_entries set forgotten_by = null where entry_id = ${forgotten}`);
    }
  });

  it("after Bob's key is destroyed his entries leave every scope, and the shared summaries stay out of Alice's", async () => {
    await t.app.keys.destroyKey(bob[0]!.keyId, { reason: 'scoped search test', actor: 'admin' });
    const bobs = await ok<Result>(search({ k: 100, subject: BOB }), 200);
    expect(bobs.hits).toEqual([]);
    const { hits } = await ok<Result>(search({ k: 100, subjects: [ALICE, BOB] }), 200);
    for (const b of bob) expect(hits.map((h) => h.id)).not.toContain(b.entryId);
    const alices = await ok<Result>(search({ k: 100, subject: ALICE }), 200);
    expect(alices.hits.map((h) => h.id).sort()).toEqual([...alice.map((a) => a.entryId), aliceSummary, aliceDigest].sort());
  });
});

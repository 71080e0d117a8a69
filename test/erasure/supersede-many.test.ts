/**
 * Updating a memory held in several entries (POST /v1/subjects/{subject}/supersede: a
 * LangGraph item with one entry per indexed field), on PostgreSQL and MinIO through the
 * HTTP app: every successor stored and every old entry forgotten in one transaction,
 * or nothing at all; one erasure whose probe counts none of the successors.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { minioEnv } from '../backups/support.js';
import { expectProblem, ok } from '../support/http.js';
import { openTestApp, type TestApp } from '../support/vault.js';
import { awaitErasure, tag } from './fixtures.js';

interface SupersededMany {
  entries: Array<{ entryId: string; keyId: string; seq: number }>;
  superseded: { entryIds: string[]; erasureId: string; status: string };
}

describe('superseding a memory held in several entries', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await openTestApp({ extraEnv: { ...minioEnv().env, LETHE_ERASURE_POLL_MS: '100' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  const append = async (subject: string, text: string) =>
    (await ok<{ entryId: string }>(t.call('POST', `/v1/subjects/${subject}/entries`, { body: { text, kind: 'memory' } }), 201)).entryId;
  const supersedeAll = (subject: string, entryIds: readonly string[], texts: readonly string[]) =>
    t.call('POST', `/v1/subjects/${subject}/supersede`, { body: { entryIds, entries: texts.map((text) => ({ text, kind: 'memory' })) } });
  const live = async (subject: string) =>
    (await ok<{ entries: Array<{ entryId: string }> }>(t.call('GET', `/v1/subjects/${subject}/entries?limit=1000`), 200)).entries.map((e) => e.entryId);
  const successorsOf = async (ids: readonly string[]) =>
    Number(
      (
        await queryRows<{ n: string }>(
          t.app.db.db,
          sql`select count(*) as n from log_entries where supersedes in (select json_array_elements_text(${JSON.stringify(ids)}::json))`,
        )
      )[0]!.n,
    );

  it('two fields become three: every successor stored, both old entries forgotten, one erasure that counts no successor', { timeout: 120_000 }, async () => {
    const A = `user:supersede-fields-${tag()}`;
    const mark = tag(4);
    const kept = await append(A, `Alice keeps bees on the roof ${mark}.`);
    const olds = [await append(A, `Alice's title: head of research ${mark}`), await append(A, `Alice's team: the Lyon lab ${mark}`)];
    const texts = [`Alice's title: director of research ${mark}`, `Alice's team: the Lyon lab and Grenoble ${mark}`, `Alice's desk: floor 3 ${mark}`];
    const r = await ok<SupersededMany>(supersedeAll(A, olds, texts), 201);
    expect(r.entries).toHaveLength(3);
    // the successors in the order given: the subject's log lists them so
    const seqs = r.entries.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(r.superseded.entryIds).toEqual(olds);
    for (const id of olds) await expectProblem(t.call('GET', `/v1/entries/${id}`), 410, 'entry_forgotten');
    expect((await live(A)).sort()).toEqual([kept, ...r.entries.map((e) => e.entryId)].sort());
    const done = (await awaitErasure(t.call, r.superseded.erasureId)) as Awaited<ReturnType<typeof awaitErasure>> & { probe: { successors?: string[] } };
    expect(done.status, JSON.stringify({ probe: done.probe, steps: done.steps })).toBe('completed');
    expect([...(done.probe.successors ?? [])].sort()).toEqual(r.entries.map((e) => e.entryId).sort());
  });

  it('three entries become one: all three forgotten by the one erasure', { timeout: 120_000 }, async () => {
    const A = `user:supersede-fewer-${tag()}`;
    const olds = [await append(A, 'Bob likes figs.'), await append(A, 'Bob likes dates.'), await append(A, 'Bob likes plums.')];
    const r = await ok<SupersededMany>(supersedeAll(A, olds, ['Bob likes fruit.']), 201);
    expect(await live(A)).toEqual([r.entries[0]!.entryId]);
    expect((await awaitErasure(t.call, r.superseded.erasureId)).status).toBe('completed');
  });

  it('all or nothing: when one old entry was already forgotten, nothing is stored and the others stay live', async () => {
    const A = `user:supersede-atomic-${tag()}`;
    const a = await append(A, 'Carol plays the cello.');
    const b = await append(A, 'Carol plays in a quartet.');
    await ok(t.call('DELETE', `/v1/entries/${b}`), 202);
    await expectProblem(supersedeAll(A, [a, b], ['Carol plays the viola.', 'Carol plays in a trio.']), 409, 'conflict');
    expect(await successorsOf([a, b])).toBe(0);
    expect(await live(A)).toEqual([a]);
  });

  it("two supersessions naming the same entries in opposite orders: one stores, the other is a conflict (never a deadlock's 503)", {
    timeout: 120_000,
  }, async () => {
    for (let round = 0; round < 8; round++) {
      const A = `user:supersede-order-${tag()}`;
      const a = await append(A, `Erin likes pears ${round}.`);
      const b = await append(A, `Erin likes apples ${round}.`);
      const answers = await Promise.all([supersedeAll(A, [a, b], ['Erin likes fruit.']), supersedeAll(A, [b, a], ['Erin likes berries.'])]);
      expect(answers.map((r) => r.status).sort(), `round ${round}`).toEqual([201, 409]);
      expect(await live(A)).toHaveLength(1);
    }
  });

  it('refuses bad input with a clear problem, and stores nothing', async () => {
    const A = `user:supersede-many-bad-${tag()}`;
    const a = await append(A, 'Dan owns a red bicycle.');
    const body = (b: unknown) => t.call('POST', `/v1/subjects/${A}/supersede`, { body: b });
    await expectProblem(body({ entryIds: [], entries: [{ text: 'x' }] }), 400, 'validation_failed');
    await expectProblem(body({ entryIds: [a], entries: [] }), 400, 'validation_failed');
    await expectProblem(body({ entryIds: ['not-an-id'], entries: [{ text: 'x' }] }), 400, 'validation_failed');
    await expectProblem(body({ entryIds: [a], entries: Array.from({ length: 65 }, () => ({ text: 'x' })) }), 400, 'validation_failed');
    await expectProblem(body({ entryIds: [a], entries: [{ text: 'x' }], extra: 1 }), 400, 'validation_failed');
    await expectProblem(supersedeAll(A, ['entry_AAAAAAAAAAAAAAAAAAAAAA'], ['x']), 404, 'not_found');
    expect(await successorsOf([a])).toBe(0);
    expect(await live(A)).toEqual([a]);
  });
});

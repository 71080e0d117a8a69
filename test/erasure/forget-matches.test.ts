/**
 * Forgetting one memory when another memory of the same, living subject says the same
 * thing, on PostgreSQL and MinIO through the HTTP app. The probe rightly names the
 * surviving sibling as a match and the erasure ends `incomplete`. The sibling says the
 * same words (a near copy), so no ruling may dismiss it (422 `near_copy`, whoever asks):
 * the remedy is its redaction (the subject re-keyed without it as well). Only the
 * entries the erasure itself forgets are "its own" records — the subject's other
 * entries are readable, not erased.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { minioEnv } from '../backups/support.js';
import { expectProblem, ok } from '../support/http.js';
import { openTestApp, type TestApp } from '../support/vault.js';
import { awaitErasure, tag } from './fixtures.js';

describe('a forget stranded by a sibling memory of the living subject', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await openTestApp({ extraEnv: { ...minioEnv().env, LETHE_ERASURE_POLL_MS: '100' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  const append = async (subject: string, text: string) =>
    (await ok<{ entryId: string }>(t.call('POST', `/v1/subjects/${subject}/entries`, { body: { text } }), 201)).entryId;

  /** A subject with a memory, a sibling saying the same, and an unrelated one; the memory forgotten: the erasure as it ends. */
  async function stranded(story: { what: string; where: string; other: string }) {
    const A = `user:sibling-${tag()}`;
    const code = `${tag(2)}`.toUpperCase();
    const memory = await append(A, `Alice's ${story.what} is ${code}; she wrote it on her hand at ${story.where}.`);
    const sibling = await append(A, `Alice wrote her ${story.what} ${code} on her hand at ${story.where}.`);
    const other = await append(A, story.other);
    const { erasureId } = await ok<{ erasureId: string }>(t.call('DELETE', `/v1/entries/${memory}`, { role: 'eraser' }), 202);
    const done = await awaitErasure(t.call, erasureId);
    return { A, memory, sibling, other, erasureId, done };
  }

  it('the sibling strands the forget incomplete; it is a near copy, so a dismissal of it is refused and the erasure stays incomplete', {
    timeout: 120_000,
  }, async () => {
    const s = await stranded({ what: 'gym locker combination', where: 'the Riverside pool', other: 'Prefers aisle seats on overnight trains to Vienna.' });
    expect(s.done.status).toBe('incomplete');
    expect(s.done.probe.matches.map((m) => m.id)).toEqual([s.sibling]);
    // the residual names the sibling for what it is: the living subject's own memory, not another subject's
    const residual = s.done.residuals.find((r) => r.detail.includes(s.sibling))!;
    expect(residual.detail).not.toMatch(/not the subject's/);
    // the erasure's own forgotten entry is not a record a person may rule on
    await expectProblem(
      t.call('POST', `/v1/erasures/${s.erasureId}/dismissals`, { role: 'eraser', body: { matches: [{ id: s.memory, reason: 'mine' }] } }),
      409,
      'conflict',
    );
    const reason = 'The user kept this memory on purpose when deleting the other one.';
    await expectProblem(
      t.call('POST', `/v1/erasures/${s.erasureId}/dismissals`, { role: 'eraser', body: { matches: [{ id: s.sibling, reason }] } }),
      422,
      'near_copy',
    );
    const after = await t.app.erasures.get(s.erasureId);
    expect(after.status).toBe('incomplete');
    expect(after.dismissals).toBeUndefined();
  });

  it('the sibling strands the forget incomplete; a redaction of it re-keys the subject without it too and completes the erasure', {
    timeout: 120_000,
  }, async () => {
    const s = await stranded({ what: 'bicycle padlock code', where: 'the Northgate library', other: 'Grows basil and chillies on the kitchen windowsill.' });
    expect(s.done.status).toBe('incomplete');
    expect(s.done.probe.matches.map((m) => m.id)).toEqual([s.sibling]);
    expect(await ok(t.call('POST', `/v1/erasures/${s.erasureId}/redactions`, { role: 'eraser', body: { ids: [s.sibling] } }), 202)).toMatchObject({
      erasureId: s.erasureId,
    });
    const after = await awaitErasure(t.call, s.erasureId);
    expect(after.status, JSON.stringify({ probe: after.probe, steps: after.steps, residuals: after.residuals })).toBe('completed');
    // the subject lives on with its unrelated memory alone
    const entries = (await ok<{ entries: Array<{ entryId: string }> }>(t.call('GET', `/v1/subjects/${s.A}/entries`), 200)).entries;
    expect(entries.map((e) => e.entryId)).toEqual([s.other]);
    expect((await t.call('GET', `/v1/entries/${s.sibling}`)).status).toBe(410);
    await append(s.A, 'Booked a table for two at the harbour.');
  });
});

/**
 * The probe as an auditor tried it, end to end on PostgreSQL and a real MinIO:
 * - a missed copy (a secret quoted verbatim inside another subject's long minutes,
 *   among decoys sharing its words) now leaves the erasure incomplete naming the
 *   minutes, and completed once they are redacted;
 * - a false alarm (two subjects' records sharing only template words) now completes;
 * - a dismissal (POST /v1/erasures/{id}/dismissals), once a second principal approved it,
 *   completes an erasure stranded by a match a person rules false, and the ruling is in
 *   the verified certificate and the report; it is refused (409) while the erasure runs,
 *   for a record the probe did not name and for the erased subject's own record, and 400
 *   for a malformed body (test/erasure/dismissal-approval.test.ts: who may approve).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyCertificate } from '../../src/crypto/certificate.js';
import type { ErasureView } from '../../src/erasure/view.js';
import { expectProblem, ok } from '../support/http.js';
import { minioEnv, openTestApp, type TestApp } from '../support/vault.js';

const tag = () => randomBytes(5).toString('hex');
const FILLER = [
  'project',
  'timeline',
  'budget',
  'review',
  'team',
  'agreed',
  'quarter',
  'item',
  'discussed',
  'owner',
  'vendor',
  'milestone',
  'slides',
  'hiring',
  'roadmap',
];
const filler = (n: number, seed: number) => Array.from({ length: n }, (_, i) => FILLER[(i * 7 + seed) % FILLER.length]).join(' ');

describe('the reconstruction probe end to end (PostgreSQL + MinIO)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await openTestApp({ extraEnv: minioEnv('lethe-probe'), app: { erasureWorker: false } });
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  const append = async (subject: string, text: string) => (await t.app.log.append(subject, { text }, 'writer')).entryId;
  /** Everyday notes of forty other subjects: the store the weights are measured in. */
  const background = async () => {
    const people = ['Maya', 'Tom', 'Ines', 'Raj', 'Lena', 'Omar', 'Sofia', 'Ken'];
    const things = ['film', 'song', 'book', 'colour', 'dish', 'city', 'sport', 'season'];
    const verbs = ['said', 'mentioned', 'told me', 'wrote', 'explained'];
    for (let i = 0; i < 40; i++) {
      const who = people[i % people.length]!;
      await append(`user:bg-${i}-${tag()}`, `${who} ${verbs[i % verbs.length]} that the favourite ${things[i % things.length]} of the team changed this week.`);
      await append(`user:bg-${i}-${tag()}`, `Reminder: ${who} said the meeting moved to room ${100 + i}.`);
    }
  };
  const erase = async (subject: string) => {
    const { erasureId } = await t.app.erasures.request({ subject }, 'eraser');
    return t.app.erasures.settle(erasureId);
  };

  it("a secret quoted verbatim in another subject's long minutes: incomplete naming the minutes, completed after a redaction", async () => {
    const W = `user:w-${tag()}`;
    const M = `user:minutes-${tag()}`;
    const N = `user:notes-${tag()}`;
    const code = `${Math.floor(Math.random() * 9000) + 1000}`;
    const secret = `Walter keeps the vault combination ${code} written inside his grandmother's cookbook.`;
    await append(W, secret);
    const minutes = await append(M, `Minutes of the planning meeting. ${filler(300, 1)}. Quoted from the chat: ${secret} ${filler(300, 4)}.`);
    for (let i = 0; i < 10; i++) await append(N, `Note ${i}: the cookbook club meets Thursday; bring your grandmother's recipes and the vault of patience.`);
    const view = await erase(W);
    expect(view.status).toBe('incomplete');
    expect(view.probe.matches.map((m) => m.id)).toContain(minutes);
    expect(view.probe.recovered).toBeGreaterThan(view.probe.threshold);
    // the minutes came from the shingle index, and the index covered every stored record
    expect(view.probe.examined!.shingleIndex).toBeGreaterThanOrEqual(1);
    expect(view.probe.coverage!.indexed).toBe(view.probe.coverage!.stored);
    expect(view.residuals.find((r) => r.kind === 'cross-subject')?.detail).toContain(minutes);

    await t.app.erasures.redact(view.erasureId, [minutes], 'eraser');
    const after = await t.app.erasures.settle(view.erasureId);
    expect(after.status).toBe('completed');
    expect(after.probe.matches).toEqual([]);
    expect(verifyCertificate(after.certificate, await t.app.certificateKeys.publicKeys()).valid).toBe(true);
  });

  it('records sharing only template words with the erased subject are not accused: the erasure completes', async () => {
    // The weights are the store's own document frequencies: in a store of a dozen records every word
    // looks rare. An agent's memory holds other people's everyday notes too — these are they.
    await background();
    const A = `user:tea-${tag()}`;
    const B = `user:game-${tag()}`;
    const a1 = await append(A, `Alice said her favourite tea is ${tag().toUpperCase()}.`);
    const b1 = await append(B, `Bob said his favourite game is ${tag().toUpperCase()}.`);
    const summary = await t.app.artifacts.write({ kind: 'summary', text: 'Alice and Bob said what their favourites are.', sources: [a1, b1] }, 'writer');
    const view = await erase(A);
    expect(view.class).toBe('B');
    const regenerated = await t.app.artifacts.get(summary.artifactId);
    expect(regenerated.version).toBe(2);
    expect(regenerated.text).not.toContain('Alice');
    expect(view.probe.matches).toEqual([]);
    expect(view.probe.recovered).toBe(0);
    expect(view.status).toBe('completed');
  });

  describe('dismissals', () => {
    let stranded: ErasureView;
    let notice = '';
    let ownEntry = '';
    let unrelated = '';

    beforeAll(async () => {
      const A = `user:clinic-${tag()}`;
      const P = `ctx:noticeboard-${tag()}`;
      const place = `Halden${tag()}`;
      ownEntry = await append(A, `Appointment with Dr. Okonkwo at the ${place} clinic on 14 March about my knee.`);
      // a public notice that happens to share the doctor, the clinic and the date: the probe names it, a person rules it carries nothing of A
      notice = await append(P, `Public notice: Dr. Okonkwo at the ${place} clinic is closed on 14 March for renovation.`);
      unrelated = await append(P, 'The cafeteria serves soup on Fridays.');
      stranded = await erase(A);
    });

    const dismiss = (erasureId: string, body: unknown) => t.call('POST', `/v1/erasures/${erasureId}/dismissals`, { role: 'eraser', body });

    it('the shared notice strands the erasure incomplete, naming it', () => {
      expect(stranded.status).toBe('incomplete');
      expect(stranded.probe.matches.map((m) => m.id)).toEqual([notice]);
    });

    it("400 for a malformed body, 409 for a record the probe did not name and for the erased subject's own record; nothing changes", async () => {
      await expectProblem(dismiss(stranded.erasureId, { matches: [] }), 400, 'validation_failed');
      await expectProblem(dismiss(stranded.erasureId, { matches: [{ id: notice }] }), 400, 'validation_failed');
      await expectProblem(dismiss(stranded.erasureId, { matches: [{ id: notice, reason: '   ' }] }), 400, 'validation_failed');
      await expectProblem(dismiss(stranded.erasureId, { matches: [{ id: notice, reason: 'x'.repeat(501) }] }), 400, 'validation_failed');
      await expectProblem(
        dismiss(stranded.erasureId, {
          matches: [
            { id: notice, reason: 'a' },
            { id: notice, reason: 'b' },
          ],
        }),
        400,
        'validation_failed',
      );
      const unnamed = await expectProblem(dismiss(stranded.erasureId, { matches: [{ id: unrelated, reason: 'not it' }] }), 409, 'conflict');
      expect(unnamed.detail).toMatch(/not named/);
      const own = await expectProblem(dismiss(stranded.erasureId, { matches: [{ id: ownEntry, reason: 'mine' }] }), 409, 'conflict');
      expect(own.detail).toMatch(/own records/);
      await expectProblem(dismiss(`ers_${'A'.repeat(22)}`, { matches: [{ id: notice, reason: 'x' }] }), 404, 'not_found');
      expect((await t.app.erasures.get(stranded.erasureId)).status).toBe('incomplete');
    });

    it('a writer may not dismiss (403)', async () => {
      const reply = await t.call('POST', `/v1/erasures/${stranded.erasureId}/dismissals`, { role: 'writer', body: { matches: [{ id: notice, reason: 'x' }] } });
      expect(reply.status).toBe(403);
    });

    it('an approved dismissal completes the erasure; the ruling is signed into the certificate and shown in the report', async () => {
      const reason = 'Public clinic closure notice: it names the clinic and date, not the patient.';
      const { dismissalId } = await ok<{ dismissalId: string }>(dismiss(stranded.erasureId, { matches: [{ id: notice, reason }] }), 201);
      expect((await t.app.erasures.get(stranded.erasureId)).status).toBe('incomplete');
      expect(await ok(t.call('POST', `/v1/erasures/${stranded.erasureId}/dismissals/${dismissalId}/approve`, { role: 'approver' }), 202)).toEqual({
        erasureId: stranded.erasureId,
        status: 'running',
        dismissalId,
      });
      // while it runs again: 409
      await expectProblem(dismiss(stranded.erasureId, { matches: [{ id: notice, reason }] }), 409, 'conflict');
      const after = await t.app.erasures.settle(stranded.erasureId);
      expect(after.status).toBe('completed');
      expect(after.probe.matches).toEqual([]);
      expect(after.probe.recovered).toBe(0);
      const ruled = stranded.probe.matches[0]!.score;
      expect(after.probe.dismissed).toEqual([
        {
          id: notice,
          dismissalId,
          status: 'approved',
          role: 'eraser',
          proposedBy: expect.stringMatching(/^prn_/),
          at: expect.any(String),
          reason,
          ruledScore: ruled,
          keyId: expect.any(String),
          approval: { role: 'approver', principal: expect.stringMatching(/^prn_/), at: expect.any(String) },
          score: ruled,
        },
      ]);
      expect(verifyCertificate(after.certificate, await t.app.certificateKeys.publicKeys()).valid).toBe(true);
      expect(after.certificate!.payload.probe).toMatchObject({ dismissed: [{ id: notice, role: 'eraser', reason }] });
      // the notice itself is untouched: a dismissal is a ruling, not a redaction
      expect((await t.app.log.get(notice)).text).toContain('Public notice');
      const report = await t.call('GET', `/v1/erasures/${stranded.erasureId}/report`, { role: 'eraser' });
      const html = await report.text();
      expect(html).toContain('Dismissed by a person');
      expect(html).toContain(notice);
      expect(html).toContain('Public clinic closure notice');
    });
  });
});

/**
 * Dismissals two people own (issue 29, M2), on PostgreSQL over the HTTP app:
 * - a verbatim copy (score 1.0) cannot be dismissed by anyone: 422 `near_copy`, the
 *   erasure stays incomplete, the copy can only be redacted;
 * - a dismissal by one eraser token is a proposal: the erasure stays incomplete until
 *   a second principal with a distinct token (approver or admin) approves it; the
 *   proposer and the requester cannot approve their own (403);
 * - an erasure completed by an approved ruling says so (view, certificate, residual,
 *   report page 1) and keeps its fingerprints, so a revocation re-opens it and the
 *   probe finds the record again;
 * - a redaction takes only records the last probe named (422 `not_a_match`), unless an
 *   admin overrides with a reason (audited).
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyCertificate } from '../../src/crypto/certificate.js';
import { queryRows } from '../../src/db/client.js';
import type { ErasureView } from '../../src/erasure/view.js';
import { expectProblem, ok } from '../support/http.js';
import { openTestApp, type TestApp } from '../support/vault.js';

const tag = () => randomBytes(5).toString('hex');

describe('dismissals two people own', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await openTestApp({ app: { erasureWorker: false } });
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  const append = async (subject: string, text: string) => (await t.app.log.append(subject, { text }, 'writer')).entryId;
  const view = (erasureId: string) => ok<ErasureView>(t.call('GET', `/v1/erasures/${erasureId}`, { role: 'eraser' }), 200);
  const audited = async (action: string) =>
    (await queryRows<{ actor: string; detail: string }>(t.app.db.db, sql`select actor, detail from audit_log where action = ${action} order by seq`)).map(
      (r) => ({
        actor: r.actor,
        detail: JSON.parse(r.detail) as Record<string, unknown>,
      }),
    );

  describe('a verbatim copy', () => {
    let erasureId = '';
    let copy = '';

    beforeAll(async () => {
      const W = `user:walter-${tag()}`;
      const M = `user:minutes-${tag()}`;
      const secret = `Walter keeps the vault combination ${tag()} written inside his grandmother's cookbook on the top shelf.`;
      await append(W, secret);
      copy = await append(M, secret);
      const requested = await ok<{ erasureId: string }>(t.call('POST', '/v1/erasures', { role: 'eraser', body: { subject: W } }), 202);
      erasureId = requested.erasureId;
      await t.app.erasures.settle(erasureId);
    });

    it('is named with score 1 and leaves the erasure incomplete', async () => {
      const v = await view(erasureId);
      expect(v.status).toBe('incomplete');
      expect(v.probe.matches).toEqual([expect.objectContaining({ id: copy, score: 1, nearCopy: true })]);
    });

    it('cannot be dismissed by an eraser token: 422 near_copy, the erasure stays incomplete and the copy readable', async () => {
      const refused = await expectProblem(
        t.call('POST', `/v1/erasures/${erasureId}/dismissals`, { role: 'eraser', body: { matches: [{ id: copy, reason: 'it is a public text' }] } }),
        422,
        'near_copy',
      );
      expect(refused.detail).toMatch(/redact/);
      await t.app.erasures.settle(erasureId);
      const v = await view(erasureId);
      expect(v.status).toBe('incomplete');
      expect(v.probe.recovered).toBeGreaterThan(v.probe.threshold);
      expect((await t.app.log.get(copy)).text).toContain('vault combination');
    });

    it('nor by an admin token', async () => {
      await expectProblem(
        t.call('POST', `/v1/erasures/${erasureId}/dismissals`, { role: 'admin', body: { matches: [{ id: copy, reason: 'it is a public text' }] } }),
        422,
        'near_copy',
      );
    });
  });

  describe('a shared notice, ruled on by two people', () => {
    let erasureId = '';
    let notice = '';
    let unrelated = '';
    let dismissalId = '';
    const reason = 'Public clinic closure notice: it names the clinic and date, not the patient.';
    const approve = (o: { role: 'eraser' | 'approver' | 'admin'; second?: boolean }) =>
      t.call('POST', `/v1/erasures/${erasureId}/dismissals/${dismissalId}/approve`, { role: o.role, ...(o.second ? { second: true } : {}) });

    beforeAll(async () => {
      const A = `user:clinic-${tag()}`;
      const P = `ctx:noticeboard-${tag()}`;
      const place = `Halden${tag()}`;
      await append(A, `Appointment with Dr. Okonkwo at the ${place} clinic on 14 March about my knee.`);
      notice = await append(P, `Public notice: Dr. Okonkwo at the ${place} clinic is closed on 14 March for renovation.`);
      unrelated = await append(`user:other-${tag()}`, 'The cafeteria serves soup on Fridays.');
      // requested by the first admin token: the requester may never approve a dismissal of it
      erasureId = (await ok<{ erasureId: string }>(t.call('POST', '/v1/erasures', { role: 'admin', body: { subject: A } }), 202)).erasureId;
      await t.app.erasures.settle(erasureId);
    });

    it('the notice strands the erasure incomplete; it is no near copy', async () => {
      const v = await view(erasureId);
      expect(v.status).toBe('incomplete');
      expect(v.probe.matches).toEqual([{ id: notice, tier: 'log', score: expect.any(Number) }]);
    });

    it("one token's dismissal is a proposal: 201, audited, and the erasure stays incomplete", async () => {
      const proposed = await ok<{ erasureId: string; status: string; dismissalId: string }>(
        t.call('POST', `/v1/erasures/${erasureId}/dismissals`, { role: 'admin', second: true, body: { matches: [{ id: notice, reason }] } }),
        201,
      );
      expect(proposed).toEqual({ erasureId, status: 'incomplete', dismissalId: expect.stringMatching(/^dsm_[A-Za-z0-9_-]{22}$/) });
      dismissalId = proposed.dismissalId;
      await t.app.erasures.settle(erasureId);
      const v = await view(erasureId);
      expect(v.status).toBe('incomplete');
      expect(v.probe.matches.map((m) => m.id)).toEqual([notice]);
      expect(v.probe.recovered).toBeGreaterThan(v.probe.threshold);
      expect(v.readableByRuling).toBeUndefined();
      expect(v.dismissals).toEqual([
        expect.objectContaining({ id: notice, dismissalId, status: 'proposed', role: 'admin', proposedBy: expect.stringMatching(/^prn_/), reason }),
      ]);
      // a second proposal of the same record while this one stands: 409
      await expectProblem(
        t.call('POST', `/v1/erasures/${erasureId}/dismissals`, { role: 'eraser', body: { matches: [{ id: notice, reason }] } }),
        409,
        'conflict',
      );
      expect(await audited('erasure.dismissal.propose')).toEqual([{ actor: 'admin', detail: expect.objectContaining({ erasureId, dismissalId, records: 1 }) }]);
    });

    it('is approved by no eraser, nor by the principal that requested the erasure, nor by the one that proposed it (403)', async () => {
      await expectProblem(approve({ role: 'eraser' }), 403, 'forbidden');
      await expectProblem(approve({ role: 'eraser', second: true }), 403, 'forbidden');
      expect((await expectProblem(approve({ role: 'admin' }), 403, 'forbidden')).detail).toMatch(/requested the erasure/);
      expect((await expectProblem(approve({ role: 'admin', second: true }), 403, 'forbidden')).detail).toMatch(/proposed/);
      await expectProblem(t.call('POST', `/v1/erasures/${erasureId}/dismissals/dsm_${'A'.repeat(22)}/approve`, { role: 'approver' }), 404, 'not_found');
      // in process there is no token, so no principal: no approval
      await expect(t.app.erasures.approveDismissal(erasureId, dismissalId, { role: 'approver' })).rejects.toMatchObject({ code: 'forbidden' });
      expect((await view(erasureId)).status).toBe('incomplete');
      expect(await audited('erasure.dismissal.approve')).toEqual([]);
    });

    it("a second principal's approval completes it on a ruling, and the view, certificate, residuals and report page 1 say so", async () => {
      expect(await ok(approve({ role: 'approver' }), 202)).toEqual({ erasureId, status: 'running', dismissalId });
      // approved once: 409 after
      await t.app.erasures.settle(erasureId);
      await expectProblem(approve({ role: 'approver', second: true }), 409, 'conflict');
      const v = await view(erasureId);
      expect(v.status).toBe('completed');
      expect(v.probe.matches).toEqual([]);
      expect(v.readableByRuling).toEqual([notice]);
      expect(v.dismissals).toEqual([
        expect.objectContaining({
          dismissalId,
          status: 'approved',
          approval: { role: 'approver', principal: expect.stringMatching(/^prn_/), at: expect.any(String) },
        }),
      ]);
      expect(v.residuals.find((r) => r.kind === 'dismissed-content')?.detail).toContain(notice);
      // the fingerprints are kept while the dismissed match scores above the threshold
      expect(v.residuals.map((r) => r.kind)).toContain('fingerprints');
      expect(verifyCertificate(v.certificate, await t.app.certificateKeys.publicKeys()).valid).toBe(true);
      expect(v.certificate!.payload.readableByRuling).toEqual([notice]);
      expect(v.certificate!.payload.probe).toMatchObject({ dismissed: [{ id: notice, dismissalId, approval: { role: 'approver' } }] });
      const html = await (await t.call('GET', `/v1/erasures/${erasureId}/report`, { role: 'approver' })).text();
      const pageOne = html.slice(html.indexOf('id="page-one"'), html.indexOf('id="timeline"'));
      expect(pageOne).not.toContain('found nothing recoverable');
      expect(pageOne).toContain('Completed on a ruling');
      expect(pageOne).toContain(notice);
      expect(await audited('erasure.dismissal.approve')).toEqual([{ actor: 'approver', detail: expect.objectContaining({ erasureId, dismissalId }) }]);
      // the notice stays readable: a ruling is not a redaction
      expect((await t.app.log.get(notice)).text).toContain('Public notice');
    });

    it('a redaction of a record the last probe did not name is refused (422 not_a_match) and that record stays readable', async () => {
      const refused = await expectProblem(
        t.call('POST', `/v1/erasures/${erasureId}/redactions`, { role: 'eraser', body: { ids: [unrelated] } }),
        422,
        'not_a_match',
      );
      expect(refused.detail).toContain(unrelated);
      // an override is an admin's, with a reason
      await expectProblem(
        t.call('POST', `/v1/erasures/${erasureId}/redactions`, { role: 'eraser', body: { ids: [unrelated], override: { reason: 'asked by the DPO' } } }),
        403,
        'forbidden',
      );
      await expectProblem(
        t.call('POST', `/v1/erasures/${erasureId}/redactions`, { role: 'admin', body: { ids: [unrelated], override: {} } }),
        400,
        'validation_failed',
      );
      expect((await view(erasureId)).status).toBe('completed');
      expect((await t.app.log.get(unrelated)).text).toContain('cafeteria');
    });

    it('a revocation after completion re-opens the erasure, and the probe finds the notice again on the kept fingerprints', async () => {
      expect(
        await ok(
          t.call('POST', `/v1/erasures/${erasureId}/dismissals/${dismissalId}/revoke`, {
            role: 'approver',
            body: { reason: 'the notice names the date of the appointment' },
          }),
          202,
        ),
      ).toEqual({
        erasureId,
        status: 'running',
        dismissalId,
      });
      await t.app.erasures.settle(erasureId);
      const v = await view(erasureId);
      expect(v.status).toBe('incomplete');
      expect(v.probe.matches.map((m) => m.id)).toEqual([notice]);
      expect(v.readableByRuling).toBeUndefined();
      expect(v.dismissals).toEqual([expect.objectContaining({ dismissalId, status: 'revoked', revocation: expect.objectContaining({ role: 'approver' }) })]);
      expect(await audited('erasure.dismissal.revoke')).toEqual([{ actor: 'approver', detail: expect.objectContaining({ erasureId, dismissalId }) }]);
      await expectProblem(t.call('POST', `/v1/erasures/${erasureId}/dismissals/${dismissalId}/revoke`, { role: 'approver' }), 409, 'conflict');
    });

    it('an admin may redact a record the probe did not name with a reason, audited', async () => {
      expect(
        await ok(
          t.call('POST', `/v1/erasures/${erasureId}/redactions`, {
            role: 'admin',
            body: { ids: [notice, unrelated], override: { reason: 'ordered by the DPO, ticket 7' } },
          }),
          202,
        ),
      ).toMatchObject({ erasureId });
      const v = await t.app.erasures.settle(erasureId);
      expect(v.status).toBe('completed');
      expect(await audited('erasure.redaction.override')).toEqual([
        { actor: 'admin', detail: expect.objectContaining({ erasureId, records: 2, unnamed: 1, reason: 'ordered by the DPO, ticket 7' }) },
      ]);
    });
  });
});

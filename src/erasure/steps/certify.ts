/**
 * certify: the status (completed only when every step succeeded, the probe recovered
 * no more than the threshold, and the class is A or B, or C with a stated unlearning
 * bound), the residual ledger, and the signed certificate — provisional until every
 * epoch that wrapped a destroyed key is retired. The worker commits it; the commit
 * is guarded by the claim, so a re-run signs again and only one commit lands.
 */
import { certificatePayload, wrappedEpochs } from '../certificates.js';
import { assertCertificateTransition, type ErasureClass, type ErasureStatus } from '../machine.js';
import { unlearningBoundOf } from '../request.js';
import { forgottenEntries } from '../state.js';
import { residuals } from '../residuals.js';
import { inEffect, readableByRuling } from '../view.js';
import type { AuditEvent } from '../../vault/audit.js';
import { destructionAudited, probeAudited } from '../probe-audit.js';
import { probe as probeStep } from './probe.js';
import { Park, type Step } from './step.js';

/** How long a refused certification parks before it checks again. */
const REFUSED_PARK_MS = 60_000;

export const certify: Step = {
  name: 'certify',
  async run(ctx) {
    const { res, row, state } = ctx;
    // sign only what the audit chain vouches for: the key destroyed, the probe's result as it found it (probe-audit.ts)
    if (state.keyId && !(await destructionAudited(res, res.records.db, state.keyId))) {
      res.onRefusal?.('steps');
      res.logger.error(
        { erasureId: row.erasureId },
        'refusing to certify: the audit chain holds no destruction of the key the erasure names; its row was edited',
      );
      return new Park(
        new Date(Date.now() + REFUSED_PARK_MS),
        `refusing to certify: the audit chain holds no destruction of key ${state.keyId}; the erasure's row was edited (run lethe audit verify)`,
      );
    }
    let probed: readonly AuditEvent[] = [];
    if (!(await probeAudited(res, res.records.db, row.erasureId, state.probe))) {
      // edited, or the probe skipped by moving the step: probe now, and sign what it finds
      if (state.probe)
        res.logger.error(
          { erasureId: row.erasureId },
          "the erasure's recorded probe result is not the one the audit chain holds: probing again before certifying",
        );
      const again = await probeStep.run(ctx);
      if (again instanceof Park) return again;
      probed = again.audit ?? [];
    }
    const cls: ErasureClass = row.class ?? 'A';
    const probe = state.probe ?? { recovered: 1, threshold: res.probeThreshold, matches: [] };
    const unlearning = unlearningBoundOf(row);
    // entries the probe could not see (still queued for indexing past its wait) leave the erasure incomplete
    const ok = probe.recovered <= probe.threshold && (cls !== 'C' || unlearning !== null) && !(probe.unindexed && probe.unindexed > 0);
    const status: ErasureStatus = ok ? 'completed' : 'incomplete';
    // the fingerprints stay (sealed) while a redaction could still need them: a match, or a dismissed match above the
    // threshold (a revocation of its ruling, or a redaction, must be able to probe again)
    const ruledAbove = (probe.dismissed ?? []).some((d) => inEffect(d) && !d.lapsed && (d.score ?? 0) > probe.threshold);
    const destroySealKey = probe.matches.length === 0 && !ruledAbove;
    const ruled = readableByRuling(probe);
    state.residuals = await residuals(res, {
      state,
      cls,
      probe,
      unlearning,
      fingerprintsKept: !destroySealKey,
      sealKeyId: row.sealKeyId,
      forgotten: forgottenEntries(row)?.length,
    });
    const held = await wrappedEpochs(res, state, destroySealKey ? null : row.sealKeyId);
    state.wrappedEpochs = held.epochs;
    const certificateState = held.allRetired ? 'final' : 'provisional';
    assertCertificateTransition('issue', row.certificateState, certificateState);
    const now = new Date().toISOString();
    state.steps.certify = { status: 'done', startedAt: state.steps.certify?.startedAt ?? now, finishedAt: now };
    const certificate = await res.signer.sign(certificatePayload(row, state, { cls, status, certificateState, probeThreshold: res.probeThreshold }, held));
    return {
      detail: `${status}${ruled.length ? ` with ${ruled.length} record(s) kept readable by an approved ruling` : ''}; certificate ${certificateState} (${certificateState === 'final' ? 'every epoch that wrapped a destroyed key is retired' : `until epoch(s) ${held.epochs.join(', ')} retire`})`,
      final: { status, certificate, certificateState, destroySealKey },
      audit: probed,
    };
  },
};

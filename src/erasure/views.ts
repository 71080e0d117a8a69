/**
 * An erasure as the API answers it (view.ts has the schema): its steps, residuals,
 * probe, certificate, graph and rulings from the row and its state; a failed one with
 * what it left behind; the certificate document alone.
 */
import type { Certificate } from '../crypto/index.js';
import type { ErasureRow } from '../db/schema.js';
import { LetheError } from '../errors.js';
import { hashHex } from '../vault/subjects.js';
import { leftBehind } from './left.js';
import { isOpen, STEP_NAMES } from './machine.js';
import { requestContextOf } from './request.js';
import type { ErasureResources } from './resources.js';
import { failedStep } from './resume.js';
import { forgottenEntries, parseState } from './state.js';
import { CertificateViewSchema, type ErasureView, readableByRuling, type StepView } from './view.js';

/** The view of a row, with what a failed erasure left behind. */
export async function fullView(res: ErasureResources, row: ErasureRow): Promise<ErasureView> {
  const view = viewOf(row, res.probeThreshold);
  if (row.status !== 'failed') return view;
  const state = parseState(row.state);
  return { ...view, left: { ...(await leftBehind(res, row, state)), failedStep: failedStep(state) } };
}

/**
 * The signed certificate document alone, as stored: conflict while it has none yet
 * (it is signed when the erasure finishes, and a failed erasure has none).
 */
export function certificateOf(row: ErasureRow): Certificate {
  const certificate = CertificateViewSchema.nullable().parse(row.certificate);
  if (!certificate) {
    const why =
      row.status === 'failed'
        ? 'the erasure failed, and a failed erasure is not certified'
        : `the erasure is ${row.status}; its certificate is signed when it finishes`;
    throw new LetheError('conflict', `erasure ${row.erasureId} has no certificate yet: ${why}`);
  }
  return {
    payload: certificate.payload as Certificate['payload'],
    signature: certificate.signature,
    publicKey: certificate.publicKey,
    algorithm: certificate.algorithm,
  };
}

export function viewOf(row: ErasureRow, probeThreshold: number): ErasureView {
  const state = parseState(row.state);
  const steps: StepView[] = [];
  for (const name of STEP_NAMES) {
    const s = state.steps[name];
    if (name === 'redact' && !s) continue;
    steps.push({
      name,
      status: s?.status ?? 'pending',
      ...(s?.detail ? { detail: s.detail } : {}),
      ...(s?.startedAt ? { startedAt: s.startedAt } : {}),
      ...(s?.finishedAt ? { finishedAt: s.finishedAt } : {}),
    });
  }
  const certificate = CertificateViewSchema.nullable().parse(row.certificate);
  const request = requestContextOf(row);
  // what a finished erasure keeps readable on two people's word (the last probe's approved rulings)
  const ruled = isOpen(row.status) ? [] : readableByRuling(state.probe);
  return {
    erasureId: row.erasureId,
    status: row.status,
    ...(row.class ? { class: row.class } : {}),
    subjectHash: hashHex(row.subjectHash),
    scope: row.scope,
    ...(row.scope === 'records' ? { entryIds: [...(forgottenEntries(row) ?? [])] } : {}),
    ...(row.successorId ? { supersededBy: row.successorId } : {}),
    ...(row.legalBasis ? { legalBasis: row.legalBasis } : {}),
    ...(request ? { request } : {}),
    createdAt: row.createdAt.toISOString(),
    ...(row.finishedAt ? { finishedAt: row.finishedAt.toISOString() } : {}),
    steps,
    residuals: state.residuals ?? [],
    probe: state.probe ?? { recovered: 0, threshold: probeThreshold, matches: [] },
    ...(certificate
      ? { certificate: { payload: certificate.payload, signature: certificate.signature, publicKey: certificate.publicKey, algorithm: certificate.algorithm } }
      : {}),
    ...(row.certificateState ? { certificateState: row.certificateState } : {}),
    graph: state.graph ?? { nodes: [], edges: [] },
    ...(state.dismissals?.length ? { dismissals: state.dismissals } : {}),
    ...(ruled.length ? { readableByRuling: ruled } : {}),
    ...(row.attempts > 0
      ? {
          retry: {
            attempts: row.attempts,
            ...(row.lastError ? { lastError: row.lastError } : {}),
            ...(isOpen(row.status) ? { nextAttemptAt: row.notBefore.toISOString() } : {}),
          },
        }
      : {}),
  };
}

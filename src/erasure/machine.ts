/**
 * The erasure state machine as tables: the steps and the step that follows each,
 * the statuses and the moves between them, the certificate states. What the steps
 * record is in state.ts. An impossible move is an `illegal_transition` error, not an `if`.
 * Pure: no I/O (the CLI and clients import it).
 */
import { LetheError } from '../errors.js';

/** The steps of docs/architecture.md ("Erasure"), in order; `redact` re-enters the machine after a redaction order. */
export const STEP_NAMES = ['classify', 'fingerprint', 'fence', 'destroy', 'drain_leases', 'cascade', 'propagate', 'probe', 'certify', 'redact'] as const;
export type StepName = (typeof STEP_NAMES)[number];

/** Each step and the step that follows it. `certify` ends the machine; `redact` re-enters it. */
export const TRANSITIONS: Readonly<Record<StepName, StepName | null>> = {
  classify: 'fingerprint',
  fingerprint: 'fence',
  fence: 'destroy',
  destroy: 'drain_leases',
  drain_leases: 'cascade',
  cascade: 'propagate',
  propagate: 'probe',
  probe: 'certify',
  certify: null,
  redact: 'propagate',
};

/** Steps an erasure's first run goes through (redact only after a redaction order). */
export const FIRST_RUN: readonly StepName[] = STEP_NAMES.filter((s) => s !== 'redact');

/** The steps a redaction order runs again, in order. */
export const REDACTION_RUN: readonly StepName[] = ['redact', 'propagate', 'probe', 'certify'];

/** The steps an approved or revoked dismissal of probe matches runs again, in order. */
export const DISMISSAL_RUN: readonly StepName[] = ['probe', 'certify'];

export const STEP_STATUSES = ['pending', 'running', 'done', 'failed', 'skipped'] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];

export const ERASURE_STATUSES = ['pending', 'running', 'completed', 'incomplete', 'failed'] as const;
export type ErasureStatus = (typeof ERASURE_STATUSES)[number];

/**
 * pending → running when a replica first claims it; running stays running from step
 * to step, and ends completed, incomplete or failed; a redaction order re-opens a
 * completed or incomplete erasure, and so does a dismissal's approval or revocation
 * (a proposal alone changes nothing).
 * failed → running only by a resume (`POST /v1/erasures/{id}/resume`): a failed
 * erasure can leave its subject fenced (no lease, no new key) with the key not yet
 * destroyed and the data still readable, so once the cause is fixed it must be
 * possible to take it up again from the step that failed. (A new erasure of the
 * subject is the other way forward; a resume is refused once one exists.)
 */
export const STATUS_TRANSITIONS: Readonly<Record<ErasureStatus, readonly ErasureStatus[]>> = {
  pending: ['running'],
  running: ['running', 'completed', 'incomplete', 'failed'],
  completed: ['running'],
  incomplete: ['running'],
  failed: ['running'],
};

export const OPEN_STATUSES: readonly ErasureStatus[] = ['pending', 'running'];
export const TERMINAL_STATUSES: readonly ErasureStatus[] = ['completed', 'incomplete', 'failed'];

export function isOpen(status: ErasureStatus): boolean {
  return OPEN_STATUSES.includes(status);
}

export function assertStatusTransition(from: ErasureStatus, to: ErasureStatus): void {
  if (!STATUS_TRANSITIONS[from].includes(to)) throw new LetheError('illegal_transition', `an erasure cannot go from ${from} to ${to}`);
}

export const CERTIFICATE_STATES = ['provisional', 'final'] as const;
export type CertificateState = (typeof CERTIFICATE_STATES)[number];

/**
 * How a certificate's state moves: `certify` issues one (provisional, or final when
 * every epoch that wrapped a destroyed key is already retired) — again after a
 * redaction, which destroys keys under the current epoch; the finalizer only turns
 * a provisional certificate final.
 */
export const CERTIFICATE_TRANSITIONS: Readonly<
  Record<'issue' | 'finalize', { readonly from: ReadonlyArray<CertificateState | null>; readonly to: readonly CertificateState[] }>
> = {
  issue: { from: [null, 'provisional', 'final'], to: ['provisional', 'final'] },
  finalize: { from: ['provisional'], to: ['final'] },
};

export function assertCertificateTransition(event: 'issue' | 'finalize', from: CertificateState | null, to: CertificateState): void {
  const t = CERTIFICATE_TRANSITIONS[event];
  if (!t.from.includes(from) || !t.to.includes(to))
    throw new LetheError('illegal_transition', `a certificate cannot go from ${from ?? 'none'} to ${to} by ${event}`);
}

/** Why the finalizer refused to sign a certificate final (certificate-audit.ts). */
export type RefusalReason = 'signature' | 'audit' | 'digest' | 'outcome' | 'steps';

export const ERASURE_CLASSES = ['A', 'B', 'C'] as const;
export type ErasureClass = (typeof ERASURE_CLASSES)[number];

/** The places an erasure reaches (src/erasable.ts: each module's part of an erasure). */
export { ERASABLE_NAMES as TIER_NAMES, type ErasableName as TierName } from '../erasable.js';

/** `erasures.step` as read from the database: a step name, or null once the erasure is finished. */
export function parseStep(value: string | null): StepName | null {
  if (value === null) return null;
  if (!(STEP_NAMES as readonly string[]).includes(value)) throw new LetheError('internal', `an erasure is at an unknown step ${JSON.stringify(value)}`);
  return value as StepName;
}

/** A tier's hard failure: it reported nothing removed (or something left) for a subject provenance says contributed (never retried). */
export class TierFailure extends Error {}

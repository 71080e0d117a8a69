/**
 * What the audit chain holds of an erasure's certificates, and the check the finalizer
 * makes before it signs one final.
 *
 * Every certificate the vault signs, provisional or final, is recorded in the
 * transaction that stores it by an `erasure.certificate.sign` audit row (its `key_id`
 * is the erasure id, so the `(key_id, at)` index finds it): the digest of the signed
 * bytes (`certificateDigest`) and the outcome the certificate states — status,
 * certificate state, recovered fraction, match count, whether the fingerprints were
 * kept, the signing key. Audit rows are MAC'd under the root key's audit subkey:
 * someone with write access to the database alone can edit the erasure's row and the
 * certificate stored in it, not this record of them.
 *
 * Before it signs a certificate final, the finalizer requires that the stored
 * certificate verifies under the vault's own keys, is the erasure's, is the one the
 * newest intact sign row recorded (digest), and that the row's recorded outcome, the
 * signed payload and the audited outcome all agree — the row's residuals too, which the
 * final payload carries, must be exactly those the checked certificate signed. Anything else is a refusal: the
 * certificate stays as it was, and the refusal is logged, counted, audited
 * (`erasure.certificate.refuse`) and shown on the erasure (a `certificate-refused`
 * residual). A certificate signed before sign rows existed has none: the signature and
 * the agreement with the row are all that vouch for it.
 */
import { hexToBytes } from '@noble/hashes/utils.js';
import { canonicalJson, type Certificate, certificateDigest, constantTimeEqual, type Json, type TrustedKey, verifyCertificate } from '../crypto/index.js';
import type { Executor } from '../db/client.js';
import type { ErasureRow } from '../db/schema.js';
import type { AuditEvent } from '../vault/audit.js';
import type { RefusalReason } from './machine.js';
import type { ErasureResources } from './resources.js';
import type { ErasureState } from './state.js';
import type { Residual } from './view.js';

/** The residual kind a refused finalization leaves on the erasure. */
export const CERTIFICATE_REFUSED = 'certificate-refused';

/** Why a certificate was not signed final: a label for the metric (the detail says more). */

export interface Refusal {
  readonly reason: RefusalReason;
  /** For operators: ids, counts and states, never content. */
  readonly detail: string;
}

/** The outcome a certificate states, as the sign row records it and the finalizer compares it. */
interface Outcome {
  readonly status: unknown;
  readonly certificateState: unknown;
  readonly recovered: unknown;
  readonly matches: unknown;
  readonly fingerprintsKept: unknown;
}

const OUTCOME_FIELDS = ['status', 'certificateState', 'recovered', 'matches', 'fingerprintsKept'] as const;

/** What a signed payload states of the outcome (the kept fingerprints are a `fingerprints` residual). */
function statedOutcome(payload: { [key: string]: Json }): Outcome {
  const probe = payload.probe as { recovered?: unknown; matches?: unknown } | null | undefined;
  const residuals = Array.isArray(payload.residuals) ? payload.residuals : [];
  return {
    status: payload.status,
    certificateState: payload.certificateState,
    recovered: probe?.recovered,
    matches: Array.isArray(probe?.matches) ? probe.matches.length : undefined,
    fingerprintsKept: residuals.some((r) => typeof r === 'object' && r !== null && !Array.isArray(r) && r.kind === 'fingerprints'),
  };
}

/** The audit row that records a certificate as signed, for the transaction that stores it. */
export function signedEvent(erasureId: string, certificate: Certificate): AuditEvent {
  const o = statedOutcome(certificate.payload);
  const scalar = (v: unknown) => (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? v : null);
  return {
    actor: 'erasure',
    action: 'erasure.certificate.sign',
    keyId: erasureId,
    detail: {
      erasureId,
      digest: certificateDigest(certificate.payload),
      status: scalar(o.status),
      certificateState: scalar(o.certificateState),
      recovered: scalar(o.recovered),
      matches: scalar(o.matches),
      fingerprintsKept: scalar(o.fingerprintsKept),
      signingKeyId: scalar(certificate.payload.signingKeyId),
    },
  };
}

/** The audit row of a refusal. */
export function refusedEvent(erasureId: string, refusal: Refusal): AuditEvent {
  return { actor: 'erasure', action: 'erasure.certificate.refuse', keyId: erasureId, detail: { erasureId, reason: refusal.reason, detail: refusal.detail } };
}

/** The residual a refusal leaves on the erasure (its view and report show it). */
export function refusedResidual(refusal: Refusal, at: Date): Residual {
  return {
    tier: 'erasure',
    kind: CERTIFICATE_REFUSED,
    detail:
      `The certificate was not made final (${at.toISOString()}): ${refusal.detail}. The erasure's recorded state disagrees with what the vault signed and audited, ` +
      'so the stored certificate was left as it was and nothing new was signed. Someone may have edited the database: run `lethe audit verify` and compare the erasure with its audit rows.',
    bound: 'unbounded',
  };
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function digestMatches(recorded: unknown, actual: string): boolean {
  if (typeof recorded !== 'string' || !/^[0-9a-f]{64}$/.test(recorded)) return false;
  return constantTimeEqual(hexToBytes(recorded), hexToBytes(actual));
}

/**
 * Whether the provisional certificate stored on `row` may be signed final; the refusal
 * when it may not. `state` is the row's parsed state; `keys` the vault's signing keys
 * (`signer.list()`: current and retired, with their retirement times).
 */
export async function checkBeforeFinal(
  res: Pick<ErasureResources, 'audit'>,
  exec: Executor,
  check: { readonly row: ErasureRow; readonly state: ErasureState; readonly stored: Certificate; readonly keys: ReadonlyArray<TrustedKey> },
): Promise<Refusal | undefined> {
  const { row, state, stored } = check;
  const verdict = verifyCertificate(stored, check.keys);
  if (!verdict.valid) return { reason: 'signature', detail: `the stored certificate does not verify under the vault's keys (${verdict.reason ?? 'invalid'})` };
  if (stored.payload.erasureId !== row.erasureId) return { reason: 'signature', detail: "the stored certificate is another erasure's" };
  const stated = statedOutcome(stored.payload);
  const actual: Outcome = {
    status: row.status,
    certificateState: row.certificateState,
    recovered: state.probe?.recovered,
    matches: state.probe?.matches.length,
    fingerprintsKept: row.sealKeyId !== null,
  };
  const audited = await res.audit.latest(exec, 'erasure.certificate.sign', row.erasureId);
  if (!audited) {
    // only a certificate issued before the chain recorded any signing may lack its sign row; a later one's was removed or re-keyed
    const since = await res.audit.firstAt(exec, 'erasure.certificate.sign');
    const issued = typeof stored.payload.issuedAt === 'string' ? Date.parse(stored.payload.issuedAt) : Number.NaN;
    if (since && !(issued < since.getTime())) {
      return {
        reason: 'audit',
        detail: `the audit chain holds no record of signing this certificate, issued ${String(stored.payload.issuedAt)}, after the chain began recording signatures (${since.toISOString()}): its sign rows were removed or moved`,
      };
    }
  }
  if (audited && !audited.intact) return { reason: 'audit', detail: `the audit row that recorded its certificate (row ${audited.seq}) does not verify` };
  if (audited && !digestMatches(audited.detail.digest, certificateDigest(stored.payload))) {
    return { reason: 'digest', detail: `the stored certificate is not the one the audit chain recorded as signed last (row ${audited.seq})` };
  }
  for (const field of OUTCOME_FIELDS) {
    const recorded = audited?.detail[field];
    if (!same(actual[field], stated[field]) || (audited && !same(recorded, stated[field]))) {
      const said = `the erasure's row says ${JSON.stringify(actual[field]) ?? 'nothing'}, the signed certificate ${JSON.stringify(stated[field]) ?? 'nothing'}`;
      return {
        reason: 'outcome',
        detail: `${field}: ${said}${audited ? `, the audit chain (row ${audited.seq}) ${JSON.stringify(recorded) ?? 'nothing'}` : ''}`,
      };
    }
  }
  // the final payload's residuals are the row's: they must be those the checked certificate signed
  // (certify stores both at once; nothing else changes them before finalization), or an edit in SQL
  // would sign a residual away
  const signedResiduals = Array.isArray(stored.payload.residuals) ? stored.payload.residuals : [];
  const rowResiduals = JSON.parse(JSON.stringify(state.residuals ?? [])) as Json;
  if (canonicalJson(signedResiduals) !== canonicalJson(rowResiduals)) {
    const kinds = (list: unknown) => (Array.isArray(list) ? list.map((r) => String((r as { kind?: unknown } | null)?.kind)).join(', ') : '') || 'none';
    return { reason: 'outcome', detail: `residuals: the erasure's row states ${kinds(rowResiduals)}, the signed certificate ${kinds(signedResiduals)}` };
  }
  return undefined;
}

/** The epochs a signed payload says it waits on (a final certificate waits on at least these). */
export function signedEpochs(payload: { [key: string]: Json }): number[] {
  const list = payload.wrappedEpochs;
  return Array.isArray(list) ? list.filter((e): e is number => typeof e === 'number' && Number.isSafeInteger(e)) : [];
}

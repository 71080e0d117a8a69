/**
 * Certificates: what an erasure signs (Ed25519 over canonical JSON, src/crypto/
 * certificate.ts) and when it turns final. A certificate is provisional until every
 * epoch that wrapped a key the erasure destroyed (or keeps: its own key while
 * matches remain) is retired — until then a database backup's wrapped copy could
 * still unwrap. The finalizer re-signs it final once they all are — only after
 * checking the stored certificate against the vault's keys and the audit chain's record
 * of what was signed (certificate-audit.ts); a disagreement is refused, never signed.
 */
import { and, asc, eq, gt, inArray, isNull, type SQL, sql } from 'drizzle-orm';
import type { Certificate, Json, TrustedKey } from '../crypto/index.js';
import { type ErasureRow, erasures } from '../db/schema.js';
import { describeError } from '../observability/logger.js';
import type { RefusalReason } from './machine.js';
import { CERTIFICATE_REFUSED, checkBeforeFinal, type Refusal, refusedEvent, refusedResidual, signedEpochs, signedEvent } from './certificate-audit.js';
import { hashHex } from '../vault/subjects.js';
import { assertCertificateTransition, type CertificateState, type ErasureClass, type ErasureStatus, STEP_NAMES } from './machine.js';
import type { ErasureResources } from './resources.js';
import { endWrappedCopies } from './residuals.js';
import { type ErasureState, parseState } from './state.js';
import { forgottenEntries, keysTaken } from './state.js';
import { requestContextOf } from './request.js';
import { readableByRuling } from './view.js';

/** The epochs an erasure's certificate waits on, and when each retired. */
export interface WrappedEpochs {
  readonly epochs: number[];
  readonly allRetired: boolean;
  readonly retiredAt: Record<string, string>;
}

/**
 * The epochs that wrapped every key this erasure destroyed (or keeps), and whether all are
 * retired; `signed`: epochs a signed certificate already named, waited on too.
 */
export async function wrappedEpochs(
  res: Pick<ErasureResources, 'destructions' | 'versionKeys' | 'epochs'>,
  state: ErasureState,
  keptSealKey: string | null,
  signed: readonly number[] = [],
): Promise<WrappedEpochs> {
  const keyIds = keysTaken(state);
  const set = new Set<number>(signed);
  for (const r of await res.destructions.ledger(keyIds)) set.add(r.wrappedEpoch);
  if (keptSealKey) {
    const epoch = await res.versionKeys.epochOf(keptSealKey);
    if (epoch !== undefined) set.add(epoch);
  }
  const list = [...set].sort((a, b) => a - b);
  const retiredAt: Record<string, string> = {};
  // an epoch counts once its KEK is gone for good: a provider's deletion window still open (AWS KMS) keeps the certificate provisional
  const gone = new Set(await res.epochs.retiredEpochs());
  for (const e of await res.epochs.rows(list)) if (gone.has(e.epoch) && e.retiredAt) retiredAt[String(e.epoch)] = e.retiredAt.toISOString();
  return { epochs: list, allRetired: list.every((e) => retiredAt[String(e)] !== undefined), retiredAt };
}

/** What the certificate says of the probe, field by field (a new field of the state is not signed by accident). */
function probePayload(state: ErasureState, threshold: number): { [key: string]: Json } {
  const probe = state.probe;
  return {
    recovered: probe?.recovered ?? 1,
    threshold: probe?.threshold ?? threshold,
    matches: (probe?.matches ?? []).map((m) => ({ id: m.id, tier: m.tier, score: m.score })),
    ...(probe?.examined ? { examined: { ...probe.examined } } : {}),
    ...(probe?.coverage ? { coverage: { ...probe.coverage } } : {}),
    ...(probe?.unindexed ? { unindexed: probe.unindexed } : {}),
    ...(probe?.replica ? { replica: probe.replica } : {}),
    ...(probe?.cappedShingles !== undefined ? { cappedShingles: probe.cappedShingles } : {}),
    // a supersession's successors were not counted: the certificate names them
    ...(probe?.successors ? { successors: [...probe.successors] } : {}),
    ...(probe?.dismissed
      ? {
          dismissed: probe.dismissed.map((d) => ({
            id: d.id,
            role: d.role,
            at: d.at,
            reason: d.reason,
            ruledScore: d.ruledScore,
            // two people's ruling: who approved it (a ruling from before proposals has no approval)
            ...(d.dismissalId ? { dismissalId: d.dismissalId } : {}),
            ...(d.approval
              ? { approval: { role: d.approval.role, at: d.approval.at, ...(d.approval.principal ? { principal: d.approval.principal } : {}) } }
              : {}),
            ...(d.proposedBy ? { proposedBy: d.proposedBy } : {}),
            ...(d.score !== undefined ? { score: d.score } : {}),
            ...(d.lapsed ? { lapsed: true } : {}),
          })),
        }
      : {}),
  };
}

/** The signed statement: what the erasure did, what each tier held and removed, what remains and how long. */
export function certificatePayload(
  row: ErasureRow,
  state: ErasureState,
  outcome: { cls: ErasureClass; status: ErasureStatus; certificateState: CertificateState; probeThreshold: number },
  held: WrappedEpochs,
): { [key: string]: Json } {
  const request = requestContextOf(row);
  const steps = STEP_NAMES.flatMap((name) => {
    const s = state.steps[name];
    if (!s) return [];
    return [{ name, status: s.status, ...(s.startedAt ? { startedAt: s.startedAt } : {}), ...(s.finishedAt ? { finishedAt: s.finishedAt } : {}) }];
  });
  return {
    format: 'lethe-erasure-certificate/1',
    erasureId: row.erasureId,
    subjectHash: hashHex(row.subjectHash),
    // what was erased: the whole subject, or these entries of a subject that lives on
    scope: row.scope,
    ...(row.scope === 'records' ? { entryIds: [...(forgottenEntries(row) ?? [])] } : {}),
    ...(row.successorId ? { supersededBy: row.successorId } : {}),
    class: outcome.cls,
    status: outcome.status,
    certificateState: outcome.certificateState,
    legalBasis: row.legalBasis,
    // the request's context (never personal data), only when the request gave one: a payload without it is as before
    ...(request
      ? { request: { reasonCategory: request.reasonCategory, legalBasis: request.legalBasis, controller: request.controller, reference: request.reference } }
      : {}),
    requestedAt: row.createdAt.toISOString(),
    issuedAt: new Date().toISOString(),
    steps,
    // the probe as it ran: matches, candidates examined per source, index coverage, the replica, and every dismissal (a human ruling)
    probe: probePayload(state, outcome.probeThreshold),
    residuals: (state.residuals ?? []).map((r) => ({ ...r })) as Json,
    // records a ruling keeps readable (the erasure counts them out of `recovered` on two people's word), only when there are any
    ...(readableByRuling(state.probe).length ? { readableByRuling: readableByRuling(state.probe) } : {}),
    // which replicas acknowledged dropping the destroyed key's vectors, and which were still behind (acknowledgement.ts)
    replicas: state.replicas ? (JSON.parse(JSON.stringify(state.replicas)) as Json) : null,
    // what each tier held of the subject at classification and reported removed
    tiers: Object.fromEntries(
      Object.entries(state.contributions ?? {}).map(([tier, contributed]) => [
        tier,
        { contributed: contributed ?? 0, removed: state.removed?.[tier as keyof NonNullable<ErasureState['removed']>] ?? 0 },
      ]),
    ),
    // the ledger chain record the destructions were durable in (or a later one): a restore must reach it (`--witness`)
    ...(state.ledger ? { ledger: { ...state.ledger } } : {}),
    wrappedEpochs: held.epochs,
    epochsRetiredAt: held.retiredAt,
  };
}

/** Candidates read per query; a pass pages through every candidate, however many there are. */
export const FINALIZE_BATCH = 100;

/** The column still holds the time read (it is read back at millisecond precision, stored at microseconds). */
function sameMillisecond(column: typeof erasures.updatedAt, at: Date): SQL {
  return sql`${column} >= ${at.toISOString()}::timestamptz and ${column} < ${new Date(at.getTime() + 1).toISOString()}::timestamptz`;
}

/**
 * The erasures that can turn final now: finished with a provisional certificate,
 * their own key destroyed (a kept key holds the fingerprints while matches remain, and
 * every rotation re-wraps it under the active epoch, which is never retired — such a
 * certificate cannot turn final while the key is kept), and every epoch recorded at
 * certification (`state.wrappedEpochs`; the ledger's epochs never change) among the
 * retired ones. Erasures certified before the state recorded its epochs are read too,
 * and checked one by one.
 */
function finalizable(retired: readonly number[]): SQL {
  return and(
    eq(erasures.certificateState, 'provisional'),
    inArray(erasures.status, ['completed', 'incomplete']),
    isNull(erasures.sealKeyId),
    sql`coalesce(${erasures.state} -> 'wrappedEpochs', '[]'::jsonb) <@ ${JSON.stringify(retired)}::jsonb`,
    // a refused one waits for a person (its residual says why); it is not checked again at every retirement
    sql`not coalesce(${erasures.state} -> 'residuals', '[]'::jsonb) @> ${JSON.stringify([{ kind: CERTIFICATE_REFUSED }])}::jsonb`,
  )!;
}

/**
 * Re-signs provisional certificates as final once every epoch they wait on is retired,
 * after checking each against the vault's keys and the audit chain (certificate-audit.ts).
 */
export class CertificateFinalizer {
  readonly #res: ErasureResources;
  readonly #emit: () => void;
  readonly #onRefused: (reason: RefusalReason) => void;
  /** Retired epochs at the last pass that finished (-1: none yet). */
  #retiredSeen = -1;

  constructor(res: ErasureResources, emit: () => void, onRefused: (reason: RefusalReason) => void = () => {}) {
    this.#res = res;
    this.#emit = emit;
    this.#onRefused = onRefused;
  }

  /**
   * Records a refusal: the certificate is left as it was; a `certificate-refused`
   * residual on the erasure, an `erasure.certificate.refuse` audit row and a transition
   * row in one transaction (only on the row as read), then an error log and the metric.
   */
  async #refuse(row: ErasureRow, state: ErasureState, refusal: Refusal): Promise<void> {
    const { records, audit, logger } = this.#res;
    const at = new Date();
    state.residuals = [...(state.residuals ?? []), refusedResidual(refusal, at)];
    const recorded = await records.db.transaction(async (tx) => {
      const updated = await tx
        .update(erasures)
        .set({ state, updatedAt: at })
        .where(and(eq(erasures.erasureId, row.erasureId), eq(erasures.certificateState, 'provisional'), sameMillisecond(erasures.updatedAt, row.updatedAt)))
        .returning({ id: erasures.erasureId });
      if (!updated.length) return false;
      await audit.append(tx, [refusedEvent(row.erasureId, refusal)]);
      await records.transition(tx, row.erasureId, null, null, row.status, `certificate refused: ${refusal.detail}`);
      return true;
    });
    if (!recorded) return;
    logger.error(
      { erasureId: row.erasureId, reason: refusal.reason, detail: refusal.detail },
      'refused to sign a certificate final: the erasure disagrees with what the vault signed and audited',
    );
    this.#onRefused(refusal.reason);
  }

  /** One pass over every erasure that can finalize (the worker runs it after each drain); answers how many turned final. */
  async run(): Promise<number> {
    const { records, epochs, signer, audit } = this.#res;
    // nothing can turn final unless an epoch retired since the last pass
    const retired = await epochs.retiredEpochs();
    if (retired.length === this.#retiredSeen) return 0;
    const db = records.db;
    let done = 0;
    let refused = 0;
    // the vault's signing keys, read once a pass (when a certificate is due)
    let keys: ReadonlyArray<TrustedKey> | undefined;
    // pages by erasure id (the erasures_provisional index), so no number of erasures that cannot finalize hides one that can
    let after = '';
    for (;;) {
      const rows = await db
        .select()
        .from(erasures)
        .where(and(finalizable(retired), gt(erasures.erasureId, after)))
        .orderBy(asc(erasures.erasureId))
        .limit(FINALIZE_BATCH);
      for (const row of rows) {
        const state = parseState(row.state);
        const previous = row.certificate as Certificate | null;
        if (!previous) continue;
        const held = await wrappedEpochs(this.#res, state, row.sealKeyId, signedEpochs(previous.payload ?? {}));
        if (!held.allRetired) continue;
        assertCertificateTransition('finalize', row.certificateState, 'final');
        keys ??= await signer.list();
        const refusal = await checkBeforeFinal(this.#res, db, { row, state, stored: previous, keys });
        if (refusal) {
          await this.#refuse(row, state, refusal);
          refused++;
          continue;
        }
        // residuals bounded by those epochs end at their retirement
        state.residuals = endWrappedCopies(state.residuals ?? [], Object.values(held.retiredAt).sort().at(-1)!);
        // the checked certificate, its outcome as audited, made final
        const payload: { [key: string]: Json } = {
          ...previous.payload,
          certificateState: 'final',
          issuedAt: new Date().toISOString(),
          // `ledger` stays the checked provisional one's: the row's state is not trusted for it
          wrappedEpochs: held.epochs,
          epochsRetiredAt: held.retiredAt,
          residuals: state.residuals.map((r) => ({ ...r })) as Json,
        };
        // signed with the current key: the payload names it (signingKeyId), whichever key signed the provisional one
        const certificate = await signer.sign(payload);
        const updated = await db.transaction(async (tx) => {
          const rows = await tx
            .update(erasures)
            .set({ certificate: certificate as unknown as Json, certificateState: 'final', state, updatedAt: new Date() })
            // only the row as read: an erasure re-opened meanwhile (a redaction, a dismissal) is certified again by its own run
            .where(
              and(
                eq(erasures.erasureId, row.erasureId),
                eq(erasures.certificateState, 'provisional'),
                sameMillisecond(erasures.updatedAt, row.updatedAt),
                inArray(erasures.status, ['completed', 'incomplete']),
              ),
            )
            .returning({ id: erasures.erasureId });
          if (!rows.length) return false;
          // what was signed enters the audit chain with it
          await audit.append(tx, [signedEvent(row.erasureId, certificate)]);
          await records.transition(tx, row.erasureId, null, null, row.status, 'certificate final: every epoch that wrapped a destroyed key is retired');
          return true;
        });
        if (updated) done++;
      }
      if (rows.length < FINALIZE_BATCH) break;
      after = rows.at(-1)!.erasureId;
    }
    // only a pass that went through every candidate is remembered (a failed one is tried again)
    this.#retiredSeen = retired.length;
    if (done || refused) this.#emit();
    return done;
  }

  /** A pass whose failure is logged, not thrown (the worker's periodic call). */
  async runQuietly(): Promise<void> {
    await this.run().catch((e: unknown) => this.#res.logger.warn({ err: describeError(e) }, 'could not finalize certificates'));
  }
}

/** The schemas the erasure routes share: the erasure, its request and answers, the erasure id in the path. */
import { z } from '@hono/zod-openapi';
import { CERTIFICATE_STATES, ERASURE_CLASSES, ERASURE_STATUSES, STEP_NAMES, STEP_STATUSES, TIER_NAMES } from '../../../erasure/machine.js';
import { BulkErasureRequestSchema, ErasureRequestSchema, LEGAL_BASES, RequestContextSchema } from '../../../erasure/request.js';
import { ErasureStateSchema } from '../../../erasure/state.js';
import {
  type CertificateView,
  CertificateViewSchema,
  DismissalAcceptedSchema,
  ErasureAcceptedSchema,
  type ErasureView,
  ErasureViewSchema,
  ProbeDismissalSchema,
  ProbeMatchSchema,
  ProbeViewSchema,
  ResidualSchema,
  RulingActSchema,
} from '../../../erasure/view.js';
import { PageQuery } from '../../cursor.js';
import { authErrors, idParam, problemResponse, SubjectParam } from '../../schemas.js';

export const ErasureIdParam = z.object({
  erasureId: idParam('ers', 'erasureId'),
});

export const DismissalParams = ErasureIdParam.extend({ dismissalId: idParam('dsm', 'dismissalId') });

export const DismissalAccepted = DismissalAcceptedSchema.meta({ id: 'DismissalAccepted' });

/** What the routes on one proposed dismissal answer besides their success: `conflict` says what else is refused. */
export function dismissalAnswers(conflict: string) {
  return {
    ...authErrors,
    404: problemResponse('not_found: no such erasure, or no such dismissal of it'),
    409: problemResponse(`conflict: the erasure is running or failed, its fingerprints are gone, or ${conflict}`),
  };
}

export const ErasureRequest = ErasureRequestSchema.meta({ id: 'ErasureRequest' });

export const Accepted = ErasureAcceptedSchema.meta({ id: 'ErasureAccepted' });

export const BulkErasureRequest = BulkErasureRequestSchema.meta({ id: 'BulkErasureRequest' });

export { BulkErasureAcceptedSchema as BulkAccepted } from '../../../wire/erasures.js';

const isoTime = (description: string) => z.string().meta({ format: 'date-time', description });

/**
 * What an erasure certificate signs: `certificatePayload` (src/erasure/certificates.ts)
 * field by field, and the `signingKeyId` the signer adds. For the document only: the
 * payload is served as signed (never re-shaped), and test/http/openapi-responses.test.ts
 * checks a served one against this schema, every field declared.
 */
export const CertificatePayloadSchema = z
  .object({
    format: z.literal('lethe-erasure-certificate/1').meta({ description: 'The payload format: what a verifier reads.' }),
    signingKeyId: z.string().optional().meta({
      description:
        'The key that signed it (`csk_…`, a key of GET /v1/certificates/keys). Absent on certificates signed before signing keys had ids (the root-derived key).',
      example: 'csk_3q2-7wEXAMPLE0000000000',
    }),
    erasureId: z.string().meta({ description: 'The erasure certified (`ers_…`).', example: 'ers_3q2-7wEXAMPLE000000000' }),
    subjectHash: z.string().meta({ description: "The subject's keyed hash (hex): the certificate never names the subject." }),
    scope: z.enum(['subject', 'records']).meta({ description: 'What was erased: the whole subject, or `entryIds` of a subject that lives on.' }),
    entryIds: z.array(z.string()).optional().meta({ description: 'The entries forgotten (a records-scope erasure only).' }),
    supersededBy: z
      .string()
      .optional()
      .meta({ description: 'The successor entry, when a supersession forgot the entry (its own data is not counted by the probe).' }),
    class: z.enum(ERASURE_CLASSES).meta({ description: 'The erasure class (A, B or C): how far the subject reached beyond its own log.' }),
    status: z.enum(ERASURE_STATUSES).meta({ description: 'The status certified: completed, or incomplete (a residual says what remains).' }),
    certificateState: z
      .enum(CERTIFICATE_STATES)
      .meta({ description: 'provisional until every epoch that wrapped a destroyed key is retired (`wrappedEpochs`), then final (signed again).' }),
    legalBasis: z
      .string()
      .nullable()
      .meta({ description: `The legal basis the erasure was requested under (${LEGAL_BASES.join(', ')}), or null when none was given.` }),
    request: RequestContextSchema.optional().meta({ description: "The request's context (never personal data), only when the request gave one." }),
    requestedAt: isoTime('When the erasure was requested.'),
    issuedAt: isoTime('When this certificate was signed.'),
    steps: z
      .array(
        z.object({
          name: z.enum(STEP_NAMES),
          status: z.enum(STEP_STATUSES),
          startedAt: isoTime('When the step started.').optional(),
          finishedAt: isoTime('When the step finished.').optional(),
        }),
      )
      .meta({ description: 'Each step the erasure ran, in order, with its status and times.' }),
    probe: z
      .object({
        recovered: ProbeViewSchema.shape.recovered.meta({ description: "The share of the subject's content the probe could still recover (0 certifies)." }),
        threshold: ProbeViewSchema.shape.threshold.meta({ description: 'The score from which a record counts as carrying the content.' }),
        matches: z
          .array(ProbeMatchSchema.pick({ id: true, tier: true, score: true }))
          .meta({ description: 'The records that still scored at or above the threshold.' }),
        examined: ProbeViewSchema.shape.examined,
        coverage: ProbeViewSchema.shape.coverage,
        unindexed: ProbeViewSchema.shape.unindexed,
        replica: ProbeViewSchema.shape.replica,
        cappedShingles: ProbeViewSchema.shape.cappedShingles,
        successors: ProbeViewSchema.shape.successors,
        dismissed: z
          .array(
            ProbeDismissalSchema.pick({ id: true, dismissalId: true, role: true, proposedBy: true, at: true, reason: true, ruledScore: true }).extend({
              approval: RulingActSchema.pick({ role: true, principal: true, at: true }).optional(),
              score: z.number().optional().meta({ description: 'The score the record still has.' }),
              lapsed: z.literal(true).optional().meta({ description: 'The ruling lapsed: the record scores higher than when ruled, or moved key.' }),
            }),
          )
          .optional()
          .meta({ description: 'The rulings that dismissed named matches (two people: proposed, then approved), each signed with its reason.' }),
      })
      .meta({ description: 'The probe as it ran: matches, candidates examined per source, index coverage, the replica, every dismissal.' }),
    residuals: z.array(ResidualSchema).meta({ description: 'What remains, tier by tier, and until when.' }),
    readableByRuling: z
      .array(z.string())
      .optional()
      .meta({ description: 'Records an approved ruling keeps readable (counted out of `recovered` on two people’s word), only when there are any.' }),
    replicas: ErasureStateSchema.shape.replicas
      .unwrap()
      .nullable()
      .meta({ description: "Which replicas acknowledged dropping the destroyed key's vectors, and which were still behind; null when none was asked." }),
    tiers: z
      .partialRecord(
        z.enum(TIER_NAMES),
        z.object({ contributed: z.number().meta({ description: 'What the tier held of the subject at classification.' }), removed: z.number() }),
      )
      .meta({ description: 'What each tier held of the subject at classification, and reported removed.' }),
    ledger: ErasureStateSchema.shape.ledger.meta({
      description: 'The ledger chain record the destructions were durable in (or a later one): a restore must reach it (`--witness`).',
    }),
    wrappedEpochs: z.array(z.number().int()).meta({ description: 'The KEK epochs that wrapped a key this erasure destroyed (or keeps).' }),
    epochsRetiredAt: z
      .record(z.string(), z.string().meta({ format: 'date-time' }))
      .meta({ description: 'When each of `wrappedEpochs` retired, by epoch; final once every one is here.' }),
  })
  .meta({ id: 'ErasureCertificatePayload', description: 'What the certificate signs.' });

export const CertificateSchema = CertificateViewSchema.extend({ payload: CertificatePayloadSchema }).meta({
  id: 'ErasureCertificate',
  description:
    'Ed25519 over the canonical JSON of `payload`; `payload.signingKeyId` names the signing key. Check it against the keys of GET /v1/certificates/keys (`lethe certificate verify --url`), never against the `publicKey` it carries.',
});

export const ErasureListQuery = PageQuery.extend({
  subject: SubjectParam.shape.subject
    .optional()
    .openapi({ param: { name: 'subject', in: 'query' }, description: "Only this subject's erasures.", example: 'user:42' }),
});

export { actorOf } from '../../actor.js';

/** The erasure: its certificate, when it has one, with the payload described field by field. */
export const ErasureSchema = ErasureViewSchema.extend({ certificate: CertificateSchema.optional() }).meta({ id: 'Erasure' });

/**
 * A certificate as the document describes it. The signer types a payload as any JSON
 * object (it signs what it is given); the certificate step builds it with
 * `certificatePayload`, whose shape CertificatePayloadSchema spells out — served
 * unchanged, and checked against the document by test/http/openapi-responses.test.ts.
 */
export const documentedCertificate = (certificate: CertificateView) => certificate as unknown as z.infer<typeof CertificateSchema>;

/** An erasure view as the document describes it: its certificate's payload as {@link documentedCertificate} says. */
export const documentedErasure = (view: ErasureView) => view as unknown as z.infer<typeof ErasureSchema>;

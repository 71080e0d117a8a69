/**
 * The erasure as the API answers it (`GET /v1/erasures/{id}`), the report draws it
 * and the CLI prints it: one zod schema, from which the route's validation and
 * OpenAPI document and every TypeScript type below are derived. Nothing here holds
 * subject content: records are named by id, the subject only by its keyed hash.
 * Pure: no I/O.
 */
import { z } from 'zod';
import { ERASURE_CLASSES, ERASURE_STATUSES, STEP_NAMES, STEP_STATUSES } from './machine.js';
import { RequestContextSchema } from './request.js';

export const StepViewSchema = z.object({
  name: z.enum(STEP_NAMES),
  status: z.enum(STEP_STATUSES),
  /** A sentence a person reads: counts and ids, never content. */
  detail: z.string().optional(),
  startedAt: z.string().optional(),
  finishedAt: z.string().optional(),
});
export type StepView = z.infer<typeof StepViewSchema>;

export const ResidualSchema = z.object({
  /** key-table, log, artifacts, vector-index, backups, caches, model-weights, erasure */
  tier: z.string(),
  /** gist, wrapped-dek, lease, cross-subject, dismissed-content, parametric, fingerprints, unindexed, certificate-refused (the finalizer refused to sign it final) */
  kind: z.string(),
  detail: z.string(),
  /** ISO time the residual ends, when it has a date. */
  until: z.string().optional(),
  /** A concrete bound (a fraction, a count) or the honest word "unbounded". */
  bound: z.union([z.number(), z.string()]),
});
export type Residual = z.infer<typeof ResidualSchema>;

export const ProbeMatchSchema = z.object({
  /** The record that still carries the subject's content (entry or artifact id). */
  id: z.string(),
  tier: z.enum(['log', 'artifacts', 'vector-index']),
  score: z.number(),
  /** A verbatim run of the erased content, or a score of NEAR_COPY (0.9) or more: it cannot be dismissed, only redacted. */
  nearCopy: z.boolean().optional(),
});
export type ProbeMatch = z.infer<typeof ProbeMatchSchema>;

/** Who approved or revoked a proposed dismissal, and when. */
export const RulingActSchema = z.object({
  role: z.string(),
  /** The principal (`prn_…`, src/vault/principals.ts): never the proposer's, nor the erasure's requester's, for an approval. */
  principal: z.string().optional(),
  at: z.string(),
  reason: z.string().optional(),
});
export type RulingAct = z.infer<typeof RulingActSchema>;

/**
 * A dismissal's lifecycle: `proposed` by one principal (it changes nothing), then
 * `approved` by a second (the ruling takes effect) or `rejected`; an approved ruling
 * may be `revoked` (the probe runs again with the record counted).
 */
export const DISMISSAL_STATUSES = ['proposed', 'approved', 'rejected', 'revoked'] as const;
export type DismissalStatus = (typeof DISMISSAL_STATUSES)[number];

export const ProbeDismissalSchema = z.object({
  /** The named record a person ruled does not carry the subject's content. */
  id: z.string(),
  /** The proposal (`dsm_…`) the ruling belongs to: approve or revoke it by this id. */
  dismissalId: z.string().optional(),
  /** Absent on rulings made before proposals existed: those took effect as made (approved). */
  status: z.enum(DISMISSAL_STATUSES).optional(),
  /** The role that proposed the ruling (the token's role). */
  role: z.string(),
  /** The principal that proposed it. */
  proposedBy: z.string().optional(),
  at: z.string(),
  reason: z.string(),
  /** The score the record had when ruled (proposed, then approved): the ruling lapses if it scores higher later. */
  ruledScore: z.number(),
  /** The key the record was under when ruled: the ruling lapses if it is rewritten under another. */
  keyId: z.string().optional(),
  approval: RulingActSchema.optional(),
  /** A rejected proposal's, or a revoked ruling's, act. */
  revocation: RulingActSchema.optional(),
});
export type ProbeDismissal = z.infer<typeof ProbeDismissalSchema>;

/** Whether a ruling takes effect: approved by a second principal (or made before proposals existed). */
export function inEffect(d: Pick<ProbeDismissal, 'status'>): boolean {
  return (d.status ?? 'approved') === 'approved';
}

export const ProbeViewSchema = z.object({
  recovered: z.number(),
  threshold: z.number(),
  matches: z.array(ProbeMatchSchema),
  /** Distinct candidate records examined, per source. */
  examined: z.object({ shingleIndex: z.number(), vectorIndex: z.number(), provenance: z.number() }).optional(),
  /**
   * Records in the lexical index ÷ sealed records stored, on the replica that ran the
   * probe (it certifies only when equal); `queued`: entries waiting in the indexing
   * queue then, registered after the probe started (not covered).
   */
  coverage: z.object({ indexed: z.number(), stored: z.number(), queued: z.number().optional() }).optional(),
  /**
   * Entries queued for indexing before the probe started that were still not indexed
   * after its bounded wait: the probe could not look in them, and the erasure is
   * `incomplete` with an `unindexed` residual.
   */
  unindexed: z.number().optional(),
  /** The replica that ran the probe. */
  replica: z.string().optional(),
  /** Fingerprint shingles too common to look candidates up by (their posting lists were not read in full). */
  cappedShingles: z.number().optional(),
  /** A supersession's successors, not counted: the same person's current data, written to replace the forgotten entry. */
  successors: z.array(z.string()).optional(),
  /**
   * The rulings that dismissed named matches (a stated human judgement), each with
   * the score the record would still have: dismissed records are left out of `recovered`.
   */
  dismissed: z.array(ProbeDismissalSchema.extend({ score: z.number().optional(), lapsed: z.boolean().optional() })).optional(),
});
export type ProbeView = z.infer<typeof ProbeViewSchema>;

/** The records an approved ruling keeps readable: dismissed matches the last probe still scored (not lapsed). */
export function readableByRuling(probe: Pick<ProbeView, 'dismissed'> | undefined): string[] {
  return (probe?.dismissed ?? []).filter((d) => inEffect(d) && d.score !== undefined && !d.lapsed).map((d) => d.id);
}

/** A node of the provenance graph of what the erasure affected, captured at classification. */
export const GraphNodeSchema = z.object({
  id: z.string(),
  type: z.enum(['entry', 'artifact']),
  /** Artifact kind (summary, fact, digest). */
  kind: z.string().optional(),
  /** True for the erased subject's own entries. */
  erasedSubject: z.boolean(),
  /** For artifacts after the cascade: regenerated (new version), removed (no survivor) or unchanged. */
  outcome: z.enum(['regenerated', 'removed', 'unchanged']).optional(),
});
export type GraphNode = z.infer<typeof GraphNodeSchema>;

/** An edge from a source (entry or artifact) to the artifact derived from it. */
export const GraphEdgeSchema = z.object({ from: z.string(), to: z.string() });
export type GraphEdge = z.infer<typeof GraphEdgeSchema>;

export const ErasureGraphSchema = z.object({
  nodes: z.array(GraphNodeSchema),
  edges: z.array(GraphEdgeSchema),
  /** True when the graph was cut at the node limit. */
  truncated: z.boolean().optional(),
});
export type ErasureGraph = z.infer<typeof ErasureGraphSchema>;

export const CertificateViewSchema = z.object({
  payload: z.record(z.string(), z.unknown()),
  signature: z.string(),
  publicKey: z.string(),
  /** Always Ed25519: the certificate as served verifies as-is (`lethe certificate verify`). */
  algorithm: z.literal('Ed25519'),
});
export type CertificateView = z.infer<typeof CertificateViewSchema>;

/** How a running erasure is retrying its step: present once an attempt failed. */
export const ErasureRetrySchema = z.object({
  /** Failed attempts of the current step (reset when a step commits, and by a resume). */
  attempts: z.number().int(),
  /** The last failure's message (never a secret, never content). */
  lastError: z.string().optional(),
  /** When the next attempt may start (while the erasure runs and waits). */
  nextAttemptAt: z.string().optional(),
});
export type ErasureRetry = z.infer<typeof ErasureRetrySchema>;

/** What a failed erasure left behind (read from the key's state when the view is asked for). */
export const ErasureLeftSchema = z.object({
  /** The subject's key is fenced: no lease, no append, no new key for the subject. */
  keyFenced: z.boolean(),
  /** The key was destroyed: nothing sealed under it can be read again. */
  keyDestroyed: z.boolean(),
  /** Some of the subject's log entries are still readable (indexed under a live key). */
  dataReadable: z.boolean(),
  /** The step that failed: where `POST …/resume` takes the erasure up again. */
  failedStep: z.enum(STEP_NAMES).optional(),
});
export type ErasureLeft = z.infer<typeof ErasureLeftSchema>;

export const ErasureViewSchema = z.object({
  erasureId: z.string(),
  status: z.enum(ERASURE_STATUSES),
  class: z.enum(ERASURE_CLASSES).optional(),
  /** Hex of the keyed hash that names the subject (never the subject id). */
  subjectHash: z.string(),
  /** `subject`: the whole subject is erased (its key destroyed). `records`: only `entryIds` are forgotten; the subject lives on under a new key. */
  scope: z.enum(['subject', 'records']),
  /** The entries a records-scope erasure forgets. */
  entryIds: z.array(z.string()).optional(),
  /** A supersession: the entry written to replace the forgotten one (the same person's current data: the probe does not count it). */
  supersededBy: z.string().optional(),
  legalBasis: z.string().optional(),
  /** The request's context as given (reason category, legal basis, controller, reference): never personal data. */
  request: RequestContextSchema.optional(),
  createdAt: z.string(),
  finishedAt: z.string().optional(),
  steps: z.array(StepViewSchema),
  residuals: z.array(ResidualSchema),
  probe: ProbeViewSchema,
  certificate: CertificateViewSchema.optional(),
  /** provisional until the epoch holding the last wrapped copy retires, then final. */
  certificateState: z.enum(['provisional', 'final']).optional(),
  graph: ErasureGraphSchema,
  /** Attempts, the last error and the next attempt's time, once a step attempt failed. */
  retry: ErasureRetrySchema.optional(),
  /** A failed erasure: what it left (the key fenced? destroyed? the data readable?). Resume it with POST …/resume. */
  left: ErasureLeftSchema.optional(),
  /** Every dismissal proposed on the erasure, each with its status (proposed, approved, rejected, revoked). */
  dismissals: z.array(ProbeDismissalSchema).optional(),
  /**
   * Records the last probe matched that stay readable because an approved ruling
   * dismissed them: the erasure counts them out of `recovered` on two people's word,
   * and its certificate and report say so (a `dismissed-content` residual names each).
   */
  readableByRuling: z.array(z.string()).optional(),
});
export type ErasureView = z.infer<typeof ErasureViewSchema>;

/** One transition of an erasure's state machine: a row of the timeline, an event of the stream. */
export const ErasureTransitionSchema = z.object({
  id: z.number().int(),
  fromStep: z.string().nullable(),
  toStep: z.string().nullable(),
  status: z.string(),
  at: z.string(),
  detail: z.string().nullable(),
});
export type ErasureTransition = z.infer<typeof ErasureTransitionSchema>;

/** `POST /v1/erasures` and redaction orders answer the erasure's id and status. */
export const ErasureAcceptedSchema = z.object({ erasureId: z.string(), status: z.enum(ERASURE_STATUSES) });
export type ErasureAccepted = z.infer<typeof ErasureAcceptedSchema>;

/** A dismissal proposed, approved, rejected or revoked: the erasure's id and status, and the proposal's id. */
export const DismissalAcceptedSchema = ErasureAcceptedSchema.extend({
  /** The proposal (`dsm_…`): approve it with POST …/dismissals/{dismissalId}/approve, reject or revoke it with …/revoke. */
  dismissalId: z.string(),
});
export type DismissalAccepted = z.infer<typeof DismissalAcceptedSchema>;

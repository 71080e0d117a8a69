/**
 * The erasure engine's public shapes: what `GET /v1/erasures/{id}` answers, what the
 * report draws and what the certificate signs. Nothing here holds subject content:
 * records are named by id, the subject only by its keyed hash.
 */

export const ERASURE_STATUSES = ['pending', 'running', 'completed', 'incomplete', 'failed'] as const;
export type ErasureStatus = (typeof ERASURE_STATUSES)[number];

export const ERASURE_CLASSES = ['A', 'B', 'C'] as const;
export type ErasureClass = (typeof ERASURE_CLASSES)[number];

/** The steps of ARCHITECTURE.md, in order; `redact` re-enters the machine after a redaction order. */
export const STEP_NAMES = ['classify', 'fingerprint', 'fence', 'destroy', 'drain_leases', 'cascade', 'propagate', 'probe', 'certify', 'redact'] as const;
export type StepName = (typeof STEP_NAMES)[number];

export type StepStatus = 'pending' | 'running' | 'done' | 'failed' | 'skipped';

export interface StepView {
  readonly name: StepName;
  readonly status: StepStatus;
  /** A sentence a person reads: counts and ids, never content. */
  readonly detail?: string;
  readonly startedAt?: string;
  readonly finishedAt?: string;
}

export interface Residual {
  /** key-table, log, artifacts, vector-index, backups, caches, model-weights, erasure */
  readonly tier: string;
  /** gist, wrapped-dek, lease, cross-subject, parametric, fingerprints */
  readonly kind: string;
  readonly detail: string;
  /** ISO time the residual ends, when it has a date. */
  readonly until?: string;
  /** A concrete bound (a fraction, a count) or the honest word "unbounded". */
  readonly bound: number | string;
}

export interface ProbeMatch {
  /** The record that still carries the subject's content (entry or artifact id). */
  readonly id: string;
  readonly tier: 'log' | 'artifacts' | 'vector-index';
  readonly score: number;
}

export interface ProbeView {
  readonly recovered: number;
  readonly threshold: number;
  readonly matches: readonly ProbeMatch[];
}

/** The provenance graph of what the erasure affected, captured at classification. */
export interface GraphNode {
  readonly id: string;
  readonly type: 'entry' | 'artifact';
  /** Artifact kind (summary, fact, digest). */
  readonly kind?: string;
  /** True for the erased subject's own entries. */
  readonly erasedSubject: boolean;
  /** For artifacts after the cascade: regenerated (new version), removed (no survivor) or unchanged. */
  readonly outcome?: 'regenerated' | 'removed' | 'unchanged';
}

export interface GraphEdge {
  /** The source (entry or artifact). */
  readonly from: string;
  /** The artifact derived from it. */
  readonly to: string;
}

export interface ErasureGraph {
  readonly nodes: readonly GraphNode[];
  readonly edges: readonly GraphEdge[];
  /** True when the graph was cut at the node limit. */
  readonly truncated?: boolean;
}

export interface CertificateView {
  readonly payload: { readonly [key: string]: unknown };
  readonly signature: string;
  readonly publicKey: string;
  /** Always Ed25519: the certificate as served verifies as-is (`lethe certificate verify`). */
  readonly algorithm: 'Ed25519';
}

export interface ErasureView {
  readonly erasureId: string;
  readonly status: ErasureStatus;
  readonly class?: ErasureClass;
  /** Hex of the keyed hash that names the subject (never the subject id). */
  readonly subjectHash: string;
  readonly legalBasis?: string;
  readonly createdAt: string;
  readonly finishedAt?: string;
  readonly steps: readonly StepView[];
  readonly residuals: readonly Residual[];
  readonly probe: ProbeView;
  readonly certificate?: CertificateView;
  /** provisional until the epoch holding the last wrapped copy retires, then final. */
  readonly certificateState?: 'provisional' | 'final';
  readonly graph: ErasureGraph;
}

/** One transition of an erasure's state machine: a row of the timeline, an event of the stream. */
export interface ErasureTransition {
  readonly id: number;
  readonly fromStep: string | null;
  readonly toStep: string | null;
  readonly status: string;
  readonly at: string;
  readonly detail: string | null;
}

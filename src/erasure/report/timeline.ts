/**
 * The report's timeline and outcome history, built from the erasure's transition rows
 * (`erasure_transitions`: inserted, never updated, so an outcome that a redaction or a
 * dismissal superseded is still there) and the dismissals the view holds. The timeline
 * is every event sorted by time; events at the same instant keep their recorded order
 * (a dismissal before the re-open it caused, then transitions by row id). Pure.
 */
import { ERASURE_STATUSES, type ErasureStatus } from '../machine.js';
import type { ErasureTransition, ErasureView } from '../view.js';

export type TimelineKind = 'requested' | 'step' | 'waiting' | 'retry' | 'outcome' | 'reopened' | 'dismissal' | 'certificate-final';

export interface TimelineEvent {
  /** ISO time as recorded. */
  readonly at: string;
  readonly kind: TimelineKind;
  /** What happened, in words (plain text). */
  readonly what: string;
  /** The recorded detail (plain text), if any. */
  readonly detail?: string | undefined;
  /** The erasure's status the event left it in, for outcomes. */
  readonly status?: ErasureStatus | undefined;
}

/** One entry of the outcome history: every finish (with its status), every re-open, the certificate turning final. */
export interface OutcomeEntry {
  readonly at: string;
  readonly kind: 'outcome' | 'reopened' | 'certificate-final';
  readonly status?: ErasureStatus | undefined;
  readonly detail?: string | undefined;
}

const FINISHED: ReadonlySet<string> = new Set<ErasureStatus>(['completed', 'incomplete', 'failed']);

function isStatus(s: string): s is ErasureStatus {
  return (ERASURE_STATUSES as readonly string[]).includes(s);
}

/** A step's name as a person reads it. */
function stepWords(step: string): string {
  return step.replace(/_/g, ' ');
}

/** What one transition row means. */
export function describeTransition(t: ErasureTransition): Omit<TimelineEvent, 'at'> {
  const detail = t.detail ?? undefined;
  const status = isStatus(t.status) ? t.status : undefined;
  if (t.fromStep === null && t.toStep === null) return { kind: 'certificate-final', what: 'Certificate made final', detail, status };
  if (t.fromStep === null) {
    if (t.status === 'pending') return { kind: 'requested', what: 'Erasure requested', detail, status };
    return { kind: 'reopened', what: `Re-opened at the ${stepWords(t.toStep!)} step`, detail, status };
  }
  if (t.toStep === null && FINISHED.has(t.status)) {
    if (t.status === 'failed') return { kind: 'outcome', what: `Failed at the ${stepWords(t.fromStep)} step`, detail, status };
    return { kind: 'outcome', what: `Finished ${t.status}; certificate signed`, detail, status };
  }
  if (t.toStep === t.fromStep) {
    const retry = detail !== undefined && /attempt|retry|failed/i.test(detail);
    return { kind: retry ? 'retry' : 'waiting', what: `${retry ? 'Retrying' : 'Waiting at'} the ${stepWords(t.fromStep)} step`, detail, status };
  }
  return { kind: 'step', what: `Step ${stepWords(t.fromStep)} done`, detail, status };
}

function timeOf(iso: string): number {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? Number.POSITIVE_INFINITY : t;
}

/**
 * Every event of the erasure in time order: each transition row, and each dismissal
 * ruling the view holds. Ties: dismissals first (each is recorded with the re-open it
 * causes), then transitions by row id; an unparsable time sorts last.
 */
export function buildTimeline(view: Pick<ErasureView, 'probe'>, transitions: readonly ErasureTransition[]): TimelineEvent[] {
  const keyed: Array<{ t: number; rank: number; seq: number; event: TimelineEvent }> = [];
  view.probe.dismissed?.forEach((d, i) => {
    keyed.push({
      t: timeOf(d.at),
      rank: 0,
      seq: i,
      event: {
        at: d.at,
        kind: 'dismissal',
        what: `Probe match ${d.id} dismissed by the ${d.role} role${d.approval ? `, approved by the ${d.approval.role} role` : ''}`,
        detail: d.reason,
      },
    });
  });
  for (const tr of transitions) keyed.push({ t: timeOf(tr.at), rank: 1, seq: tr.id, event: { at: tr.at, ...describeTransition(tr) } });
  keyed.sort((a, b) => a.t - b.t || a.rank - b.rank || a.seq - b.seq);
  return keyed.map((k) => k.event);
}

/** The outcome history: every outcome the erasure had, in time order, none overwritten. */
export function outcomeHistory(timeline: readonly TimelineEvent[]): OutcomeEntry[] {
  return timeline
    .filter((e): e is TimelineEvent & { kind: OutcomeEntry['kind'] } => e.kind === 'outcome' || e.kind === 'reopened' || e.kind === 'certificate-final')
    .map((e) => ({ at: e.at, kind: e.kind, ...(e.status ? { status: e.status } : {}), ...(e.detail ? { detail: e.detail } : {}) }));
}

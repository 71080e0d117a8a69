/**
 * The report's sections after the first page, other than the provenance graph: the
 * timeline (every event in time order), and the technical detail — the summary
 * (status, class, subject hash, legal basis, times), the steps, the reconstruction
 * probe with its bar and the residuals as recorded. Each returns HTML with every
 * string from the view escaped.
 */
import type { ErasureStatus } from '../machine.js';
import type { ErasureView, ProbeView, Residual, StepView } from '../view.js';
import { when } from './first-page.js';
import { barWidth, escapeHtml, formatNumber, percent, time } from './html.js';
import type { TimelineEvent } from './timeline.js';
import { CLASS_MEANING, STATUS_COLOURS, STATUS_MEANING, STEP_COLOURS } from './style.js';

export function summary(view: ErasureView, generatedAt: Date): string {
  const cls = view.class;
  const classRow =
    cls && cls in CLASS_MEANING
      ? `<span class="class-badge" data-class="${escapeHtml(cls)}">Class ${escapeHtml(cls)} · ${CLASS_MEANING[cls].name}</span>
<p class="explain" id="class-meaning">${escapeHtml(CLASS_MEANING[cls].sentence)}</p>`
      : cls
        ? `<span class="class-badge">Class ${escapeHtml(String(cls))}</span>`
        : '<span class="muted">not yet classified</span>';
  return `<dl class="summary">
<dt>Status</dt><dd>${statusBadge(view.status)}<p class="explain" id="status-meaning">${escapeHtml(STATUS_MEANING[view.status] ?? '')}</p></dd>
<dt>Class</dt><dd>${classRow}</dd>
<dt>Subject (keyed hash)</dt><dd><code class="hash">${escapeHtml(view.subjectHash)}</code></dd>
<dt>Scope</dt><dd>${
    view.scope === 'records'
      ? `${(view.entryIds ?? []).length} of the subject's entries forgotten (${(view.entryIds ?? []).map((id) => `<code>${escapeHtml(id)}</code>`).join(', ')}); the subject lives on under a new key`
      : 'the whole subject: its key destroyed'
  }</dd>
<dt>Legal basis</dt><dd>${view.legalBasis ? escapeHtml(view.legalBasis) : '<span class="muted">not stated</span>'}</dd>
<dt>Requested</dt><dd>${time(view.createdAt)}</dd>
<dt>Finished</dt><dd>${view.finishedAt ? time(view.finishedAt) : '<span class="muted">not finished</span>'}</dd>
<dt>Report generated</dt><dd>${time(generatedAt.toISOString())}</dd>
</dl>`;
}

function statusBadge(status: ErasureStatus): string {
  const c = STATUS_COLOURS[status] ?? { bg: '#6b7280', fg: '#ffffff' };
  return `<span class="badge status" data-status="${escapeHtml(status)}" style="background:${c.bg};color:${c.fg}">${escapeHtml(status)}</span>`;
}

export function stepsSection(steps: readonly StepView[]): string {
  const rows = steps
    .map((s) => {
      const c = STEP_COLOURS[s.status] ?? STEP_COLOURS.pending;
      return `<tr data-step="${escapeHtml(s.name)}">
<td><code>${escapeHtml(s.name)}</code></td>
<td><span class="badge" style="background:${c.bg};color:${c.fg}">${escapeHtml(s.status)}</span></td>
<td>${s.startedAt ? time(s.startedAt) : '<span class="muted">—</span>'}</td>
<td>${s.finishedAt ? time(s.finishedAt) : '<span class="muted">—</span>'}</td>
<td>${s.detail ? escapeHtml(s.detail) : ''}</td>
</tr>`;
    })
    .join('\n');
  return `<section id="steps">
<h2>Steps (the last run of each)</h2>
${
  steps.length === 0
    ? '<p class="muted">No step has run yet.</p>'
    : `<table>
<thead><tr><th>Step</th><th>Status</th><th>Started</th><th>Finished</th><th>Detail</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>`
}
</section>`;
}

export function probeSection(probe: ProbeView): string {
  const above = probe.recovered > probe.threshold;
  const fill = above ? '#b42318' : '#1d7a43';
  const rows = probe.matches
    .map(
      (m) => `<tr>
<td><code title="${escapeHtml(m.id)}">${escapeHtml(m.id)}</code></td>
<td>${escapeHtml(m.tier)}</td>
<td class="num">${escapeHtml(formatNumber(m.score))}</td>
</tr>`,
    )
    .join('\n');
  return `<section id="probe">
<h2>Reconstruction probe</h2>
<p>Recovered <strong class="num" id="probe-recovered">${escapeHtml(formatNumber(probe.recovered))}</strong> (${escapeHtml(percent(probe.recovered))}) of the subject's private content; threshold <strong class="num" id="probe-threshold">${escapeHtml(formatNumber(probe.threshold))}</strong> (${escapeHtml(percent(probe.threshold))}).
<span class="verdict" style="color:${fill}">${above ? 'Above the threshold: content is still recoverable.' : 'At or below the threshold.'}</span></p>
<div class="bar" role="img" aria-label="recovered ${escapeHtml(percent(probe.recovered))} against a threshold of ${escapeHtml(percent(probe.threshold))}">
<div class="bar-fill" style="width:${barWidth(probe.recovered)}%;background:${fill}"></div>
<div class="bar-threshold" style="left:${barWidth(probe.threshold)}%" title="threshold"></div>
</div>
<div class="bar-scale"><span>0</span><span>threshold ${escapeHtml(percent(probe.threshold))}</span><span>100%</span></div>
<h3>Records that still carry the subject's content</h3>
${
  probe.matches.length === 0
    ? '<p class="muted">None: no readable record matched the subject\'s fingerprints.</p>'
    : `<table>
<thead><tr><th>Record</th><th>Tier</th><th>Score</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>`
}
${probeSources(probe)}
${dismissalsTable(probe)}
</section>`;
}

/** Where the candidates came from, and how far the index covered the store. */
function probeSources(probe: ProbeView): string {
  if (!probe.examined) return '';
  const e = probe.examined;
  const c = probe.coverage;
  return `<p id="probe-sources">Candidates examined: <span class="num">${e.shingleIndex}</span> from the shingle index, <span class="num">${e.vectorIndex}</span> from the vector index, <span class="num">${e.provenance}</span> from provenance${
    c ? `; index coverage <span class="num">${c.indexed}</span> of <span class="num">${c.stored}</span> stored records` : ''
  }${probe.replica ? ` on replica <code>${escapeHtml(probe.replica)}</code>` : ''}.</p>`;
}

/** Matches a person dismissed: shown as what they are, a human judgement. */
function dismissalsTable(probe: ProbeView): string {
  if (!probe.dismissed?.length) return '';
  const rows = probe.dismissed
    .map(
      (d) => `<tr class="dismissed">
<td><code>${escapeHtml(d.id)}</code></td>
<td>${escapeHtml(d.role)}, ${time(d.at)}</td>
<td>${d.approval ? `${escapeHtml(d.approval.role)}, ${time(d.approval.at)}` : '<span class="muted">ruled before approvals were required</span>'}</td>
<td>${escapeHtml(d.reason)}</td>
<td class="num">${d.score === undefined ? '<span class="muted">no longer matches</span>' : escapeHtml(formatNumber(d.score))}</td>
</tr>`,
    )
    .join('\n');
  return `<h3 id="probe-dismissals">Dismissed by a person and approved by a second (a stated human judgement, not a measurement)</h3>
<p>These records were named by the probe; one person proposed, and a second approved, the ruling that they do not carry the subject's content. They are left out of the recovered figure, and they stay readable.</p>
<table>
<thead><tr><th>Record</th><th>Proposed by</th><th>Approved by</th><th>Reason</th><th>Score</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>`;
}

export function residualsSection(residuals: readonly Residual[]): string {
  const rows = residuals
    .map(
      (r) => `<tr>
<td>${escapeHtml(r.tier)}</td>
<td><code>${escapeHtml(r.kind)}</code></td>
<td>${escapeHtml(r.detail)}</td>
<td class="num">${bound(r.bound)}</td>
<td>${r.until ? time(r.until) : '<span class="muted">no end date</span>'}</td>
</tr>`,
    )
    .join('\n');
  return `<section id="residuals">
<h2>Residuals</h2>
<p class="explain">What remains after the erasure, where, how much at most, and until when. "unbounded" means no bound can honestly be stated.</p>
${
  residuals.length === 0
    ? '<p class="muted">No residual was recorded.</p>'
    : `<table>
<thead><tr><th>Tier</th><th>Kind</th><th>Detail</th><th>Bound</th><th>Until</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>`
}
</section>`;
}

function bound(value: number | string): string {
  if (typeof value === 'number') return escapeHtml(formatNumber(value));
  if (value.trim().toLowerCase() === 'unbounded') {
    return '<strong class="unbounded" title="no bound can be stated">unbounded</strong>';
  }
  return escapeHtml(value);
}

/** Every event in time order (timeline.ts), with its time to the second and its recorded detail. */
export function timelineSection(events: readonly TimelineEvent[]): string {
  const rows = events
    .map(
      (e, i) => `<tr data-kind="${e.kind}" data-at="${escapeHtml(e.at)}" data-seq="${i}">
<td class="when">${when(e.at, true)}</td>
<td>${escapeHtml(e.what)}</td>
<td>${e.detail ? escapeHtml(e.detail) : ''}</td>
</tr>`,
    )
    .join('\n');
  return `<section id="timeline">
<h2>Timeline</h2>
<p class="explain">Every recorded event, in time order (UTC). Nothing is overwritten: an outcome a redaction or a dismissal superseded stays listed.</p>
${
  events.length === 0
    ? '<p class="muted">Nothing has been recorded yet.</p>'
    : `<table id="timeline-table">
<thead><tr><th>When</th><th>What happened</th><th>Detail</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>`
}
</section>`;
}

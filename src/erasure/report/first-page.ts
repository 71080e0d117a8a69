/**
 * The report's first page, for a data-protection officer to read and sign: what was
 * erased and for which request (reason category, legal basis, controller, reference —
 * none of them personal data), the outcome and the history of outcomes with dates in
 * words, what remains (one plain sentence per residual), and the certificate's state.
 * No engine terms here; the glossary at the end explains the technical sections.
 */
import type { ErasureView } from '../view.js';
import { escapeHtml } from './html.js';
import type { OutcomeEntry } from './timeline.js';
import { certificateInWords, completedWithRulings, dateInWords, REASON_IN_WORDS, residualSentence, STATUS_IN_WORDS, STATUS_LABEL } from './words.js';

/** A date in words in a <time>, or the escaped text when it does not parse. */
export function when(iso: string, seconds = false): string {
  const words = dateInWords(iso, { seconds });
  return words ? `<time datetime="${escapeHtml(iso)}">${words}</time>` : escapeHtml(iso);
}

export function firstPage(view: ErasureView, history: readonly OutcomeEntry[]): string {
  const issuedAt = typeof view.certificate?.payload.issuedAt === 'string' ? view.certificate.payload.issuedAt : undefined;
  return `<section id="page-one">
<p class="kicker">Erasure report · for the data-protection officer</p>
<h1>Erasure of personal data: ${escapeHtml(STATUS_LABEL[view.status] ?? view.status).toLowerCase()}</h1>
<p class="lede" id="outcome-sentence">${escapeHtml(outcomeSentence(view))}</p>
<nav class="toc" aria-label="Contents"><a href="#timeline">Timeline</a> · <a href="#technical">Technical detail</a> · <a href="#appendix">Certificate and how to verify it</a> · <a href="#glossary">Glossary</a></nav>
<div class="facts">
${requestBlock(view)}
<h2>What was erased</h2>
<p id="what-erased">${whatErased(view)}</p>
<h2>Outcome</h2>
<dl class="plain">
<dt>Requested</dt><dd id="requested-at">${when(view.createdAt)}</dd>
<dt>Outcome</dt><dd id="outcome">${escapeHtml(STATUS_LABEL[view.status] ?? view.status)}${view.finishedAt ? `, ${when(view.finishedAt)}` : ''}</dd>
<dt>Certificate</dt><dd id="certificate-state">${escapeHtml(certificateInWords(view.certificateState, issuedAt))}</dd>
</dl>
${historyBlock(history)}
<h2>What remains</h2>
${remainsBlock(view)}
</div>
<p class="fine">Erasure <code class="id">${escapeHtml(view.erasureId)}</code>. The person is named here only by a keyed hash; this report holds none of their data. Terms are explained in the <a href="#glossary">glossary</a>.</p>
</section>`;
}

/** The outcome in one sentence: a completion on a ruling says so. */
function outcomeSentence(view: ErasureView): string {
  const ruled = view.readableByRuling?.length ?? 0;
  if (view.status === 'completed' && ruled > 0) return completedWithRulings(ruled);
  return STATUS_IN_WORDS[view.status] ?? view.status;
}

function requestBlock(view: ErasureView): string {
  const r = view.request;
  if (!r) {
    return `<h2>The request</h2>
<p id="request-context" class="muted">${
      view.legalBasis
        ? `Legal basis: ${escapeHtml(view.legalBasis)}. The request gave no reason category, controller or reference.`
        : 'The request gave no reason category, legal basis, controller or reference.'
    }</p>`;
  }
  return `<h2>The request</h2>
<dl class="plain" id="request-context">
<dt>Reason</dt><dd id="request-reason">${escapeHtml(REASON_IN_WORDS[r.reasonCategory] ?? r.reasonCategory)}</dd>
<dt>Legal basis</dt><dd id="request-legal-basis">${escapeHtml(r.legalBasis)}</dd>
<dt>Controller</dt><dd id="request-controller">${escapeHtml(r.controller)}</dd>
<dt>Controller's reference</dt><dd id="request-reference">${escapeHtml(r.reference)}</dd>
</dl>`;
}

function whatErased(view: ErasureView): string {
  const hash = `<code class="hash">${escapeHtml(view.subjectHash)}</code>`;
  if (view.scope === 'records') {
    const n = view.entryIds?.length ?? 0;
    return `${n} ${n === 1 ? 'entry' : 'entries'} of the person with keyed hash ${hash} were forgotten; the person's other data stays, under a new key.`;
  }
  return `All data of the person with keyed hash ${hash}: their key was destroyed, which makes every copy of their data unreadable, and everything derived from it was rebuilt without them.`;
}

function historyBlock(history: readonly OutcomeEntry[]): string {
  if (history.length === 0) return '<p id="outcome-history" class="muted">No outcome yet.</p>';
  const items = history.map((h) => {
    const label =
      h.kind === 'outcome'
        ? escapeHtml(STATUS_LABEL[h.status ?? 'running'] ?? String(h.status))
        : h.kind === 'reopened'
          ? `Re-opened${h.detail ? `: ${escapeHtml(h.detail)}` : ''}`
          : 'Certificate made final';
    return `<li data-kind="${h.kind}"${h.status ? ` data-status="${escapeHtml(h.status)}"` : ''}>${when(h.at, true)} — ${label}</li>`;
  });
  return `<h3>Outcome history</h3>
<ol id="outcome-history">
${items.join('\n')}
</ol>`;
}

function remainsBlock(view: ErasureView): string {
  if (view.residuals.length === 0) return '<p id="remains" class="muted">Nothing was recorded as remaining.</p>';
  const items = view.residuals.map((r) => `<li>${escapeHtml(residualSentence(r, { scope: view.scope }))}</li>`);
  return `<ul id="remains">
${items.join('\n')}
</ul>`;
}

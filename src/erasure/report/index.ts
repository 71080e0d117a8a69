/**
 * The erasure report: one self-contained HTML5 document a data-protection officer
 * reads and signs for one erasure (`GET /v1/erasures/{id}/report`). Page one is plain
 * language (the request, what was erased, the outcome and its history with dates in
 * words, what remains in one sentence each, the certificate's state); then the
 * timeline (every event in time order), the technical detail, the glossary, and an
 * appendix with the certificate's JSON and how to verify it, each printed from a new
 * A4 page. It draws only what `ErasureView` and the transition rows hold — ids, counts,
 * hashes, the request's context (never personal data), never subject content — and
 * works offline: inline CSS, an inline SVG provenance graph laid out by dagre, no
 * script, no external resource, and a Content-Security-Policy that forbids loading any.
 *
 * Every string taken from the view passes through `escapeHtml`, ids and details
 * included: a detail sentence or a certificate payload is data, never markup.
 *
 * This file assembles the document and is the module's public face; the parts live
 * beside it, one job each: `html.ts` (escaping and number/time formatting), `words.ts`
 * (dates, reasons, statuses and residuals in plain words), `timeline.ts` (events in
 * time order, the outcome history), `first-page.ts`, `sections.ts` (timeline table,
 * summary, steps, probe, residuals), `appendix.ts` (certificate JSON, verification),
 * `glossary.ts`, `style.ts` (colours, explanatory sentences, the screen and print
 * stylesheet), `layout.ts` (dagre layout of the provenance graph), `svg.ts` (drawing
 * it) and `graph-section.ts` (the graph's section around the drawing).
 */
import type { ErasureView } from '../view.js';
import type { ErasureTransition } from '../view.js';
import { appendix } from './appendix.js';
import { firstPage } from './first-page.js';
import { glossarySection } from './glossary.js';
import { graphSection } from './graph-section.js';
import { escapeHtml, time } from './html.js';
import { probeSection, residualsSection, stepsSection, summary, timelineSection } from './sections.js';
import { CSS } from './style.js';
import { buildTimeline, outcomeHistory } from './timeline.js';

export { escapeHtml, shortId } from './html.js';
export { type GraphLayout, layoutGraph, MAX_GRAPH_NODES, NODE_HEIGHT, NODE_WIDTH } from './layout.js';
export { buildTimeline, describeTransition, type OutcomeEntry, outcomeHistory, type TimelineEvent } from './timeline.js';
export { certificateInWords, dateInWords, REASON_IN_WORDS, residualSentence } from './words.js';
export { CLASS_MEANING, type NodeStyle, type NodeStyleName, NODE_STYLES, nodeStyleName } from './style.js';

export interface RenderReportOptions {
  /** When the report was generated (default: now). */
  readonly generatedAt?: Date;
  /**
   * Every transition row of the erasure, oldest first (ErasureEngine.allTransitions):
   * the timeline and the outcome history. Without them both hold only the dismissals.
   */
  readonly transitions?: readonly ErasureTransition[];
}

/** The Content-Security-Policy of the report, in its <meta> and in the route's header: nothing may load, only inline style. */
export const REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

export function renderReport(view: ErasureView, options: RenderReportOptions = {}): string {
  const generatedAt = options.generatedAt ?? new Date();
  const id = escapeHtml(view.erasureId);
  const timeline = buildTimeline(view, options.transitions ?? []);
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${REPORT_CSP}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Erasure report ${id}</title>
<style>${CSS}</style>
</head>
<body>
<main>
${firstPage(view, outcomeHistory(timeline))}
${timelineSection(timeline)}
<section id="technical">
<h2>Technical detail</h2>
<p class="explain">Erasure <code class="id">${id}</code>, as the engine recorded it.</p>
${summary(view, generatedAt)}
${stepsSection(view.steps)}
${probeSection(view.probe)}
${residualsSection(view.residuals)}
${graphSection(view.graph)}
</section>
${glossarySection()}
${appendix(view.erasureId, view.certificate, view.certificateState)}
<footer>Generated ${time(generatedAt.toISOString())} by lethe. Records are named by id and the person only by a keyed hash; this report holds no personal data.</footer>
</main>
</body>
</html>
`;
}

/**
 * The erasure report: one self-contained HTML5 document a data-protection officer
 * reads for one erasure (`GET /v1/erasures/{id}/report`). It draws only what
 * `ErasureView` holds — ids, counts, hashes, never subject content — and works
 * offline: inline CSS, an inline SVG provenance graph laid out by dagre, no script,
 * no external resource, and a Content-Security-Policy that forbids loading any.
 *
 * Every string taken from the view passes through `escapeHtml`, ids and details
 * included: a detail sentence or a certificate payload is data, never markup.
 *
 * This file assembles the document and is the module's public face; the parts live
 * beside it, one job each: `html.ts` (escaping and number/time formatting), `style.ts`
 * (colours, explanatory sentences, the stylesheet), `sections.ts` (summary, timeline,
 * probe, residuals, certificate), `layout.ts` (dagre layout of the provenance graph),
 * `svg.ts` (drawing it) and `graph-section.ts` (the graph's section around the drawing).
 */
import type { ErasureView } from '../view.js';
import { graphSection } from './graph-section.js';
import { escapeHtml, time } from './html.js';
import { certificateSection, probeSection, residualsSection, stepsSection, summary } from './sections.js';
import { CSS } from './style.js';

export { escapeHtml, shortId } from './html.js';
export { type GraphLayout, layoutGraph, MAX_GRAPH_NODES, NODE_HEIGHT, NODE_WIDTH } from './layout.js';
export { CLASS_MEANING, type NodeStyle, type NodeStyleName, NODE_STYLES, nodeStyleName } from './style.js';

export interface RenderReportOptions {
  /** When the report was generated (default: now). */
  readonly generatedAt?: Date;
}

export function renderReport(view: ErasureView, options: RenderReportOptions = {}): string {
  const generatedAt = options.generatedAt ?? new Date();
  const id = escapeHtml(view.erasureId);
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Erasure report ${id}</title>
<style>${CSS}</style>
</head>
<body>
<main>
<header>
<h1>Erasure report <code class="id">${id}</code></h1>
${summary(view, generatedAt)}
</header>
${stepsSection(view.steps)}
${probeSection(view.probe)}
${residualsSection(view.residuals)}
${certificateSection(view.certificate, view.certificateState)}
${graphSection(view.graph)}
<footer>Generated ${time(generatedAt.toISOString())} by lethe. Records are named by id and the subject only by its keyed hash; this report holds no subject content.</footer>
</main>
</body>
</html>
`;
}

/**
 * How the report looks: the colours of node boxes, edges, status and step badges, the
 * words that explain a status or an erasure class, and the page's inline stylesheet.
 */
import type { ErasureClass, ErasureStatus, StepStatus } from '../machine.js';
import type { GraphNode } from '../view.js';

export type NodeStyleName = 'entry-erased' | 'entry' | 'artifact-regenerated' | 'artifact-removed' | 'artifact-unchanged' | 'artifact-unknown';

export interface NodeStyle {
  readonly fill: string;
  readonly stroke: string;
  readonly label: string;
  readonly dashed: boolean;
}

/** Fill colours are distinct and never the page background, so a screenshot can count them. */
export const NODE_STYLES: { readonly [K in NodeStyleName]: NodeStyle } = {
  'entry-erased': { fill: '#f8d3cf', stroke: '#b42318', label: "the erased subject's entry", dashed: true },
  entry: { fill: '#d8e4f2', stroke: '#3d5a80', label: "another subject's entry", dashed: false },
  'artifact-regenerated': { fill: '#cfeeda', stroke: '#1d7a43', label: 'artifact regenerated (new version from surviving sources)', dashed: false },
  'artifact-removed': { fill: '#f5deb9', stroke: '#9a5b0c', label: 'artifact removed (no surviving source)', dashed: true },
  'artifact-unchanged': { fill: '#e4e4e4', stroke: '#5c5c5c', label: 'artifact unchanged', dashed: false },
  'artifact-unknown': { fill: '#e9e3f5', stroke: '#6b5b95', label: 'artifact, outcome not yet known', dashed: true },
};

/** Edges out of the erased subject's entries, and every other edge. */
export const ERASED_EDGE = '#b42318';
export const PLAIN_EDGE = '#6b7280';

export const STATUS_COLOURS: { readonly [K in ErasureStatus]: { readonly bg: string; readonly fg: string } } = {
  completed: { bg: '#1d7a43', fg: '#ffffff' },
  incomplete: { bg: '#b25e00', fg: '#ffffff' },
  failed: { bg: '#b42318', fg: '#ffffff' },
  pending: { bg: '#6b7280', fg: '#ffffff' },
  running: { bg: '#1d5fb4', fg: '#ffffff' },
};

export const STATUS_MEANING: { readonly [K in ErasureStatus]: string } = {
  completed: 'Every step finished and the reconstruction probe recovered no more than the threshold.',
  incomplete: 'The erasure ran, but something survives or cannot be bounded: see the probe and the residuals.',
  failed: 'A step failed and the erasure did not finish.',
  pending: 'The erasure is queued; no step has run yet.',
  running: 'The erasure is in progress; this report is a snapshot.',
};

export const STEP_COLOURS: { readonly [K in StepStatus]: { readonly bg: string; readonly fg: string } } = {
  done: { bg: '#1d7a43', fg: '#ffffff' },
  failed: { bg: '#b42318', fg: '#ffffff' },
  running: { bg: '#1d5fb4', fg: '#ffffff' },
  pending: { bg: '#e5e7eb', fg: '#374151' },
  skipped: { bg: '#e5e7eb', fg: '#374151' },
};

export const CLASS_MEANING: { readonly [K in ErasureClass]: { readonly name: string; readonly sentence: string } } = {
  A: {
    name: 'row-only',
    sentence: "No derived artifact depends on the subject's records, so destroying the subject's key and deleting its rows erases it.",
  },
  B: {
    name: 'cascading',
    sentence:
      "Derived artifacts (summaries, facts, digests) were built from the subject's records, so each is regenerated from surviving sources or removed when none survive.",
  },
  C: {
    name: 'parametric',
    sentence: 'A record of the subject is in a registered training corpus, so a residual may remain in model weights that deleting rows and keys cannot reach.',
  },
};

/** Which of NODE_STYLES a graph node is drawn in. */
export function nodeStyleName(node: GraphNode): NodeStyleName {
  if (node.type === 'entry') return node.erasedSubject ? 'entry-erased' : 'entry';
  switch (node.outcome) {
    case 'regenerated':
      return 'artifact-regenerated';
    case 'removed':
      return 'artifact-removed';
    case 'unchanged':
      return 'artifact-unchanged';
    default:
      return 'artifact-unknown';
  }
}

/** The page's one stylesheet, inlined in a <style> (the Content-Security-Policy allows inline style and nothing else). */
export const CSS = `
*{box-sizing:border-box}
body{margin:0;background:#ffffff;color:#111827;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:1.5rem;margin:0 0 16px}
h2{font-size:1.2rem;margin:32px 0 8px;border-bottom:1px solid #e5e7eb;padding-bottom:4px}
h3{font-size:1rem;margin:16px 0 6px}
code,pre{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:.85rem}
code.wrap,code.hash{word-break:break-all}
pre{background:#f3f4f6;border:1px solid #e5e7eb;border-radius:6px;padding:12px;overflow:auto;white-space:pre-wrap;word-break:break-word}
dl.summary,dl.cert{display:grid;grid-template-columns:max-content 1fr;gap:6px 16px;margin:0}
dt{font-weight:600;color:#374151}
dd{margin:0}
.badge{display:inline-block;padding:1px 8px;border-radius:999px;font-size:.8rem;font-weight:600;text-transform:uppercase;letter-spacing:.03em}
.class-badge{display:inline-block;padding:1px 8px;border:1px solid #9ca3af;border-radius:6px;font-weight:600}
.explain{margin:4px 0;color:#4b5563;font-size:.9rem}
.muted{color:#6b7280}
.warn{background:#fff7e6;border-left:4px solid #b25e00;padding:6px 10px}
.unbounded{color:#b42318}
table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{border:1px solid #e5e7eb;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f9fafb}
td.num,.num{font-variant-numeric:tabular-nums}
.bar{position:relative;height:18px;background:#e5e7eb;border-radius:4px;max-width:600px;overflow:hidden}
.bar-fill{position:absolute;left:0;top:0;bottom:0}
.bar-threshold{position:absolute;top:0;bottom:0;width:2px;background:#111827}
.bar-scale{display:flex;justify-content:space-between;max-width:600px;font-size:.75rem;color:#6b7280}
.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:6px 18px;font-size:.85rem}
.legend li{display:flex;align-items:center;gap:6px}
.swatch{display:inline-block;width:22px;height:14px;border-radius:3px}
.swatch.line{height:0;border-radius:0}
.graph-wrap{overflow:auto;border:1px solid #e5e7eb;border-radius:6px;background:#ffffff}
#provenance-graph{display:block}
footer{margin-top:40px;color:#6b7280;font-size:.8rem}
#page-one{border-bottom:3px double #d1d5db;padding-bottom:16px}
#page-one h1{font-size:1.7rem;margin:4px 0 8px}
#page-one h2{font-size:1.05rem;margin:18px 0 6px;border-bottom:none;padding:0;color:#1f2937}
#page-one h3{font-size:.95rem;margin:12px 0 4px}
.kicker{margin:0;color:#6b7280;font-size:.8rem;text-transform:uppercase;letter-spacing:.06em}
.lede{font-size:1.08rem;margin:0 0 10px}
.toc{font-size:.85rem;margin:0 0 8px}
.toc a,.fine a{color:#1d5fb4}
dl.plain{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0}
#outcome-history,#remains{margin:4px 0;padding-left:22px}
#outcome-history li,#remains li{margin:2px 0}
.fine{color:#4b5563;font-size:.8rem;margin-top:14px}
#timeline-table td.when{white-space:nowrap}
dl.glossary dt{margin-top:6px}
#verify-steps li{margin:4px 0}
@page{size:A4;margin:16mm 15mm}
@media print{
body{font:10.5pt/1.45 "DejaVu Serif",Georgia,"Times New Roman",serif;color:#000}
main{max-width:none;padding:0}
nav,.toc{display:none}
a{color:inherit;text-decoration:none}
#page-one{border-bottom:none}
#timeline,#technical,#glossary,#appendix{break-before:page}
h2,h3{break-after:avoid}
tr,li,dl.plain{break-inside:avoid}
table{font-size:9pt}
pre{font-size:7.5pt;background:none;border:1px solid #9ca3af}
.graph-wrap{overflow:visible;border:none}
#provenance-graph{max-width:100%;height:auto}
.badge,.bar-fill{-webkit-print-color-adjust:exact;print-color-adjust:exact}
}
`;

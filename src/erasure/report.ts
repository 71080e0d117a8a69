/**
 * The erasure report: one self-contained HTML5 document a data-protection officer
 * reads for one erasure (`GET /v1/erasures/{id}/report`). It draws only what
 * `ErasureView` holds — ids, counts, hashes, never subject content — and works
 * offline: inline CSS, an inline SVG provenance graph laid out by dagre, no script,
 * no external resource, and a Content-Security-Policy that forbids loading any.
 *
 * Every string taken from the view passes through `escapeHtml`, ids and details
 * included: a detail sentence or a certificate payload is data, never markup.
 */
import dagre from '@dagrejs/dagre';
import type {
  CertificateView,
  ErasureClass,
  ErasureGraph,
  ErasureStatus,
  ErasureView,
  GraphNode,
  ProbeView,
  Residual,
  StepStatus,
  StepView,
} from './types.js';

export interface RenderReportOptions {
  /** When the report was generated (default: now). */
  readonly generatedAt?: Date;
}

/** The most graph nodes drawn; past it the report says how many were left out. */
export const MAX_GRAPH_NODES = 300;

/** The size of a node box in the provenance graph (SVG user units). */
export const NODE_WIDTH = 168;
export const NODE_HEIGHT = 40;

export type NodeStyleName =
  | 'entry-erased'
  | 'entry'
  | 'artifact-regenerated'
  | 'artifact-removed'
  | 'artifact-unchanged'
  | 'artifact-unknown';

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

const ERASED_EDGE = '#b42318';
const PLAIN_EDGE = '#6b7280';

const STATUS_COLOURS: { readonly [K in ErasureStatus]: { readonly bg: string; readonly fg: string } } = {
  completed: { bg: '#1d7a43', fg: '#ffffff' },
  incomplete: { bg: '#b25e00', fg: '#ffffff' },
  failed: { bg: '#b42318', fg: '#ffffff' },
  pending: { bg: '#6b7280', fg: '#ffffff' },
  running: { bg: '#1d5fb4', fg: '#ffffff' },
};

const STATUS_MEANING: { readonly [K in ErasureStatus]: string } = {
  completed: 'Every step finished and the reconstruction probe recovered no more than the threshold.',
  incomplete: 'The erasure ran, but something survives or cannot be bounded: see the probe and the residuals.',
  failed: 'A step failed and the erasure did not finish.',
  pending: 'The erasure is queued; no step has run yet.',
  running: 'The erasure is in progress; this report is a snapshot.',
};

const STEP_COLOURS: { readonly [K in StepStatus]: { readonly bg: string; readonly fg: string } } = {
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
    sentence:
      "A record of the subject is in a registered training corpus, so a residual may remain in model weights that deleting rows and keys cannot reach.",
  },
};

/** Escapes text for HTML element content and quoted attribute values (and SVG, which parses the same way here). */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

const ESCAPES: { readonly [c: string]: string } = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** `entry_Ab12…`: the type prefix and four characters; the full id goes in a title. */
export function shortId(id: string): string {
  if (id.length <= 12) return id;
  const cut = id.indexOf('_');
  if (cut > 0 && cut <= 10) return `${id.slice(0, cut + 5)}…`;
  return `${id.slice(0, 10)}…`;
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

function summary(view: ErasureView, generatedAt: Date): string {
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

function stepsSection(steps: readonly StepView[]): string {
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
<h2>Timeline</h2>
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

function probeSection(probe: ProbeView): string {
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
</section>`;
}

function residualsSection(residuals: readonly Residual[]): string {
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

function certificateSection(cert: CertificateView | undefined, state: 'provisional' | 'final' | undefined): string {
  const stateLine = state
    ? `<p><span class="badge cert-state" data-state="${escapeHtml(state)}" style="${state === 'final' ? 'background:#1d7a43;color:#fff' : 'background:#b25e00;color:#fff'}">${escapeHtml(state)}</span> ${
        state === 'final'
          ? 'Final: the key epoch that held the last wrapped copy of the subject\'s key has retired.'
          : 'Provisional until the key epoch holding the last wrapped copy of the subject\'s key retires; then it becomes final.'
      }</p>`
    : '';
  if (!cert) {
    return `<section id="certificate">
<h2>Certificate</h2>
${stateLine}
<p class="muted">No certificate has been issued for this erasure yet.</p>
</section>`;
  }
  return `<section id="certificate">
<h2>Certificate</h2>
${stateLine}
<p class="explain">Ed25519 over the canonical JSON of the payload; it verifies offline with <code>lethe certificate verify</code> and the public key alone.</p>
<dl class="cert">
<dt>Public key</dt><dd><code class="wrap">${escapeHtml(cert.publicKey)}</code></dd>
<dt>Signature</dt><dd><code class="wrap">${escapeHtml(cert.signature)}</code></dd>
</dl>
<h3>Payload</h3>
<pre id="certificate-payload">${escapeHtml(prettyJson(cert.payload))}</pre>
</section>`;
}

function prettyJson(value: unknown): string {
  try {
    return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2) ?? 'null';
  } catch {
    return '(the payload could not be written as JSON)';
  }
}

// --- the provenance graph -----------------------------------------------------

interface LaidOutNode {
  readonly node: GraphNode;
  readonly x: number;
  readonly y: number;
}

interface LaidOutEdge {
  readonly from: string;
  readonly to: string;
  readonly points: readonly { x: number; y: number }[];
  readonly erased: boolean;
}

export interface GraphLayout {
  readonly width: number;
  readonly height: number;
  /** Node centres. */
  readonly nodes: readonly LaidOutNode[];
  readonly edges: readonly LaidOutEdge[];
  /** Nodes in the view that were not drawn (past MAX_GRAPH_NODES). */
  readonly omittedNodes: number;
  /** Edges not drawn: an end was left out, unknown, or the edge was a loop. */
  readonly omittedEdges: number;
}

const MARGIN = 16;

/** Lays out at most MAX_GRAPH_NODES nodes, sources left, derived artifacts right. */
export function layoutGraph(graph: ErasureGraph): GraphLayout {
  const unique = new Map<string, GraphNode>();
  for (const n of graph.nodes) if (!unique.has(n.id)) unique.set(n.id, n);
  const drawn = [...unique.values()].slice(0, MAX_GRAPH_NODES);
  const drawnIds = new Set(drawn.map((n) => n.id));

  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: 'LR', nodesep: 14, ranksep: 64, edgesep: 10, marginx: MARGIN, marginy: MARGIN });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of drawn) g.setNode(n.id, { width: NODE_WIDTH, height: NODE_HEIGHT });
  const edgeKeys = new Set<string>();
  let omittedEdges = 0;
  for (const e of graph.edges) {
    const key = `${e.from}\u0000${e.to}`;
    if (edgeKeys.has(key)) continue;
    edgeKeys.add(key);
    if (e.from === e.to || !drawnIds.has(e.from) || !drawnIds.has(e.to)) {
      omittedEdges++;
      continue;
    }
    g.setEdge(e.from, e.to, {});
  }
  if (drawn.length > 0) dagre.layout(g);

  const nodes: LaidOutNode[] = drawn.map((node) => {
    const label = g.node(node.id);
    return { node, x: label?.x ?? 0, y: label?.y ?? 0 };
  });
  const erasedIds = new Set(drawn.filter((n) => n.type === 'entry' && n.erasedSubject).map((n) => n.id));
  const edges: LaidOutEdge[] = g.edges().map((e) => ({
    from: e.v,
    to: e.w,
    points: g.edge(e.v, e.w)?.points ?? [],
    erased: erasedIds.has(e.v),
  }));

  // Shift everything so the drawing starts at (MARGIN, MARGIN) whatever dagre's origin,
  // and size the canvas from what is actually drawn (edge bends included).
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  for (const n of nodes) {
    minX = Math.min(minX, n.x - NODE_WIDTH / 2);
    maxX = Math.max(maxX, n.x + NODE_WIDTH / 2);
    minY = Math.min(minY, n.y - NODE_HEIGHT / 2);
    maxY = Math.max(maxY, n.y + NODE_HEIGHT / 2);
  }
  for (const e of edges) {
    for (const p of e.points) {
      minX = Math.min(minX, p.x);
      maxX = Math.max(maxX, p.x);
      minY = Math.min(minY, p.y);
      maxY = Math.max(maxY, p.y);
    }
  }
  if (nodes.length === 0) return { width: 0, height: 0, nodes, edges: [], omittedNodes: 0, omittedEdges };
  const dx = MARGIN - minX;
  const dy = MARGIN - minY;
  return {
    width: Math.ceil(maxX - minX + 2 * MARGIN),
    height: Math.ceil(maxY - minY + 2 * MARGIN),
    nodes: nodes.map((n) => ({ node: n.node, x: n.x + dx, y: n.y + dy })),
    edges: edges.map((e) => ({ ...e, points: e.points.map((p) => ({ x: p.x + dx, y: p.y + dy })) })),
    omittedNodes: unique.size - drawn.length,
    omittedEdges,
  };
}

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

function graphSection(graph: ErasureGraph): string {
  if (graph.nodes.length === 0) {
    return `<section id="graph">
<h2>Provenance graph</h2>
<p id="graph-empty">No derived artifacts were affected (class A)</p>
${graph.truncated ? '<p class="warn">The graph was cut when it was captured; it may not be complete.</p>' : ''}
</section>`;
  }
  const layout = layoutGraph(graph);
  const notes: string[] = [];
  if (layout.omittedNodes > 0) {
    notes.push(
      `Only the first ${MAX_GRAPH_NODES} nodes are drawn; ${layout.omittedNodes} ${layout.omittedNodes === 1 ? 'node was' : 'nodes were'} left out, with the edges that touch them.`,
    );
  }
  if (graph.truncated) {
    notes.push('The graph was cut at its node limit when it was captured: more records were affected than it holds.');
  }
  const counts = countNodes(graph.nodes);
  return `<section id="graph">
<h2>Provenance graph</h2>
<p class="explain">Each arrow runs from a source (an entry or an artifact) to the artifact derived from it. ${counts}</p>
${notes.map((n) => `<p class="warn" data-note="truncated">${escapeHtml(n)}</p>`).join('\n')}
${legend()}
<div class="graph-wrap">
${svg(layout)}
</div>
</section>`;
}

function countNodes(nodes: readonly GraphNode[]): string {
  let entries = 0;
  let erased = 0;
  const outcomes = { regenerated: 0, removed: 0, unchanged: 0 };
  let artifacts = 0;
  for (const n of nodes) {
    if (n.type === 'entry') {
      entries++;
      if (n.erasedSubject) erased++;
    } else {
      artifacts++;
      if (n.outcome && n.outcome in outcomes) outcomes[n.outcome]++;
    }
  }
  return `${entries} ${entries === 1 ? 'entry' : 'entries'} (${erased} of the erased subject) and ${artifacts} ${artifacts === 1 ? 'artifact' : 'artifacts'}: ${outcomes.regenerated} regenerated, ${outcomes.removed} removed, ${outcomes.unchanged} unchanged.`;
}

function legend(): string {
  const items = (Object.keys(NODE_STYLES) as NodeStyleName[]).map((k) => {
    const s = NODE_STYLES[k];
    return `<li><span class="swatch" style="background:${s.fill};border:2px ${s.dashed ? 'dashed' : 'solid'} ${s.stroke}"></span>${escapeHtml(s.label)}</li>`;
  });
  items.push(`<li><span class="swatch line" style="border-top:2px solid ${ERASED_EDGE}"></span>derived from the erased subject's entry</li>`);
  items.push(`<li><span class="swatch line" style="border-top:2px solid ${PLAIN_EDGE}"></span>derived from another source</li>`);
  return `<ul class="legend" id="graph-legend">${items.join('')}</ul>`;
}

function svg(layout: GraphLayout): string {
  const edges = layout.edges
    .map((e) => {
      const d = basisPath(e.points);
      const colour = e.erased ? ERASED_EDGE : PLAIN_EDGE;
      return `<path class="edge" data-from="${escapeHtml(e.from)}" data-to="${escapeHtml(e.to)}" d="${d}" fill="none" stroke="${colour}" stroke-width="1.5" marker-end="url(#${e.erased ? 'arrow-erased' : 'arrow'})"/>`;
    })
    .join('\n');
  const nodes = layout.nodes.map((n) => nodeSvg(n)).join('\n');
  return `<svg id="provenance-graph" role="img" aria-labelledby="provenance-graph-title" viewBox="0 0 ${layout.width} ${layout.height}" width="${layout.width}" height="${layout.height}" font-family="ui-monospace, 'DejaVu Sans Mono', Menlo, Consolas, monospace" font-size="11">
<title id="provenance-graph-title">Provenance graph: ${layout.nodes.length} nodes, ${layout.edges.length} edges</title>
<defs>
<marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="${PLAIN_EDGE}"/></marker>
<marker id="arrow-erased" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="${ERASED_EDGE}"/></marker>
</defs>
<g class="edges">
${edges}
</g>
<g class="nodes">
${nodes}
</g>
</svg>`;
}

function nodeSvg({ node, x, y }: LaidOutNode): string {
  const styleName = nodeStyleName(node);
  const s = NODE_STYLES[styleName];
  const left = x - NODE_WIDTH / 2;
  const top = y - NODE_HEIGHT / 2;
  const struck = styleName === 'entry-erased' || styleName === 'artifact-removed';
  const second =
    node.type === 'entry'
      ? node.erasedSubject
        ? 'entry · erased subject'
        : 'entry'
      : `${clip(node.kind ?? 'artifact', 14)} · ${node.outcome ?? 'pending'}`;
  return `<g class="node" data-id="${escapeHtml(node.id)}" data-type="${escapeHtml(node.type)}" data-style="${styleName}">
<title>${escapeHtml(node.id)}${node.kind ? ` (${escapeHtml(node.kind)})` : ''}${node.type === 'entry' && node.erasedSubject ? ' — the erased subject' : node.outcome ? ` — ${escapeHtml(node.outcome)}` : ''}</title>
<rect x="${num(left)}" y="${num(top)}" width="${NODE_WIDTH}" height="${NODE_HEIGHT}" rx="5" fill="${s.fill}" stroke="${s.stroke}" stroke-width="1.5"${s.dashed ? ' stroke-dasharray="5 3"' : ''}/>
<text x="${num(x)}" y="${num(top + 16)}" text-anchor="middle" fill="#111827"${struck ? ' text-decoration="line-through"' : ''}>${escapeHtml(shortId(node.id))}</text>
<text x="${num(x)}" y="${num(top + 31)}" text-anchor="middle" fill="#4b5563" font-size="10">${escapeHtml(second)}</text>
</g>`;
}

/**
 * A uniform B-spline through dagre's edge points (d3's curveBasis, as dagre-d3 draws):
 * it starts on the source's border, ends on the target's, and stays inside the convex
 * hull of the points, so inside the canvas.
 */
function basisPath(points: readonly { x: number; y: number }[]): string {
  const p = points.filter((q) => Number.isFinite(q.x) && Number.isFinite(q.y));
  if (p.length === 0) return '';
  const pt = (x: number, y: number) => `${num(x)},${num(y)}`;
  const parts = [`M${pt(p[0]!.x, p[0]!.y)}`];
  if (p.length === 2) parts.push(`L${pt(p[1]!.x, p[1]!.y)}`);
  if (p.length > 2) {
    parts.push(`L${pt((5 * p[0]!.x + p[1]!.x) / 6, (5 * p[0]!.y + p[1]!.y) / 6)}`);
    for (let i = 2; i <= p.length; i++) {
      const a = p[i - 2]!;
      const b = p[i - 1]!;
      const c = p[Math.min(i, p.length - 1)]!;
      parts.push(
        `C${pt((2 * a.x + b.x) / 3, (2 * a.y + b.y) / 3)} ${pt((a.x + 2 * b.x) / 3, (a.y + 2 * b.y) / 3)} ${pt((a.x + 4 * b.x + c.x) / 6, (a.y + 4 * b.y + c.y) / 6)}`,
      );
    }
    const last = p.at(-1)!;
    parts.push(`L${pt(last.x, last.y)}`);
  }
  return parts.join(' ');
}

// --- formatting ----------------------------------------------------------------

function num(n: number): string {
  return Number.isFinite(n) ? String(Math.round(n * 10) / 10) : '0';
}

function clip(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

function formatNumber(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  return String(Number(n.toPrecision(6)));
}

function percent(fraction: number): string {
  if (!Number.isFinite(fraction)) return String(fraction);
  return `${(fraction * 100).toFixed(1)}%`;
}

function barWidth(fraction: number): string {
  if (!Number.isFinite(fraction)) return '0';
  return String(Math.round(Math.min(1, Math.max(0, fraction)) * 1000) / 10);
}

/** An ISO time as `2026-11-30 12:00:01 UTC` in a <time>, or the raw text when it does not parse. */
function time(iso: string): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return escapeHtml(iso);
  const shown = `${new Date(t).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
  return `<time datetime="${escapeHtml(iso)}">${shown}</time>`;
}

const CSS = `
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
@media print{.graph-wrap{overflow:visible}main{max-width:none}}
`;

/**
 * The report's provenance-graph section: what the graph holds in words, a note when
 * nodes were left out or the captured graph was already cut, the colour legend, and
 * the SVG drawing (laid out by `layout.ts`, drawn by `svg.ts`).
 */
import type { ErasureGraph, GraphNode } from '../view.js';
import { escapeHtml } from './html.js';
import { layoutGraph, MAX_GRAPH_NODES } from './layout.js';
import { ERASED_EDGE, NODE_STYLES, type NodeStyleName, PLAIN_EDGE } from './style.js';
import { svg } from './svg.js';

export function graphSection(graph: ErasureGraph): string {
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

/**
 * The provenance graph drawn as inline SVG from a finished layout: one box per node in
 * its NODE_STYLES colours, one curved arrow per edge (red out of the erased subject's
 * entries). Ids and kinds are escaped; coordinates are rounded to a tenth.
 */
import { clip, escapeHtml, num, shortId } from './html.js';
import { type GraphLayout, type LaidOutNode, NODE_HEIGHT, NODE_WIDTH } from './layout.js';
import { ERASED_EDGE, NODE_STYLES, nodeStyleName, PLAIN_EDGE } from './style.js';

export function svg(layout: GraphLayout): string {
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
    node.type === 'entry' ? (node.erasedSubject ? 'entry · erased subject' : 'entry') : `${clip(node.kind ?? 'artifact', 14)} · ${node.outcome ?? 'pending'}`;
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

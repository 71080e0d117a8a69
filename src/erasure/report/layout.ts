/**
 * Where the provenance graph's boxes and arrows go: at most MAX_GRAPH_NODES nodes of
 * the view's graph, laid out left to right by dagre, then shifted and sized so that
 * everything drawn sits inside the canvas. Drawing it is `svg.ts`'s job. dagre's types
 * are declared in `dagre.d.ts` beside this file (the package's own do not resolve).
 */
import dagre from '@dagrejs/dagre';
import type { ErasureGraph, GraphNode } from '../view.js';

/** The most graph nodes drawn; past it the report says how many were left out. */
export const MAX_GRAPH_NODES = 300;

/** The size of a node box in the provenance graph (SVG user units). */
export const NODE_WIDTH = 168;
export const NODE_HEIGHT = 40;

export interface LaidOutNode {
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

/**
 * The part of `@dagrejs/dagre` (3.x) that the erasure report uses.
 *
 * Why a local declaration: the package ships `dist/types/index.d.ts`, but its relative
 * imports have no file extension (`'./lib/layout'`), which NodeNext resolution refuses
 * inside an ESM package, so every export (`graphlib`, `layout`, the label types)
 * silently becomes `any` under this project's tsconfig. This ambient module replaces
 * those types; the runtime is the package's own `dist/dagre.esm.js`.
 */
declare module '@dagrejs/dagre' {
  export interface Point {
    x: number;
    y: number;
  }

  export interface GraphLabel {
    rankdir?: 'TB' | 'BT' | 'LR' | 'RL';
    align?: 'UL' | 'UR' | 'DL' | 'DR';
    nodesep?: number;
    edgesep?: number;
    ranksep?: number;
    marginx?: number;
    marginy?: number;
    ranker?: 'network-simplex' | 'tight-tree' | 'longest-path';
    /** Set by layout(). */
    width?: number;
    /** Set by layout(). */
    height?: number;
  }

  export interface NodeLabel {
    width: number;
    height: number;
    /** The centre, set by layout(). */
    x?: number;
    y?: number;
  }

  export interface EdgeLabel {
    minlen?: number;
    weight?: number;
    /** From the source's border to the target's, set by layout(). */
    points?: Point[];
  }

  export interface Edge {
    v: string;
    w: string;
    name?: string;
  }

  export class Graph<G = GraphLabel, N = NodeLabel, E = EdgeLabel> {
    constructor(options?: { directed?: boolean; multigraph?: boolean; compound?: boolean });
    setGraph(label: G): this;
    graph(): G;
    setDefaultEdgeLabel(label: () => E): this;
    setNode(v: string, label: N): this;
    hasNode(v: string): boolean;
    node(v: string): N | undefined;
    nodes(): string[];
    setEdge(v: string, w: string, label?: E): this;
    edge(v: string, w: string): E | undefined;
    edges(): Edge[];
  }

  export const graphlib: { Graph: typeof Graph };
  export function layout(graph: Graph<GraphLabel, NodeLabel, EdgeLabel>): void;
  export const version: string;

  const dagre: { graphlib: typeof graphlib; layout: typeof layout; version: string };
  export default dagre;
}

/**
 * The provenance graph of what an erasure affected, for the report: drawn at
 * classification from the affected artifacts and their direct sources (bounded),
 * and marked after the cascade with each artifact's outcome against its version then.
 */
import type { ArtifactService } from '../artifacts/service.js';
import type { ErasureGraph, GraphNode } from './view.js';

/** The most nodes an erasure's graph holds; past it the graph says it was cut. */
export const GRAPH_NODE_LIMIT = 300;

export async function affectedGraph(
  artifacts: ArtifactService,
  subjectHash: Uint8Array,
  affected: ReadonlyArray<{ artifactId: string; kind: string }>,
  /** A records-scope erasure's entries: only these are the erased ones (the subject's others survive). */
  forgotten?: readonly string[],
): Promise<ErasureGraph> {
  const erased = forgotten ? new Set(forgotten) : undefined;
  if (affected.length === 0) return { nodes: [], edges: [] };
  const shown = affected.slice(0, GRAPH_NODE_LIMIT);
  const edges = await artifacts.edges(
    shown.map((a) => a.artifactId),
    subjectHash,
  );
  const nodes = new Map<string, GraphNode>();
  for (const a of shown) nodes.set(a.artifactId, { id: a.artifactId, type: 'artifact', kind: a.kind, erasedSubject: false });
  let truncated = affected.length > GRAPH_NODE_LIMIT;
  const kept: Array<{ from: string; to: string }> = [];
  for (const e of edges) {
    if (!nodes.has(e.sourceId)) {
      if (nodes.size >= GRAPH_NODE_LIMIT) {
        truncated = true;
        continue;
      }
      nodes.set(
        e.sourceId,
        e.sourceType === 'entry'
          ? { id: e.sourceId, type: 'entry', erasedSubject: erased ? erased.has(e.sourceId) : e.ofSubject }
          : { id: e.sourceId, type: 'artifact', ...(e.kind ? { kind: e.kind } : {}), erasedSubject: false },
      );
    }
    kept.push({ from: e.sourceId, to: e.artifactId });
  }
  return { nodes: [...nodes.values()], edges: kept, ...(truncated ? { truncated } : {}) };
}

/** Marks each graph artifact regenerated / removed / unchanged against its version at classification. */
export async function withOutcomes(
  artifacts: ArtifactService,
  graph: ErasureGraph | undefined,
  before: ReadonlyArray<{ artifactId: string; version: number }>,
): Promise<ErasureGraph | undefined> {
  if (!graph || graph.nodes.length === 0) return graph;
  const versions = new Map(before.map((a) => [a.artifactId, a.version]));
  const now = new Map((await artifacts.current(graph.nodes.filter((n) => n.type === 'artifact').map((n) => n.id))).map((r) => [r.artifactId, r]));
  return {
    ...graph,
    nodes: graph.nodes.map((n) => {
      if (n.type !== 'artifact') return n;
      const r = now.get(n.id);
      const was = versions.get(n.id);
      const outcome = !r || r.state === 'erased' ? 'removed' : was !== undefined && r.version > was ? 'regenerated' : 'unchanged';
      return { ...n, outcome };
    }),
  };
}

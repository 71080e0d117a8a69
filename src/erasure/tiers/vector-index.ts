/**
 * The vector index: the subject's embeddings at rest (sealed under its key) and in
 * every replica's memory. The rows go in the key's destruction transaction and the
 * destruction event drops the vectors from the index; this tier checks both on this
 * replica. Other replicas are checked by their heartbeats' acknowledgement
 * (src/erasure/acknowledgement.ts, in the destroy step).
 */
import type { ArtifactService } from '../../artifacts/service.js';
import type { LogService } from '../../log/service.js';
import type { Vectors } from '../../vectors/service.js';
import type { ProbeFinding, Tier } from './port.js';

export function vectorIndexTier(d: { vectors: Vectors; log: LogService; artifacts: ArtifactService }): Tier {
  const left = async (keyId: string | null) => (keyId ? (await d.vectors.countByKey(keyId)) + d.vectors.index.idsOfKey(keyId).length : 0);
  // a records-scope erasure: those records' rows (under any key) and their vectors in this replica's index
  const leftOf = async (ids: readonly string[]) => (await d.vectors.countRecords(ids)) + ids.filter((id) => d.vectors.index.vectorOf(id) !== undefined).length;
  return {
    name: 'vector-index',
    async contributions(scope) {
      if (scope.entryIds) return d.vectors.countRecords(scope.entryIds);
      return scope.keyId ? d.vectors.countByKey(scope.keyId) : 0;
    },
    async erase(scope) {
      const remaining = scope.entryIds ? await leftOf(scope.entryIds) : await left(scope.keyId);
      const removed = Math.max(0, scope.contributed - remaining);
      return { removed, left: remaining, detail: `${removed} vector(s) removed from the index and at rest` };
    },
    async probe(_scope, query) {
      const index = d.vectors.index;
      const near = new Map<string, { type: 'entry' | 'artifact'; cosine: number }>();
      for (const q of query.vectors) {
        if (q.length !== index.dimensions || !q.some((x) => x !== 0)) continue;
        const hits = query.above
          ? index.neighbours(q, { k: query.neighbours, floor: query.above.similarity, limit: query.above.limit })
          : index.search(q, Math.min(query.neighbours, index.size));
        for (const hit of hits) {
          const prev = near.get(hit.id);
          if (!prev || hit.score > prev.cosine) near.set(hit.id, { type: hit.type, cosine: hit.score });
        }
        // each search holds the event loop for a graph search (about a millisecond; an index under 1,024 vectors is ranked whole): let requests (and the claim's heartbeat) run between them
        await new Promise((resolve) => setImmediate(resolve));
      }
      const out: ProbeFinding[] = [...near].map(([id, v]) => ({ kind: 'neighbour' as const, id, type: v.type, cosine: v.cosine }));
      // a vector whose text is unreadable (its key destroyed) but still indexed: the index outlived the key
      const readable = new Set<string>();
      const entryIds = [...near].filter(([, v]) => v.type === 'entry').map(([id]) => id);
      const artifactIds = [...near].filter(([, v]) => v.type === 'artifact').map(([id]) => id);
      for (const id of (await d.log.readMany(entryIds)).keys()) readable.add(id);
      for (const id of (await d.artifacts.readMany(artifactIds)).keys()) readable.add(id);
      for (const id of near.keys()) {
        if (readable.has(id)) continue;
        const vector = index.vectorOf(id);
        if (vector) out.push({ kind: 'vector', id, vector });
      }
      return out;
    },
  };
}

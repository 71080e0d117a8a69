/**
 * The vector index's part of an erasure: the subject's embeddings at rest (sealed
 * under its key) and in every replica's memory. The rows go in the key's destruction
 * transaction and the destruction event drops the vectors from the index; this checks
 * both on this replica. Other replicas are checked by their heartbeats'
 * acknowledgement (src/erasure/acknowledgement.ts, in the destroy step).
 */
import { sql } from 'drizzle-orm';
import { type Database, queryRows } from '../db/client.js';
import type { Erasable, ErasureTarget, ProbeFinding } from '../erasable.js';
import { idArrayLiteral } from '../ids.js';
import type { Vectors } from './service.js';

const count = async (db: Database, query: ReturnType<typeof sql>) => Number((await queryRows<{ n: string | number }>(db, query))[0]?.n ?? 0);

export interface VectorErasableDeps {
  readonly db: Database;
  readonly vectors: Pick<Vectors, 'index'>;
  /** Which of these records' texts are still readable (the log's and the artifacts' reads, wired by the composition root). */
  readonly readable: (records: { entries: readonly string[]; artifacts: readonly string[] }) => Promise<Set<string>>;
}

/** The subject's keys an erasure names: its key and, once it destroyed them, the others (shards among them). */
function subjectKeysOf(target: ErasureTarget & { readonly otherKeys?: readonly string[] }): string[] {
  return [...new Set([...(target.keyId ? [target.keyId] : []), ...(target.otherKeys ?? [])])];
}

export function vectorIndexErasable(d: VectorErasableDeps): Erasable {
  const { db } = d;
  /** Sealed rows stored for the target: under its key, or (forgetting records) those records' rows under any key. */
  const stored = (target: ErasureTarget) => {
    switch (target.kind) {
      case 'subject': {
        // under the subject's live keys (head and shards), and under the keys this erasure destroyed
        const keys = subjectKeysOf(target);
        // key by key through the index on key_id (the lateral with its offset keeps the planner off a scan of embeddings)
        return count(
          db,
          sql`select count(*) as n
                from (select key_id from subject_keys where subject_hash = ${target.subjectHash}
                      union select unnest(${idArrayLiteral(keys)}::text[])) k
                cross join lateral (select 1 from embeddings e where e.key_id = k.key_id offset 0) e`,
        );
      }
      case 'records':
        return target.entryIds.length === 0
          ? Promise.resolve(0)
          : count(db, sql`select count(*) as n from embeddings where record_id = any(${idArrayLiteral([...new Set(target.entryIds)])}::text[])`);
    }
  };
  /** Rows at rest plus vectors in this replica's index. */
  const readable: Erasable['readable'] = async (scope) => {
    const index = d.vectors.index;
    const inMemory =
      scope.kind === 'subject'
        ? subjectKeysOf(scope).reduce((n, k) => n + index.idsOfKey(k).length, 0)
        : scope.entryIds.filter((id) => index.vectorOf(id) !== undefined).length;
    return (await stored(scope)) + inMemory;
  };
  return {
    name: 'vector-index',
    contributions: stored,
    readable,
    async erase(scope) {
      const remaining = await readable(scope);
      const removed = Math.max(0, scope.contributed - remaining);
      return { removed, left: remaining, detail: `${removed} vector(s) removed from the index and at rest` };
    },
    async probe(_target, query) {
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
      const readableIds = await d.readable({
        entries: [...near].filter(([, v]) => v.type === 'entry').map(([id]) => id),
        artifacts: [...near].filter(([, v]) => v.type === 'artifact').map(([id]) => id),
      });
      for (const id of near.keys()) {
        if (readableIds.has(id)) continue;
        const vector = index.vectorOf(id);
        if (vector) out.push({ kind: 'vector', id, vector });
      }
      return out;
    },
  };
}

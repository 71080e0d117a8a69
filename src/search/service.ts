/**
 * Search: the records nearest a query in the vector index (src/vectors), each read
 * back through its key before it is served — a vector that outlived its key is never
 * answered — and a read fence covering the hits returned.
 */
import { LetheError } from '../errors.js';
import type { ArtifactService } from '../artifacts/service.js';
import type { LogService } from '../log/service.js';
import type { ReadFences } from '../vault/fences.js';
import type { Vectors } from '../vectors/service.js';
import type { RecordType } from '../vectors/vector-index.js';

export const MAX_SEARCH_K = 100;
export const MAX_QUERY_BYTES = 8 * 1024;

export interface SearchHit {
  readonly id: string;
  readonly type: RecordType;
  readonly score: number;
  readonly text: string;
}

export class Search {
  readonly #d: { vectors: Vectors; log: LogService; artifacts: ArtifactService; fences: ReadFences };

  constructor(deps: { vectors: Vectors; log: LogService; artifacts: ArtifactService; fences: ReadFences }) {
    this.#d = deps;
  }

  /**
   * The `k` records nearest the query, with their text read back through their keys,
   * and a read fence covering them.
   */
  async search(query: string, k: number): Promise<{ hits: SearchHit[]; readFence: string }> {
    if (Buffer.byteLength(query, 'utf8') > MAX_QUERY_BYTES) throw new LetheError('payload_too_large', `query is limited to ${MAX_QUERY_BYTES} bytes`);
    if (!Number.isInteger(k) || k < 1 || k > MAX_SEARCH_K) throw new LetheError('validation_failed', `k must be 1 to ${MAX_SEARCH_K}`);
    const { vectors, fences } = this.#d;
    const [vector] = await vectors.embedder.embed([query]);
    // a query with nothing to match on (only stop words) finds nothing, rather than k arbitrary records
    if (!vector!.some((x) => x !== 0)) return { hits: [], readFence: fences.issue([]) };
    // over-fetch: a few hits may turn out unreadable (destroyed a moment ago)
    const index = vectors.index;
    const candidates = index.search(vector!, Math.min(k * 2 + 4, index.size));
    const texts = await this.#texts(candidates);
    const hits: SearchHit[] = [];
    const read: Array<{ id: string; type: RecordType; keyId: string }> = [];
    for (const c of candidates) {
      const t = texts.get(c.id);
      if (t === undefined) continue;
      hits.push({ id: c.id, type: c.type, score: Math.round(c.score * 1e6) / 1e6, text: t.text });
      read.push({ id: c.id, type: c.type, keyId: t.keyId });
      if (hits.length === k) break;
    }
    // the fence covers the hits returned, not every candidate read
    return { hits, readFence: await this.#fence(read) };
  }

  /** Readable texts of the given records (unreadable ones left out), each with the key it was read under. */
  async #texts(ids: ReadonlyArray<{ id: string; type: RecordType }>): Promise<Map<string, { text: string; keyId: string }>> {
    const entries = await this.#d.log.readMany(ids.filter((i) => i.type === 'entry').map((i) => i.id));
    const out = await this.#d.artifacts.readMany(ids.filter((i) => i.type === 'artifact').map((i) => i.id));
    for (const [id, e] of entries) out.set(id, { text: e.text, keyId: e.keyId });
    return out;
  }

  /** A read fence covering what these hits were read from: entries' subject keys, artifacts' version keys and closures. */
  async #fence(hits: ReadonlyArray<{ id: string; type: RecordType; keyId: string }>): Promise<string> {
    const arts = hits.filter((h) => h.type === 'artifact').map((h) => ({ artifactId: h.id, keyId: h.keyId }));
    return this.#d.fences.issue([...hits.filter((h) => h.type === 'entry').map((h) => h.keyId), ...(await this.#d.artifacts.fenceKeys(arts))]);
  }
}

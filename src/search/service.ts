/**
 * Search: the embedder, the in-memory vector index, and keeping the index true to
 * what is readable. Writers of entries and artifacts embed and seal through here; the
 * index is rebuilt by decrypting every sealed embedding at start-up, updated on
 * every write (and on other replicas' writes, over NOTIFY), and loses a key's
 * vectors as soon as the key is destroyed. A hit is answered only after its text was
 * read back through its key, so a vector that outlived its key is never served.
 */
import { eq, sql } from 'drizzle-orm';
import { zeroize } from '../crypto/index.js';
import { type Db, queryRows } from '../db/client.js';
import { embeddings } from '../db/schema.js';
import { isLetheError, LetheError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Embedder } from './embedder.js';
import { openEmbedding, type SealedEmbedding, sealEmbedding, storedForm } from './embeddings.js';
import { type RecordType, VectorIndex } from './vector-index.js';

export const MAX_SEARCH_K = 100;
export const MAX_QUERY_BYTES = 8 * 1024;

/** How the search service reaches the keys that seal embeddings and the texts hits return. */
export interface SearchBackends {
  /** The plaintext key protecting a record's embedding; key_destroyed/not_found when gone. Caller zeroes. */
  keyFor(type: RecordType, keyId: string): Promise<Uint8Array>;
  /** Readable texts of the given records (unreadable ones are left out), each with the key it was read under. */
  texts(ids: ReadonlyArray<{ id: string; type: RecordType }>): Promise<Map<string, { text: string; keyId: string }>>;
  /** A read fence covering what these hits were read from. */
  fence(hits: ReadonlyArray<{ id: string; type: RecordType; keyId: string }>): Promise<string>;
}

export interface SearchHit {
  readonly id: string;
  readonly type: RecordType;
  readonly score: number;
  readonly text: string;
}

/** How many recently destroyed key ids a replica remembers (to refuse a late load of their vectors). */
const DESTROYED_MEMORY = 10_000;

export class SearchService {
  readonly embedder: Embedder;
  readonly #db: Db;
  readonly #logger: Logger;
  readonly #metrics: Metrics;
  #backends: SearchBackends | undefined;
  #index: VectorIndex;
  /** The index a rebuild is filling; writes and removals reach it too, and it replaces #index when done. */
  #building: VectorIndex | undefined;
  readonly #destroyed = new Set<string>();

  constructor(deps: { db: Db; embedder: Embedder; logger: Logger; metrics: Metrics }) {
    this.#db = deps.db;
    this.embedder = deps.embedder;
    this.#logger = deps.logger;
    this.#metrics = deps.metrics;
    this.#index = new VectorIndex(deps.embedder.dimensions);
  }

  /** The index searches answer from. */
  get index(): VectorIndex {
    return this.#index;
  }

  /** Wired once the services that own keys and texts exist. */
  connect(backends: SearchBackends): void {
    this.#backends = backends;
  }

  /** Embeds texts and seals each vector under `key` (the key of its text). */
  seal(
    records: ReadonlyArray<{ recordId: string; recordType: RecordType; text: string }>,
    keyId: string,
    key: Uint8Array,
  ): Promise<Array<SealedEmbedding & { vector: Float32Array }>> {
    return this.sealEach(records.map((r) => ({ ...r, keyId, key })));
  }

  /** Embeds all texts in one embedder call, and seals each vector under its own record's key. */
  async sealEach(
    records: ReadonlyArray<{ recordId: string; recordType: RecordType; text: string; keyId: string; key: Uint8Array }>,
  ): Promise<Array<SealedEmbedding & { vector: Float32Array }>> {
    if (records.length === 0) return [];
    const vectors = await this.embedder.embed(records.map((r) => r.text));
    const model = this.embedder.model;
    return records.map((r, i) => ({
      recordId: r.recordId,
      recordType: r.recordType,
      keyId: r.keyId,
      model,
      sealed: sealEmbedding(r.key, { recordId: r.recordId, keyId: r.keyId, model }, vectors[i]!),
      // what a restart will read back, so scores do not move across restarts
      vector: storedForm(vectors[i]!),
    }));
  }

  /** Puts committed vectors into this replica's index. */
  publish(records: ReadonlyArray<{ recordId: string; recordType: RecordType; keyId: string; vector: Float32Array }>): void {
    for (const r of records) {
      if (this.#destroyed.has(r.keyId)) continue;
      for (const index of this.#indexes()) index.upsert(r.recordId, r.recordType, r.keyId, r.vector);
    }
    this.#metrics.indexVectors.set(this.#index.size);
  }

  unpublish(recordIds: Iterable<string>): void {
    for (const id of recordIds) for (const index of this.#indexes()) index.remove(id);
    this.#metrics.indexVectors.set(this.#index.size);
  }

  /**
   * A key was destroyed: its vectors leave the index now, and a load or rebuild
   * that was already decrypting them will not put them back.
   */
  removeKey(keyId: string): number {
    this.#destroyed.add(keyId);
    if (this.#destroyed.size > DESTROYED_MEMORY) this.#destroyed.delete(this.#destroyed.values().next().value!);
    let n = 0;
    for (const index of this.#indexes()) n = Math.max(n, index.removeKey(keyId));
    this.#metrics.indexVectors.set(this.#index.size);
    return n;
  }

  #indexes(): VectorIndex[] {
    return this.#building ? [this.#index, this.#building] : [this.#index];
  }

  /**
   * Rebuilds the index from the sealed embeddings: keyset pages ordered by key id,
   * one key unwrap per key. Vectors of destroyed keys and of another model are
   * skipped (counted).
   */
  async rebuild(pageSize = 2000): Promise<{ loaded: number; destroyed: number; otherModel: number }> {
    const backends = this.#need();
    // Searches keep answering from the current index while the new one fills;
    // writes and destructions meanwhile reach both.
    const building = new VectorIndex(this.embedder.dimensions);
    this.#building = building;
    let loaded = 0;
    let destroyed = 0;
    let after: { keyId: string; recordId: string } | undefined;
    const model = this.embedder.model;
    try {
      for (;;) {
        const rows = await queryRows<{ record_id: string; record_type: RecordType; key_id: string; sealed: Uint8Array }>(
          this.#db.db,
          sql`select record_id, record_type, key_id, sealed from embeddings
               where model = ${model} ${after ? sql`and (key_id, record_id) > (${after.keyId}, ${after.recordId})` : sql``}
               order by key_id, record_id limit ${pageSize}`,
        );
        if (rows.length === 0) break;
        let i = 0;
        while (i < rows.length) {
          const keyId = rows[i]!.key_id;
          let j = i;
          while (j < rows.length && rows[j]!.key_id === keyId) j++;
          let key: Uint8Array | undefined;
          try {
            key = await backends.keyFor(rows[i]!.record_type, keyId);
          } catch (e) {
            if (!isLetheError(e, 'key_destroyed') && !isLetheError(e, 'not_found')) throw e;
          }
          if (!key || this.#destroyed.has(keyId)) destroyed += j - i;
          else {
            try {
              for (let r = i; r < j; r++) {
                const row = rows[r]!;
                const sealed = new Uint8Array(row.sealed.buffer, row.sealed.byteOffset, row.sealed.byteLength);
                const vector = openEmbedding(key, { recordId: row.record_id, keyId, model }, sealed, this.embedder.dimensions);
                // a newer write (published meanwhile) wins over what this page read
                if (!building.has(row.record_id)) building.upsert(row.record_id, row.record_type, keyId, vector);
                loaded++;
              }
            } finally {
              zeroize(key);
            }
          }
          i = j;
        }
        const last = rows.at(-1)!;
        after = { keyId: last.key_id, recordId: last.record_id };
      }
      const previous = this.#index;
      this.#index = building;
      previous.clear();
    } finally {
      this.#building = undefined;
    }
    const [other] = await queryRows<{ n: string | number }>(this.#db.db, sql`select count(*) as n from embeddings where model <> ${model}`);
    const otherModel = Number(other?.n ?? 0);
    if (otherModel > 0) {
      this.#logger.warn({ otherModel, model }, 'some stored embeddings were made by another embedder model and are not searchable');
    }
    this.#metrics.indexVectors.set(this.#index.size);
    return { loaded, destroyed, otherModel };
  }

  /** Loads one record's sealed embedding (another replica wrote it). */
  async load(recordId: string): Promise<void> {
    const [row] = await this.#db.db.select().from(embeddings).where(eq(embeddings.recordId, recordId));
    if (!row || row.model !== this.embedder.model) return;
    let key: Uint8Array;
    try {
      key = await this.#need().keyFor(row.recordType, row.keyId);
    } catch (e) {
      if (isLetheError(e, 'key_destroyed') || isLetheError(e, 'not_found')) return;
      throw e;
    }
    try {
      const vector = openEmbedding(key, { recordId, keyId: row.keyId, model: row.model }, row.sealed, this.embedder.dimensions);
      this.publish([{ recordId, recordType: row.recordType, keyId: row.keyId, vector }]); // skips a key destroyed meanwhile
    } finally {
      zeroize(key);
    }
  }

  /**
   * The `k` records nearest the query, with their text read back through their keys,
   * and a read fence covering them.
   */
  async search(query: string, k: number): Promise<{ hits: SearchHit[]; readFence: string }> {
    if (Buffer.byteLength(query, 'utf8') > MAX_QUERY_BYTES) throw new LetheError('payload_too_large', `query is limited to ${MAX_QUERY_BYTES} bytes`);
    if (!Number.isInteger(k) || k < 1 || k > MAX_SEARCH_K) throw new LetheError('validation_failed', `k must be 1 to ${MAX_SEARCH_K}`);
    const backends = this.#need();
    const [vector] = await this.embedder.embed([query]);
    // a query with nothing to match on (only stop words) finds nothing, rather than k arbitrary records
    if (!vector!.some((x) => x !== 0)) return { hits: [], readFence: await backends.fence([]) };
    // over-fetch: a few hits may turn out unreadable (destroyed a moment ago)
    const candidates = this.#index.search(vector!, Math.min(k * 2 + 4, this.#index.size));
    const texts = await backends.texts(candidates.map((c) => ({ id: c.id, type: c.type })));
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
    return { hits, readFence: await backends.fence(read) };
  }

  #need(): SearchBackends {
    if (!this.#backends) throw new LetheError('internal', 'search is not connected to the log and artifacts');
    return this.#backends;
  }
}

/**
 * Vectors: the embedder, the in-memory vector index, and keeping the index true to
 * what is readable. Writers of entries and artifacts embed and seal through here; the
 * index is rebuilt by decrypting every sealed embedding at start-up, updated on
 * every write (and on other replicas' writes, over NOTIFY), and loses a key's
 * vectors as soon as the key is destroyed (the vault's destruction event). The
 * `embeddings` rows of a destroyed key go in the destruction's own transaction.
 * Search (src/search) answers queries from this index.
 */
import { eq, sql } from 'drizzle-orm';
import { zeroize } from '../crypto/index.js';
import { type Database, queryRows, type Transaction } from '../db/client.js';
import { embeddings } from '../db/schema.js';
import { idArrayLiteral } from '../ids.js';
import { isLetheError } from '../errors.js';
import { describeError, type Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { KeyService } from '../vault/keys.js';
import type { VersionKeys } from '../vault/version-keys.js';
import type { Embedder } from './embedder.js';
import { openEmbedding, type SealedEmbedding, sealEmbedding, storedForm } from './embeddings.js';
import { type RecordType, VectorIndex } from './vector-index.js';

/** How many recently destroyed key ids a replica remembers (to refuse a late load of their vectors). */
const DESTROYED_MEMORY = 10_000;

export interface VectorsDeps {
  readonly db: Database;
  readonly embedder: Embedder;
  /** Where the keys sealing entries' (subject DEKs) and artifacts' (version keys) embeddings come from. */
  readonly keys: KeyService;
  readonly versionKeys: VersionKeys;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

export class Vectors {
  readonly embedder: Embedder;
  readonly #d: VectorsDeps;
  #index: VectorIndex;
  /** The index a rebuild is filling; writes and removals reach it too, and it replaces #index when done. */
  #building: VectorIndex | undefined;
  readonly #destroyed = new Set<string>();

  constructor(deps: VectorsDeps) {
    this.#d = deps;
    this.embedder = deps.embedder;
    this.#index = new VectorIndex(deps.embedder.dimensions);
  }

  /** The index searches answer from. */
  get index(): VectorIndex {
    return this.#index;
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
    this.#d.metrics.indexVectors.set(this.#index.size);
  }

  unpublish(recordIds: Iterable<string>): void {
    for (const id of recordIds) for (const index of this.#indexes()) index.remove(id);
    this.#d.metrics.indexVectors.set(this.#index.size);
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
    this.#d.metrics.indexVectors.set(this.#index.size);
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
          this.#d.db,
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
            key = await this.#keyFor(rows[i]!.record_type, keyId);
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
    const [other] = await queryRows<{ n: string | number }>(this.#d.db, sql`select count(*) as n from embeddings where model <> ${model}`);
    const otherModel = Number(other?.n ?? 0);
    if (otherModel > 0) {
      this.#d.logger.warn({ otherModel, model }, 'some stored embeddings were made by another embedder model and are not searchable');
    }
    this.#d.metrics.indexVectors.set(this.#index.size);
    return { loaded, destroyed, otherModel };
  }

  /** Loads one record's sealed embedding (another replica wrote it). */
  async load(recordId: string): Promise<void> {
    const [row] = await this.#d.db.select().from(embeddings).where(eq(embeddings.recordId, recordId));
    if (!row || row.model !== this.embedder.model) return;
    let key: Uint8Array;
    try {
      key = await this.#keyFor(row.recordType, row.keyId);
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

  /** How many sealed embeddings are stored under a key (what a key's destruction must take with it). */
  async countByKey(keyId: string): Promise<number> {
    const [row] = await queryRows<{ n: string | number }>(this.#d.db, sql`select count(*) as n from embeddings where key_id = ${keyId}`);
    return Number(row?.n ?? 0);
  }

  /**
   * Inside a key destruction's transaction (registered with KeyDestructions.within):
   * the sealed embeddings died with their key; their rows go so nothing tries to open them.
   */
  async deleteSealedUnder(tx: Transaction, keyIds: readonly string[]): Promise<void> {
    await tx.execute(sql`delete from embeddings where key_id = any(${idArrayLiteral(keyIds)}::text[])`);
  }

  /** Removes one record's sealed embedding inside `tx` (an artifact erased for want of sources). */
  async deleteRecord(tx: Transaction, recordId: string): Promise<void> {
    await tx.delete(embeddings).where(eq(embeddings.recordId, recordId));
  }

  /**
   * Another replica wrote these records' embeddings (record id, key id): load the
   * ones this index does not already hold under that key (our own writes come back too).
   */
  loadWritten(records: ReadonlyArray<readonly [string, string]>): void {
    for (const [recordId, keyId] of records) {
      if (this.#index.keyOf(recordId) === keyId) continue;
      void this.load(recordId).catch((e: unknown) => this.#d.logger.warn({ err: describeError(e) }, 'could not load an embedding another replica wrote'));
    }
  }

  /** The plaintext key protecting a record's embedding; key_destroyed/not_found when gone. Caller zeroes. */
  async #keyFor(type: RecordType, keyId: string): Promise<Uint8Array> {
    return type === 'entry' ? (await this.#d.keys.dekFor(keyId)).dek : this.#d.versionKeys.unwrap(keyId);
  }
}

/**
 * The in-memory lexical index: keyed shingle → the records that contain it (an
 * inverted index), and record → its sorted shingle set. It holds keyed hashes only,
 * never words; at rest each record's set is sealed under the record's own key beside
 * its embedding (embeddings.ts), and the index is rebuilt by decrypting at start-up.
 *
 * Records live in slots. A removed record's slot is marked dead: its single-record
 * postings go at once, longer posting lists keep the dead slot (skipped on reading,
 * their live count kept exact) until a compaction renumbers the slots, once dead
 * slots outnumber the live ones. Document frequency (how many live records hold a
 * shingle) is exact at every moment.
 *
 * Memory: 8 bytes per shingle of each record (its sorted set, in the set arena) and
 * about 8 per posting, plus a place in a posting table per distinct shingle (12 bytes, the table
 * at most 3/4 full): the bench ("probe") measures the whole per record.
 */
import { KeyFiling } from './key-filing.js';
import { PostingTable } from './posting-table.js';
import { SetArena } from './set-arena.js';
import type { RecordType } from './vector-index.js';

/** Posting lists at most this long drop a removed slot at once instead of marking it. */
const EAGER_REMOVAL = 16;

/**
 * The postings are spread over this many tables by the shingle's low bits (a store of
 * a million records has about fifteen million distinct shingles): a table grows by
 * copying itself, and a smaller one is a shorter pause.
 */
export const POSTING_SHARDS = 256;
const SHARDS = POSTING_SHARDS;

function freshShards(): PostingTable[] {
  return Array.from({ length: SHARDS }, () => new PostingTable());
}

export interface ShingleRecord {
  readonly id: string;
  readonly type: RecordType;
  readonly keyId: string;
}

export class ShingleIndex {
  readonly #slotOf = new Map<string, number>();
  #records: Array<ShingleRecord | undefined> = [];
  #sets = new SetArena();
  #shards = freshShards();
  readonly #filing = new KeyFiling();
  #dead = 0;
  #shingles = 0;

  /** Live records. */
  get size(): number {
    return this.#slotOf.size;
  }

  /** Shingles filed over all live records (the sum of their set sizes). */
  get filed(): number {
    return this.#shingles;
  }

  /** Distinct shingles with at least one live record. */
  get distinct(): number {
    let n = 0;
    for (const shard of this.#shards) n += shard.size;
    return n;
  }

  /** The ids of the live records. */
  ids(): IterableIterator<string> {
    return this.#slotOf.keys();
  }

  has(id: string): boolean {
    return this.#slotOf.has(id);
  }

  keyOf(id: string): string | undefined {
    const slot = this.#slotOf.get(id);
    return slot === undefined ? undefined : this.#records[slot]!.keyId;
  }

  /** Files record `id` under its sorted distinct shingles (replacing what it had); the index takes a copy of `shingles` and zeroes them (so never pass a view `setAt` gave). */
  upsert(id: string, type: RecordType, keyId: string, shingles: Float64Array): void {
    this.remove(id);
    const slot = this.#records.length;
    this.#records.push({ id, type, keyId });
    this.#slotOf.set(id, slot);
    this.#shingles += shingles.length;
    for (let i = 0; i < shingles.length; i++) {
      const h = shingles[i]!;
      const shard = this.#shards[h % SHARDS]!;
      const p = shard.get(h);
      if (p === undefined) shard.set(h, slot);
      else if (typeof p === 'number') shard.set(h, [2, p, slot]);
      else {
        p[0]!++;
        p.push(slot);
      }
    }
    this.#sets.store(slot, shingles);
    this.#filing.file(keyId, id);
  }

  /** Removes a record; true when it was there. */
  remove(id: string): boolean {
    const slot = this.#slotOf.get(id);
    if (slot === undefined) return false;
    const record = this.#records[slot]!;
    const set = this.#sets.at(slot);
    this.#slotOf.delete(id);
    this.#records[slot] = undefined;
    this.#shingles -= set.length;
    this.#dead++;
    for (let i = 0; i < set.length; i++) {
      const h = set[i]!;
      const shard = this.#shards[h % SHARDS]!;
      const p = shard.get(h);
      if (p === undefined) continue;
      if (typeof p === 'number') {
        if (p === slot) shard.delete(h);
        continue;
      }
      if (--p[0]! === 0) shard.delete(h);
      else if (p.length <= EAGER_REMOVAL) {
        const at = p.indexOf(slot, 1);
        if (at > 0) p.splice(at, 1);
      }
    }
    set.fill(0);
    this.#filing.unfile(record.keyId, id);
    if (this.#dead > Math.max(4096, this.#slotOf.size)) this.#compact();
    return true;
  }

  /** The ids filed under a key, without a copy (do not change the index while iterating). */
  idsOfKey(keyId: string): Iterable<string> {
    return this.#filing.each(keyId);
  }

  /** Removes every record filed under a destroyed key; returns how many. */
  removeKey(keyId: string): number {
    return this.#filing.removeKey(keyId, (id) => this.remove(id));
  }

  /** How many live records hold shingle `h`. */
  df(h: number): number {
    const p = this.#shards[h % SHARDS]!.get(h);
    if (p === undefined) return 0;
    return typeof p === 'number' ? 1 : p[0]!;
  }

  /**
   * Calls `visit` with the slot of each live record holding `h`, at most `cap` of
   * them; returns how many it visited.
   */
  postings(h: number, cap: number, visit: (slot: number) => void): number {
    const p = this.#shards[h % SHARDS]!.get(h);
    if (p === undefined) return 0;
    if (typeof p === 'number') {
      visit(p);
      return 1;
    }
    let n = 0;
    for (let i = 1; i < p.length && n < cap; i++) {
      const slot = p[i]!;
      if (this.#records[slot] === undefined) continue;
      visit(slot);
      n++;
    }
    return n;
  }

  /** Slots in use, live and dead: every slot number is below it (for per-slot arrays). */
  get slotCapacity(): number {
    return this.#records.length;
  }

  /** The live record in a slot. */
  recordAt(slot: number): ShingleRecord | undefined {
    return this.#records[slot];
  }

  /** The sorted shingle set of the live record in a slot. */
  setAt(slot: number): Float64Array | undefined {
    return this.#records[slot] === undefined ? undefined : this.#sets.at(slot);
  }

  slotOf(id: string): number | undefined {
    return this.#slotOf.get(id);
  }

  /** Zeroes every set and drops everything. */
  clear(): void {
    this.#sets.clear();
    this.#slotOf.clear();
    this.#records = [];
    this.#shards = freshShards();
    this.#filing.clear();
    this.#dead = 0;
    this.#shingles = 0;
  }

  /** Renumbers the live records into dense slots and rebuilds the postings without dead slots. */
  #compact(): void {
    const records = this.#records;
    const sets = this.#sets;
    this.#records = [];
    this.#sets = new SetArena();
    this.#shards = freshShards();
    this.#slotOf.clear();
    this.#filing.clear();
    this.#dead = 0;
    this.#shingles = 0;
    for (let slot = 0; slot < records.length; slot++) {
      const r = records[slot];
      if (r) this.upsert(r.id, r.type, r.keyId, sets.at(slot));
    }
    sets.clear();
  }
}

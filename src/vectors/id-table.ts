/**
 * A record id's slot in the vector index: an open-addressing table of slot numbers
 * (linear probing, 4 bytes a place, at most 3/4 full) over the ids the slots already
 * hold. A `Map<string, number>` cost the index about 34 bytes a record; this, 5-11.
 */
import { closeGap } from './probe-gap.js';

const MIN_CAPACITY = 1024;

/** FNV-1a over the id's UTF-16 code units. */
function hash(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export class IdTable {
  /** slot + 1 at each place; 0 is an empty place. */
  #places = new Int32Array(MIN_CAPACITY);
  #size = 0;
  readonly #idAt: (slot: number) => string | undefined;

  /** `idAt` answers the id a slot holds: the table keeps no ids of its own. */
  constructor(idAt: (slot: number) => string | undefined) {
    this.#idAt = idAt;
  }

  get size(): number {
    return this.#size;
  }

  get(id: string): number | undefined {
    const at = this.#find(id);
    return at < 0 ? undefined : this.#places[at]! - 1;
  }

  /** Files `slot` under `id`, which `idAt(slot)` must already answer (replaces the slot an id had). */
  set(id: string, slot: number): void {
    const at = this.#find(id);
    if (at >= 0) {
      this.#places[at] = slot + 1;
      return;
    }
    if ((this.#size + 1) * 4 > this.#places.length * 3) this.#grow();
    this.#places[this.#emptyFor(hash(id))] = slot + 1;
    this.#size++;
  }

  delete(id: string): boolean {
    const at = this.#find(id);
    if (at < 0) return false;
    const places = this.#places;
    const mask = places.length - 1;
    const empty = closeGap(
      at,
      mask,
      (place) => places[place] !== 0,
      (place) => hash(this.#idAt(places[place]! - 1)!) & mask,
      (from, to) => {
        places[to] = places[from]!;
      },
    );
    places[empty] = 0;
    this.#size--;
    return true;
  }

  clear(): void {
    this.#places = new Int32Array(MIN_CAPACITY);
    this.#size = 0;
  }

  /** The place holding `id`'s slot, or -1. */
  #find(id: string): number {
    const places = this.#places;
    const mask = places.length - 1;
    for (let at = hash(id) & mask; places[at] !== 0; at = (at + 1) & mask) {
      if (this.#idAt(places[at]! - 1) === id) return at;
    }
    return -1;
  }

  #emptyFor(h: number): number {
    const mask = this.#places.length - 1;
    let at = h & mask;
    while (this.#places[at] !== 0) at = (at + 1) & mask;
    return at;
  }

  #grow(): void {
    const old = this.#places;
    this.#places = new Int32Array(old.length * 2);
    for (const place of old) if (place !== 0) this.#places[this.#emptyFor(hash(this.#idAt(place - 1)!))] = place;
  }
}

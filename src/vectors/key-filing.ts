/**
 * Which records are filed under which key: how a key's destruction reaches an
 * in-memory index (the vector index and the lexical index each keep one).
 *
 * A key's ids are held as the id itself while it has one, in an array up to
 * ARRAY_MAX, in a set beyond: a set per key cost the index about 35 bytes a record,
 * an array about 10, and a key of a shard holds a few dozen records (an array's
 * scans stay short; a larger key gets a set).
 */
const ARRAY_MAX = 64;

type Ids = string | string[] | Set<string>;

export class KeyFiling {
  readonly #byKey = new Map<string, Ids>();

  file(keyId: string, id: string): void {
    const ids = this.#byKey.get(keyId);
    if (ids === undefined) this.#byKey.set(keyId, id);
    else if (typeof ids === 'string') {
      if (ids !== id) this.#byKey.set(keyId, [ids, id]);
    } else if (ids instanceof Set) ids.add(id);
    else if (!ids.includes(id)) {
      if (ids.length < ARRAY_MAX) ids.push(id);
      else this.#byKey.set(keyId, new Set(ids).add(id));
    }
  }

  unfile(keyId: string, id: string): void {
    const ids = this.#byKey.get(keyId);
    if (ids === undefined) return;
    if (typeof ids === 'string') {
      if (ids === id) this.#byKey.delete(keyId);
    } else if (ids instanceof Set) {
      ids.delete(id);
      if (ids.size === 0) this.#byKey.delete(keyId);
    } else {
      const at = ids.indexOf(id);
      if (at < 0) return;
      // the last id takes the removed one's place (the order is not kept)
      ids[at] = ids[ids.length - 1]!;
      ids.pop();
      if (ids.length === 1) this.#byKey.set(keyId, ids[0]!);
    }
  }

  /** The ids filed under a key. */
  ids(keyId: string): string[] {
    return [...this.each(keyId)];
  }

  /** The ids filed under a key, without a copy (do not change the filing while iterating). */
  each(keyId: string): Iterable<string> {
    const ids = this.#byKey.get(keyId);
    if (ids === undefined) return [];
    return typeof ids === 'string' ? [ids] : ids;
  }

  /** Removes every record filed under the key with `remove`; returns how many it removed. */
  removeKey(keyId: string, remove: (id: string) => boolean): number {
    let n = 0;
    for (const id of this.ids(keyId)) if (remove(id)) n++;
    this.#byKey.delete(keyId);
    return n;
  }

  clear(): void {
    this.#byKey.clear();
  }
}

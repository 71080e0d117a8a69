/**
 * Which records are filed under which key: how a key's destruction reaches an
 * in-memory index (the vector index and the lexical index each keep one).
 */
export class KeyFiling {
  readonly #byKey = new Map<string, Set<string>>();

  file(keyId: string, id: string): void {
    let ids = this.#byKey.get(keyId);
    if (!ids) this.#byKey.set(keyId, (ids = new Set()));
    ids.add(id);
  }

  unfile(keyId: string, id: string): void {
    const ids = this.#byKey.get(keyId);
    if (!ids) return;
    ids.delete(id);
    if (ids.size === 0) this.#byKey.delete(keyId);
  }

  /** The ids filed under a key. */
  ids(keyId: string): string[] {
    return [...(this.#byKey.get(keyId) ?? [])];
  }

  /** The ids filed under a key, without a copy (do not change the filing while iterating). */
  each(keyId: string): Iterable<string> {
    return this.#byKey.get(keyId) ?? [];
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

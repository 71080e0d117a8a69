/**
 * `@lethe/client/langgraph`: a LangGraph.js `BaseStore` whose items are lethe entries,
 * so an agent's long-term memory is sealed per person and erasable with a certificate.
 *
 * Mapping (in full: clients/typescript/README.md):
 * - **namespace → subject**, named explicitly (no default: a guess would lump people
 *   together): `subjectLabel: i`, the namespace's label `i` decoded with
 *   `decodeSubjectLabel` (written with `encodeSubjectLabel`: subject ids hold `:` `.` `@`),
 *   or `subjectOf(namespace)`. Every item of a subject dies with its erasure.
 * - **an item is an entry** of that subject per indexed field (`fields` / per-put `index`;
 *   by default every string of the value, as one field), so an item answers its best
 *   field's score; `index: false` is one entry with no text. The item itself travels in
 *   each entry's sealed `metadata` under `langgraph`: never in clear in lethe's index or store.
 * - **put** appends; a re-put supersedes (`POST …/supersede`: successor stored, old version
 *   forgotten, one transaction), with the writer token alone; a put that meets a concurrent
 *   one reads again (last writer wins). **put(…, null)** and **delete** forget.
 * - **get** is one lookup on the service (entries carry their `item`, indexed as keyed
 *   hashes), whatever the subject holds; the subject is read whole only when the index knows
 *   none (an item from before the index, or sealed by a writer), once per subject: a later
 *   miss of a key that read did not find is a new key. Once the subject was read whole, a put
 *   of a one-entry item is one call (`If-None-Match: *`: stored as the item's first version,
 *   or refused with its live versions, which the put then supersedes).
 * - **search** of one subject runs on the service (`POST …/items/search`,
 *   langgraph-search.ts): ranked by the subject's scoped search with a `query` (unindexed
 *   items after, unscored, as LangGraph's own stores), else newest first; namespaces and an
 *   equality `filter` applied there. Across subjects, with operator filters, or for a
 *   `writer` store, the same answer is computed here.
 * - **listNamespaces** asks the service (one live entry per namespace, its labels sealed in
 *   its metadata): a fresh process lists them all; an erased subject's are gone. (A store
 *   with a `writer` also reads whole the subjects it touched: items a writer sealed before
 *   its registrations named them.)
 *
 * The items of an erased subject are gone: get answers null, search and
 * listNamespaces nothing, and put is refused (410 `subject_erased`) until an admin
 * reinstates the subject.
 */
import {
  BaseStore,
  type GetOperation,
  InvalidNamespaceError,
  type Item,
  type ListNamespacesOperation,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchItem,
  type SearchOperation,
  validateNamespace,
} from '@langchain/langgraph-checkpoint';
import { LetheError } from '../errors.js';
import { SUBJECT_ID_PATTERN, SUBJECT_ID_RULE } from '../ids.js';
import { ServiceError } from './http.js';
import { gone, hasPrefix, type Located, latest, matches, nsKey, passes, putEntries, sameNamespace, storedOf, toItem, versionsIn } from './langgraph-items.js';
import { searchOnService, serverFilter } from './langgraph-search.js';
import { decodeSubjectLabel } from './subject-labels.js';
import type { Lethe } from './lethe.js';
import type { ItemLocation, LetheStoreOptions } from './langgraph-options.js';
import type { LetheWriter } from './writer.js';

export { ITEM_FIELD } from './langgraph-items.js';
export { decodeSubjectLabel, encodeSubjectLabel } from './subject-labels.js';
export type { ItemLocation, LetheStoreOptions } from './langgraph-options.js';

/** The entry kind of the store's items (default). */
export const ITEM_KIND = 'langgraph-item';

/** The most hits one search asks lethe for (the service's `k` limit). */
const MAX_K = 100;

/** Tries of a put that meets a concurrent put of the same key. */
const PUT_ATTEMPTS = 8;

/** A subject's entries as the store reads them: gone (404 never seen, 410 erased) reads as none. */
export class LetheStore extends BaseStore {
  /** Which namespace label, or function, names an item's subject: `namespace[1] (decodeSubjectLabel)`, or `subjectOf(namespace)`. */
  readonly subjectMapping: string;
  readonly #lethe: Lethe;
  readonly #subjectOf: (namespace: readonly string[]) => string | undefined;
  readonly #fields: readonly string[] | undefined;
  readonly #writer: LetheWriter | undefined;
  readonly #kind: string;
  /** Subjects this store has touched (or was told of): what listNamespaces and prefix-less searches cover. */
  readonly #subjects = new Set<string>();
  /**
   * Per subject, the items its last whole read found. Every item written since is in the
   * service's index, so a key the index misses that was not among them has no version: it
   * is not read whole again (a new key's put and get are one lookup, whatever the subject holds).
   */
  readonly #readWhole = new Map<string, Set<string>>();

  constructor(options: LetheStoreOptions) {
    super();
    this.#lethe = options.lethe;
    const at = options.subjectLabel;
    if ((at === undefined) === (options.subjectOf === undefined)) {
      throw new LetheError(
        'validation_failed',
        'LetheStore: name the subject a namespace maps to — subjectLabel (which label holds it: 1 for ["memories", encodeSubjectLabel(userId)]) or subjectOf(namespace), not both; there is no default, which would put different people under one subject',
      );
    }
    if (at !== undefined) {
      if (!Number.isInteger(at) || at < 0) throw new LetheError('validation_failed', 'LetheStore: subjectLabel is the 0-based index of a namespace label');
      this.#subjectOf = (namespace) => (namespace[at] === undefined || namespace[at] === '*' ? undefined : decodeSubjectLabel(namespace[at]!));
      this.subjectMapping = `namespace[${at}] (decodeSubjectLabel)`;
    } else {
      this.#subjectOf = options.subjectOf!;
      this.subjectMapping = 'subjectOf(namespace)';
    }
    this.#fields = options.fields;
    this.#writer = options.writer;
    this.#kind = options.kind ?? ITEM_KIND;
    for (const s of options.subjects ?? []) this.#subjects.add(this.#checkSubject(s));
  }

  /** The subjects this store can enumerate: those it touched in this process and those it was given. */
  get knownSubjects(): readonly string[] {
    return [...this.#subjects];
  }

  /**
   * Runs the operations in order (a get after a put in the same batch sees the put).
   * Each subject's entries are read once per batch until a write to it.
   */
  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const cache = new Map<string, Promise<Located[]>>();
    const results: unknown[] = [];
    for (const op of operations) {
      if ('value' in op) {
        await this.#put(op, cache);
        results.push(undefined);
      } else if ('key' in op) results.push(await this.#get(op, cache));
      else if ('namespacePrefix' in op) results.push(await this.#search(op, cache));
      else if ('limit' in op) results.push(await this.#listNamespaces(op, cache));
      else throw new LetheError('validation_failed', 'not a store operation');
    }
    return results as OperationResults<Op>;
  }

  /** Where the item lives in lethe (its subject and current entry), to name it as a source of an artifact; null when there is none. */
  async locate(namespace: string[], key: string): Promise<ItemLocation | null> {
    validateNamespace(namespace, { allowReservedRoot: true });
    const subject = this.#subjectFor(namespace);
    const found = (await this.#versionsOf(subject, namespace, key, new Map())).at(-1);
    return found ? { subject, entryId: found.entryIds[0]!, entryIds: [...found.entryIds] } : null;
  }

  #checkSubject(subject: string): string {
    if (!SUBJECT_ID_PATTERN.test(subject)) throw new LetheError('validation_failed', `${SUBJECT_ID_RULE} (the subject the namespace maps to)`);
    return subject;
  }

  #subjectFor(namespace: readonly string[]): string {
    const subject = this.#subjectOf(namespace);
    if (subject === undefined)
      throw new InvalidNamespaceError(`the namespace ${JSON.stringify(namespace)} names no subject (this store's subject is ${this.subjectMapping})`);
    return this.#checkSubject(subject);
  }

  /** The store's live items of a subject in log order, each with its entry id; none for a subject never seen or erased. */
  #items(subject: string, cache: Map<string, Promise<Located[]>>): Promise<Located[]> {
    let items = cache.get(subject);
    if (!items) {
      items = (async () => {
        const entries = [];
        try {
          for await (const entry of this.#lethe.entries.list(subject, { limit: 1000 })) entries.push(entry);
        } catch (e) {
          if (gone(e)) return [];
          throw e;
        }
        return versionsIn(entries);
      })();
      cache.set(subject, items);
      // a failed read is not remembered
      items.catch(() => cache.delete(subject));
    }
    return items;
  }

  /** Every live version of (namespace, key), oldest first. */
  #versions(items: readonly Located[], namespace: readonly string[], key: string): Located[] {
    return items.filter((l) => l.item.key === key && sameNamespace(l.item.namespace, namespace));
  }

  /**
   * Every live version of (namespace, key), oldest first: one lookup on the service (the
   * item index), whatever the subject holds; the subject's entries read whole only when
   * the index knows none (an item put before lethe indexed items, or sealed by a writer before
   * its registrations named items), once per subject unless that read found the key.
   */
  async #versionsOf(subject: string, namespace: readonly string[], key: string, cache: Map<string, Promise<Located[]>>): Promise<Located[]> {
    let entries: Awaited<ReturnType<Lethe['entries']['lookup']>> = [];
    try {
      entries = await this.#lethe.entries.lookup(subject, namespace, key);
    } catch (e) {
      if (!gone(e)) throw e;
    }
    if (entries.length > 0) return this.#versions(versionsIn([...entries].reverse()), namespace, key);
    if (this.#indexHoldsAll(subject, namespace, key)) return [];
    const items = await this.#items(subject, cache);
    this.#readWhole.set(subject, new Set(items.map((l) => nsKey(l.item.namespace, l.item.key))));
    return this.#versions(items, namespace, key);
  }

  async #get(op: GetOperation, cache: Map<string, Promise<Located[]>>): Promise<Item | null> {
    const subject = this.#subjectFor(op.namespace);
    this.#subjects.add(subject);
    return (await this.#versionsOf(subject, op.namespace, op.key, cache)).at(-1)?.item ?? null;
  }

  async #put(op: PutOperation, cache: Map<string, Promise<Located[]>>): Promise<void> {
    validateNamespace(op.namespace, { allowReservedRoot: op.value === null });
    const subject = this.#subjectFor(op.namespace);
    this.#subjects.add(subject);
    // a concurrent put of the same key (another graph node) may supersede a version under us: read again and supersede its successor
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#putOnce(op, subject, cache);
      } catch (e) {
        if (attempt >= PUT_ATTEMPTS - 1 || !(e instanceof ServiceError && e.code === 'conflict')) throw e;
        cache.delete(subject);
      }
    }
  }

  async #putOnce(op: PutOperation, subject: string, cache: Map<string, Promise<Located[]>>): Promise<void> {
    let older: Located[] | undefined;
    if (op.value !== null && !this.#writer && this.#indexHoldsAll(subject, op.namespace, op.key)) {
      // the item's first version in one call, unless it has live versions: then those are the answer, to supersede
      const entries = putEntries(op, op.value, { kind: this.#kind, fields: this.#fields });
      if (entries.length === 1) {
        const put = await this.#lethe.entries.appendItem(subject, entries[0]!);
        if ('appended' in put) {
          cache.delete(subject);
          return;
        }
        older = this.#versions(versionsIn([...put.existing].reverse()), op.namespace, op.key);
      }
    }
    older ??= await this.#versionsOf(subject, op.namespace, op.key, cache);
    cache.delete(subject);
    // the entries of the item's live versions, oldest first: each new entry supersedes one, the rest are forgotten
    const olds = older.flatMap((v) => v.entryIds);
    let used = 0;
    if (op.value !== null) {
      const entries = putEntries(op, op.value, { kind: this.#kind, fields: this.#fields, first: older[0]?.item.createdAt });
      if (this.#writer) for (const entry of entries) await this.#writer.append(subject, entry);
      else if (olds.length > 0) {
        // an update: every field's successor stored and every old entry forgotten in one transaction, never two live versions
        await this.#lethe.entries.supersedeAll(subject, olds, entries);
        used = olds.length;
      } else for (const entry of entries) await this.#lethe.entries.append(subject, entry);
    }
    // what no new entry superseded (a delete, a writer that seals locally): forgotten
    for (const entryId of olds.slice(used)) await this.#forget(entryId);
  }

  /** Whether every version of the key is in the service's item index: the subject was read whole and that read did not find the key. */
  #indexHoldsAll(subject: string, namespace: readonly string[], key: string): boolean {
    const known = this.#readWhole.get(subject);
    return known !== undefined && !known.has(nsKey(namespace, key));
  }

  /** Forgets an entry: with the writer token when it wrote it, else with the eraser token. */
  async #forget(entryId: string): Promise<void> {
    try {
      await this.#lethe.entries.forget(entryId);
    } catch (e) {
      if (gone(e)) return;
      if (!(e instanceof ServiceError && e.status === 403)) throw e;
      try {
        await this.#lethe.forget(entryId);
      } catch (again) {
        if (!gone(again)) throw again;
      }
    }
  }

  /** The subjects a prefix covers: the one it names, else every subject the store knows. */
  #subjectsOf(prefix: readonly string[]): string[] {
    const named = prefix.length > 0 ? this.#subjectOf(prefix) : undefined;
    return named !== undefined ? [this.#checkSubject(named)] : [...this.#subjects];
  }

  async #search(op: SearchOperation, cache: Map<string, Promise<Located[]>>): Promise<SearchItem[]> {
    const subjects = this.#subjectsOf(op.namespacePrefix);
    for (const s of subjects) this.#subjects.add(s);
    const offset = op.offset ?? 0;
    const limit = op.limit ?? 10;
    const wanted = (item: Item) => hasPrefix(item.namespace, op.namespacePrefix) && passes(item.value, op.filter);
    if (subjects.length === 0) return [];
    if (subjects.length === 1 && !this.#writer && serverFilter(op.filter)) {
      const found = await searchOnService(this.#lethe, subjects[0]!, op, offset, limit);
      if (found) return found;
    }
    if (op.query === undefined || op.query === '') {
      const all: Array<{ item: Item; at: number }> = [];
      for (const subject of subjects) {
        const versions = latest(await this.#items(subject, cache));
        all.push(...[...versions.values()].map(({ item: l, at }) => ({ item: l.item, at })).filter((x) => wanted(x.item)));
      }
      all.sort((a, b) => b.item.updatedAt.getTime() - a.item.updatedAt.getTime() || b.at - a.at);
      return all.slice(offset, offset + limit).map(({ item }) => ({ ...item }));
    }
    // an item's newest version, should a superseded one still be found (it is forgotten right after its successor is stored),
    // with its best field's score
    const found = new Map<string, SearchItem & { put: string }>();
    // scoped search, at most 100 subjects per request; more hits than asked for, as the filters drop some
    for (let i = 0; i < subjects.length; i += 100) {
      const group = subjects.slice(i, i + 100);
      let hits;
      try {
        hits = (
          await this.#lethe.search(op.query, {
            ...(group.length === 1 ? { subject: group[0]! } : { subjects: group }),
            // an item is an entry per indexed field: as many more hits
            k: Math.min(MAX_K, (offset + limit) * 4 * Math.max(1, this.#fields?.length ?? 1) + 10),
          })
        ).hits;
      } catch (e) {
        if (gone(e)) continue;
        throw e;
      }
      for (const hit of hits) {
        if (hit.type !== 'entry') continue;
        const stored = storedOf(hit);
        // an item that was not indexed has no score: it comes after the scored ones, below
        if (!stored || stored.indexed === false) continue;
        const item = toItem(stored, hit.createdAt);
        if (!wanted(item)) continue;
        const id = nsKey(item.namespace, item.key);
        const put = stored.put ?? hit.id;
        const before = found.get(id);
        if (before && before.put === put) before.score = Math.max(before.score!, hit.score);
        else if (!before || before.updatedAt < item.updatedAt) found.set(id, { ...item, score: hit.score, put });
      }
    }
    const scored: SearchItem[] = [...found.values()].sort((a, b) => b.score! - a.score!).map(({ put: _, ...item }) => item);
    if (scored.length >= offset + limit) return scored.slice(offset, offset + limit);
    // then, as LangGraph's own stores answer, the items that were not indexed, without a score
    const unscored: SearchItem[] = [];
    for (const subject of subjects) {
      for (const { item, indexed } of latest(await this.#items(subject, cache)).values()) {
        if (!indexed && wanted(item.item)) unscored.push({ ...item.item });
      }
    }
    return [...scored, ...unscored].slice(offset, offset + limit);
  }

  async #listNamespaces(op: ListNamespacesOperation, cache: Map<string, Promise<Located[]>>): Promise<string[][]> {
    const prefix = op.matchConditions?.find((c) => c.matchType === 'prefix')?.path ?? [];
    const fixed = prefix.includes('*') ? prefix.slice(0, prefix.indexOf('*')) : prefix;
    const named = fixed.length > 0 ? this.#subjectOf(fixed) : undefined;
    const namespaces = new Map<string, string[]>();
    const add = (namespace: string[]) => {
      if (!(op.matchConditions ?? []).every((c) => matches(c, namespace))) return;
      const ns = op.maxDepth !== undefined ? namespace.slice(0, op.maxDepth) : namespace;
      namespaces.set(JSON.stringify(ns), ns);
    };
    // every namespace the service indexed, of the subject the prefix names or of all (a fresh process sees them too)
    try {
      for await (const entry of this.#lethe.entries.namespaceEntries(named !== undefined ? { subject: this.#checkSubject(named) } : {})) {
        const stored = storedOf(entry);
        if (stored) add(stored.namespace);
      }
    } catch (e) {
      if (!gone(e)) throw e;
    }
    // items a writer sealed before its registrations named them are not indexed: those of the subjects this store knows, read whole
    if (this.#writer) for (const subject of this.#subjectsOf(fixed)) for (const { item } of await this.#items(subject, cache)) add(item.namespace);
    const sorted = [...namespaces.values()].sort((a, b) => (a.join('\u0000') < b.join('\u0000') ? -1 : a.join('\u0000') > b.join('\u0000') ? 1 : 0));
    const offset = op.offset ?? 0;
    return sorted.slice(offset, offset + (op.limit ?? sorted.length));
  }
}

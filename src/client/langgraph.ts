/**
 * `@lethe/client/langgraph`: a LangGraph.js `BaseStore` whose items are lethe entries,
 * so an agent's long-term memory is sealed per person and erasable with a certificate.
 *
 * Mapping (see clients/typescript/README.md):
 * - **namespace → subject**: `subjectOf(namespace)`, by default `namespace[0]`
 *   (`['alice', 'memories']` is the subject `alice`). Every item of a subject is
 *   destroyed with that subject's erasure.
 * - **an item is an entry** of that subject: the entry's `text` is what search
 *   matches (the value's strings, or the `fields` / per-put `index` paths), and the
 *   item itself — whole namespace, key, value, first creation time — travels in the
 *   entry's `metadata` under `langgraph`, inside the sealed frame: lethe's index and
 *   the object store never hold it in clear.
 * - **put** appends a new entry; a re-put of the same namespace and key supersedes
 *   the old one by forgetting it (`DELETE /v1/entries/{id}`, a records-scope erasure)
 *   once the new one is stored. **put(…, null)** and **delete** forget it.
 * - **get** is the latest live entry with that namespace and key (the subject's
 *   entries are read, page after page).
 * - **search** with a `query` is a scoped search of the subject (`POST /v1/search`
 *   with `subject`), without one the subject's entries newest first; either way
 *   filtered here by namespace prefix and `filter` on the value, then `offset` and
 *   `limit`.
 * - **listNamespaces** enumerates the namespaces of subjects it can name: the subject
 *   a prefix names, else the subjects this store has touched in this process or was
 *   told of (`subjects`). lethe keeps no subject ids in clear (its index holds keyed
 *   hashes), so no store can list every subject of a vault.
 *
 * The items of an erased subject are gone: get answers null, search and
 * listNamespaces nothing, and put is refused (410 `subject_erased`) until an admin
 * reinstates the subject.
 */
import {
  BaseStore,
  type GetOperation,
  getTextAtPath,
  InvalidNamespaceError,
  type Item,
  type ListNamespacesOperation,
  type MatchCondition,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchItem,
  type SearchOperation,
  validateNamespace,
} from '@langchain/langgraph-checkpoint';
import { LetheError } from '../errors.js';
import { SUBJECT_ID_PATTERN, SUBJECT_ID_RULE } from '../ids.js';
import { AppendEntrySchema, payloadProblem } from '../log/payload.js';
import { ServiceError } from './http.js';
import type { Lethe, NewEntry } from './lethe.js';
import type { LetheWriter } from './writer.js';

/** The entry metadata field that holds an item. */
export const ITEM_FIELD = 'langgraph';

/** The entry kind of the store's items (default). */
export const ITEM_KIND = 'langgraph-item';

/** The most hits one search asks lethe for (the service's `k` limit). */
const MAX_K = 100;

export interface LetheStoreOptions {
  /** The client, with tokens for the writer role (appends, reads, search) and the eraser role (forgetting). */
  readonly lethe: Lethe;
  /** The subject of a namespace (default: its first label); undefined when a prefix does not name one. */
  readonly subjectOf?: (namespace: readonly string[]) => string | undefined;
  /**
   * What an item's entry text (what search matches) is made of, as LangGraph index
   * paths (`"text"`, `"notes[*].content"`, `"$"` for the whole value as JSON). Default:
   * every string in the value, in order, one per line. A put's `index` overrides it;
   * `index: false` stores the item with an empty text (found by listing, not by query).
   */
  readonly fields?: readonly string[];
  /** Append through this writer (it seals in this process) instead of the service. */
  readonly writer?: LetheWriter;
  /** Subjects `listNamespaces` and prefix-less searches also cover (the ones this store touches are added as it goes). */
  readonly subjects?: Iterable<string>;
  /** The kind of the items' entries (default `langgraph-item`). */
  readonly kind?: string;
}

/** An item as it travels inside its entry. */
interface Stored {
  readonly namespace: string[];
  readonly key: string;
  readonly value: Record<string, unknown>;
  /** When the item was first put, on a re-put (the entry's own time is `updatedAt`, and `createdAt` of a first put). */
  readonly createdAt?: string;
}

interface Located {
  readonly entryId: string;
  readonly item: Item;
}

/** Where an item lives in lethe: its subject and the entry holding its current value. */
export interface ItemLocation {
  readonly subject: string;
  readonly entryId: string;
}

const sameNamespace = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((l, i) => l === b[i]);
const nsKey = (namespace: readonly string[], key: string): string => JSON.stringify([namespace, key]);

function hasPrefix(namespace: readonly string[], prefix: readonly string[]): boolean {
  return prefix.length <= namespace.length && prefix.every((l, i) => l === '*' || l === namespace[i]);
}

function matches(condition: MatchCondition, namespace: readonly string[]): boolean {
  const { path } = condition;
  if (path.length > namespace.length) return false;
  const offset = condition.matchType === 'suffix' ? namespace.length - path.length : 0;
  return path.every((l, i) => l === '*' || l === namespace[offset + i]);
}

/** LangGraph's filter semantics: equality, or `$eq $ne $gt $gte $lt $lte $in $nin` on a top-level field of the value. */
function passes(value: Record<string, unknown>, filter: Record<string, unknown> | undefined): boolean {
  if (!filter) return true;
  return Object.entries(filter).every(([field, wanted]) => {
    const actual = value[field];
    const ops = typeof wanted === 'object' && wanted !== null && !Array.isArray(wanted) ? Object.entries(wanted as Record<string, unknown>) : undefined;
    if (!ops || ops.length === 0 || !ops.every(([op]) => op.startsWith('$'))) return JSON.stringify(actual) === JSON.stringify(wanted);
    return ops.every(([op, v]) => {
      switch (op) {
        case '$eq':
          return JSON.stringify(actual) === JSON.stringify(v);
        case '$ne':
          return JSON.stringify(actual) !== JSON.stringify(v);
        case '$gt':
          return Number(actual) > Number(v);
        case '$gte':
          return Number(actual) >= Number(v);
        case '$lt':
          return Number(actual) < Number(v);
        case '$lte':
          return Number(actual) <= Number(v);
        case '$in':
          return Array.isArray(v) && v.some((x) => JSON.stringify(x) === JSON.stringify(actual));
        case '$nin':
          return !Array.isArray(v) || !v.some((x) => JSON.stringify(x) === JSON.stringify(actual));
        default:
          return false;
      }
    });
  });
}

/** Every string in a value, depth first in key order. */
function strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) strings(v, out);
  else if (typeof value === 'object' && value !== null) for (const v of Object.values(value)) strings(v, out);
  return out;
}

/** The text search matches for a value: the paths' strings, or every string. */
function indexText(value: Record<string, unknown>, paths: readonly string[] | false | undefined): string {
  if (paths === false) return '';
  if (paths === undefined) return strings(value).join('\n');
  return paths.flatMap((p) => (p === '$' ? [JSON.stringify(value)] : getTextAtPath(value, p))).join('\n');
}

/** The item an entry holds, or undefined when the entry is not one of the store's. */
function storedOf(entry: { readonly metadata: Record<string, unknown> | null }): Stored | undefined {
  const s = entry.metadata?.[ITEM_FIELD] as Partial<Stored> | undefined;
  if (!s || typeof s !== 'object' || !Array.isArray(s.namespace) || typeof s.key !== 'string' || typeof s.value !== 'object' || s.value === null)
    return undefined;
  return s as Stored;
}

function toItem(stored: Stored, entryCreatedAt: string): Item {
  return {
    namespace: [...stored.namespace],
    key: stored.key,
    value: stored.value,
    createdAt: new Date(stored.createdAt ?? entryCreatedAt),
    updatedAt: new Date(entryCreatedAt),
  };
}

/** A subject's entries as the store reads them: gone (404 never seen, 410 erased) reads as none. */
function gone(e: unknown): boolean {
  return e instanceof ServiceError && (e.status === 404 || e.status === 410);
}

export class LetheStore extends BaseStore {
  readonly #lethe: Lethe;
  readonly #subjectOf: (namespace: readonly string[]) => string | undefined;
  readonly #fields: readonly string[] | undefined;
  readonly #writer: LetheWriter | undefined;
  readonly #kind: string;
  /** Subjects this store has touched (or was told of): what listNamespaces and prefix-less searches cover. */
  readonly #subjects = new Set<string>();

  constructor(options: LetheStoreOptions) {
    super();
    this.#lethe = options.lethe;
    this.#subjectOf = options.subjectOf ?? ((namespace) => (namespace[0] === undefined || namespace[0] === '*' ? undefined : namespace[0]));
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
    const found = this.#current(await this.#items(subject, new Map()), namespace, key);
    return found ? { subject, entryId: found.entryId } : null;
  }

  #checkSubject(subject: string): string {
    if (!SUBJECT_ID_PATTERN.test(subject)) throw new LetheError('validation_failed', `${SUBJECT_ID_RULE} (the subject the namespace maps to)`);
    return subject;
  }

  #subjectFor(namespace: readonly string[]): string {
    const subject = this.#subjectOf(namespace);
    if (subject === undefined) throw new InvalidNamespaceError(`the namespace ${JSON.stringify(namespace)} names no subject (subjectOf answered none)`);
    return this.#checkSubject(subject);
  }

  /** The store's live items of a subject in log order, each with its entry id; none for a subject never seen or erased. */
  #items(subject: string, cache: Map<string, Promise<Located[]>>): Promise<Located[]> {
    let items = cache.get(subject);
    if (!items) {
      items = (async () => {
        const found: Located[] = [];
        try {
          for await (const entry of this.#lethe.entries.list(subject, { limit: 1000 })) {
            const stored = storedOf(entry);
            if (stored) found.push({ entryId: entry.entryId, item: toItem(stored, entry.createdAt) });
          }
        } catch (e) {
          if (gone(e)) return [];
          throw e;
        }
        return found;
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

  #current(items: readonly Located[], namespace: readonly string[], key: string): Located | undefined {
    return this.#versions(items, namespace, key).at(-1);
  }

  async #get(op: GetOperation, cache: Map<string, Promise<Located[]>>): Promise<Item | null> {
    const subject = this.#subjectFor(op.namespace);
    this.#subjects.add(subject);
    return this.#current(await this.#items(subject, cache), op.namespace, op.key)?.item ?? null;
  }

  async #put(op: PutOperation, cache: Map<string, Promise<Located[]>>): Promise<void> {
    validateNamespace(op.namespace, { allowReservedRoot: op.value === null });
    const subject = this.#subjectFor(op.namespace);
    this.#subjects.add(subject);
    const older = this.#versions(await this.#items(subject, cache), op.namespace, op.key);
    cache.delete(subject);
    if (op.value !== null) {
      const first = older[0]?.item.createdAt;
      const stored: Stored = { namespace: [...op.namespace], key: op.key, value: op.value, ...(first ? { createdAt: first.toISOString() } : {}) };
      const entry: NewEntry = { text: indexText(op.value, op.index ?? this.#fields), kind: this.#kind, metadata: { [ITEM_FIELD]: stored } };
      const problem = payloadProblem(AppendEntrySchema, entry);
      if (problem) {
        throw new LetheError(
          'validation_failed',
          `the item does not fit in a lethe entry (its namespace, key and value travel sealed as the entry's metadata: a JSON object of at most 16 KiB): ${problem}`,
        );
      }
      if (this.#writer) await this.#writer.append(subject, entry);
      else await this.#lethe.entries.append(subject, entry);
    }
    // the new value is stored: forget the ones it supersedes (or, for a delete, the item)
    for (const old of older) {
      try {
        await this.#lethe.forget(old.entryId);
      } catch (e) {
        if (!gone(e)) throw e;
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
    if (op.query === undefined || op.query === '') {
      const all: Array<{ item: Item; at: number }> = [];
      for (const subject of subjects) {
        const items = await this.#items(subject, cache);
        // the latest version of each item only (the log's order breaks ties of time)
        const latest = new Map<string, { item: Item; at: number }>();
        for (const [at, l] of items.entries()) {
          const id = nsKey(l.item.namespace, l.item.key);
          latest.delete(id);
          latest.set(id, { item: l.item, at });
        }
        all.push(...[...latest.values()].filter((x) => wanted(x.item)));
      }
      all.sort((a, b) => b.item.updatedAt.getTime() - a.item.updatedAt.getTime() || b.at - a.at);
      return all.slice(offset, offset + limit).map(({ item }) => ({ ...item }));
    }
    // an item's newest version, should a superseded one still be found (it is forgotten right after its successor is stored)
    const found = new Map<string, SearchItem>();
    // scoped search, at most 100 subjects per request; more hits than asked for, as the filters drop some
    for (let i = 0; i < subjects.length; i += 100) {
      const group = subjects.slice(i, i + 100);
      let hits;
      try {
        hits = (
          await this.#lethe.search(op.query, {
            ...(group.length === 1 ? { subject: group[0]! } : { subjects: group }),
            k: Math.min(MAX_K, (offset + limit) * 4 + 10),
          })
        ).hits;
      } catch (e) {
        if (gone(e)) continue;
        throw e;
      }
      for (const hit of hits) {
        if (hit.type !== 'entry') continue;
        const stored = storedOf(hit);
        if (!stored) continue;
        const item = toItem(stored, hit.createdAt);
        if (!wanted(item)) continue;
        const id = nsKey(item.namespace, item.key);
        const before = found.get(id);
        if (!before || before.updatedAt < item.updatedAt) found.set(id, { ...item, score: hit.score });
      }
    }
    return [...found.values()].sort((a, b) => (b.score ?? 0) - (a.score ?? 0)).slice(offset, offset + limit);
  }

  async #listNamespaces(op: ListNamespacesOperation, cache: Map<string, Promise<Located[]>>): Promise<string[][]> {
    const prefix = op.matchConditions?.find((c) => c.matchType === 'prefix')?.path ?? [];
    const subjects = this.#subjectsOf(prefix.includes('*') ? prefix.slice(0, prefix.indexOf('*')) : prefix);
    const namespaces = new Map<string, string[]>();
    for (const subject of subjects) {
      for (const { item } of await this.#items(subject, cache)) {
        if (!(op.matchConditions ?? []).every((c) => matches(c, item.namespace))) continue;
        const ns = op.maxDepth !== undefined ? item.namespace.slice(0, op.maxDepth) : item.namespace;
        namespaces.set(JSON.stringify(ns), ns);
      }
    }
    const sorted = [...namespaces.values()].sort((a, b) => (a.join('\u0000') < b.join('\u0000') ? -1 : a.join('\u0000') > b.join('\u0000') ? 1 : 0));
    const offset = op.offset ?? 0;
    return sorted.slice(offset, offset + (op.limit ?? sorted.length));
  }
}

/**
 * The LangGraph store's items as lethe entries (langgraph.ts): what an entry carries,
 * the versions of an item, the texts a value is indexed by, and LangGraph's namespace
 * matching and filter semantics.
 */
import { getTextAtPath, type Item, type MatchCondition } from '@langchain/langgraph-checkpoint';
import { randomUUID } from 'node:crypto';
import { LetheError } from '../errors.js';
import { AppendEntrySchema, payloadProblem } from '../log/payload.js';
import { ServiceError } from './http.js';
import type { NewEntry } from './entries.js';

/** The entry metadata field that holds an item. */
export const ITEM_FIELD = 'langgraph';

/** An item as it travels inside its entries. */
export interface Stored {
  readonly namespace: string[];
  readonly key: string;
  readonly value: Record<string, unknown>;
  /** When the item was first put, on a re-put (the entry's own time is `updatedAt`, and `createdAt` of a first put). */
  readonly createdAt?: string;
  /** The put that wrote this version: its entries (one per indexed field) share it. Absent: a one-entry put of an earlier store. */
  readonly put?: string;
  /** The field (index path) whose text this entry holds; absent with the default (every string). */
  readonly field?: string;
  /** False: the item was put with `index: false` (or no field had text), and carries no score. */
  readonly indexed?: boolean;
}

/** One version of an item: the entries of one put. */
export interface Located {
  readonly entryIds: string[];
  readonly item: Item;
  /** False: put with `index: false` (or no field had text): never a hit of a query, and never scored. */
  readonly indexed: boolean;
}

export const sameNamespace = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((l, i) => l === b[i]);
export const nsKey = (namespace: readonly string[], key: string): string => JSON.stringify([namespace, key]);

export function hasPrefix(namespace: readonly string[], prefix: readonly string[]): boolean {
  return prefix.length <= namespace.length && prefix.every((l, i) => l === '*' || l === namespace[i]);
}

export function matches(condition: MatchCondition, namespace: readonly string[]): boolean {
  const { path } = condition;
  if (path.length > namespace.length) return false;
  const offset = condition.matchType === 'suffix' ? namespace.length - path.length : 0;
  return path.every((l, i) => l === '*' || l === namespace[offset + i]);
}

/** LangGraph's filter semantics: equality, or `$eq $ne $gt $gte $lt $lte $in $nin` on a top-level field of the value. */
export function passes(value: Record<string, unknown>, filter: Record<string, unknown> | undefined): boolean {
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
export function strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) strings(v, out);
  else if (typeof value === 'object' && value !== null) for (const v of Object.values(value)) strings(v, out);
  return out;
}

/** The texts search matches for a value, one per field: each path's strings (a path without any is left out), or every string as one field. */
export function indexTexts(value: Record<string, unknown>, paths: readonly string[] | false | undefined): Array<{ field?: string; text: string }> {
  if (paths === false) return [];
  if (paths === undefined) {
    const text = strings(value).join('\n');
    return text === '' ? [] : [{ text }];
  }
  return [...new Set(paths)]
    .map((field) => ({ field, text: (field === '$' ? [JSON.stringify(value)] : getTextAtPath(value, field)).join('\n') }))
    .filter((f) => f.text !== '');
}

/**
 * The entries of a put: one per indexed field (each scored on its own), or for an
 * unindexed item one entry without text; each holds the item sealed in its metadata
 * and names it (`item`), so the service indexes it as keyed hashes. `first`: when the
 * item was first put, on a re-put.
 */
export function putEntries(
  op: { readonly namespace: readonly string[]; readonly key: string; readonly index?: false | string[] | undefined },
  value: Record<string, unknown>,
  options: { readonly kind: string; readonly fields: readonly string[] | undefined; readonly first?: Date | undefined },
): Array<NewEntry & { readonly item: NonNullable<NewEntry['item']> }> {
  const base: Stored = {
    namespace: [...op.namespace],
    key: op.key,
    value,
    ...(options.first ? { createdAt: options.first.toISOString() } : {}),
    put: randomUUID(),
  };
  const texts = indexTexts(value, op.index ?? options.fields);
  const entries = (texts.length > 0 ? texts : [undefined]).map((t) => ({
    text: t?.text ?? '',
    kind: options.kind,
    item: { namespace: [...op.namespace], key: op.key },
    metadata: { [ITEM_FIELD]: t ? { ...base, ...(t.field !== undefined ? { field: t.field } : {}) } : { ...base, indexed: false } },
  }));
  for (const entry of entries) {
    const problem = payloadProblem(AppendEntrySchema, entry);
    if (problem) {
      throw new LetheError(
        'validation_failed',
        `the item does not fit in a lethe entry (its namespace, key and value travel sealed as the entry's metadata: a JSON object of at most 16 KiB): ${problem}`,
      );
    }
  }
  return entries;
}

/** The item an entry holds, or undefined when the entry is not one of the store's. */
export function storedOf(entry: { readonly metadata: Record<string, unknown> | null }): Stored | undefined {
  const s = entry.metadata?.[ITEM_FIELD] as Partial<Stored> | undefined;
  if (!s || typeof s !== 'object' || !Array.isArray(s.namespace) || typeof s.key !== 'string' || typeof s.value !== 'object' || s.value === null)
    return undefined;
  return s as Stored;
}

export function toItem(stored: Stored, entryCreatedAt: string): Item {
  return {
    namespace: [...stored.namespace],
    key: stored.key,
    value: stored.value,
    createdAt: new Date(stored.createdAt ?? entryCreatedAt),
    updatedAt: new Date(entryCreatedAt),
  };
}

/** The latest version of each item (the log's order breaks ties of time), with its place in the log, by item. */
export function latest(items: readonly Located[]): Map<string, { item: Located; indexed: boolean; at: number }> {
  const out = new Map<string, { item: Located; indexed: boolean; at: number }>();
  for (const [at, l] of items.entries()) {
    const id = nsKey(l.item.namespace, l.item.key);
    out.delete(id);
    out.set(id, { item: l, indexed: l.indexed, at });
  }
  return out;
}

/** The store's versions among `entries` (in log order): one per put, with every entry of it (one per indexed field). */
export function versionsIn(
  entries: Iterable<{ readonly entryId: string; readonly createdAt: string; readonly metadata: Record<string, unknown> | null }>,
): Located[] {
  const found = new Map<string, Located>();
  for (const entry of entries) {
    const stored = storedOf(entry);
    if (!stored) continue;
    const put = stored.put ?? entry.entryId;
    const version = found.get(put);
    if (version) version.entryIds.push(entry.entryId);
    else found.set(put, { entryIds: [entry.entryId], item: toItem(stored, entry.createdAt), indexed: stored.indexed !== false });
  }
  return [...found.values()];
}

/** The subject or entry is not there (any more): an empty answer, not an error, to a store. */
export function gone(e: unknown): boolean {
  return e instanceof ServiceError && (e.status === 404 || e.status === 410);
}

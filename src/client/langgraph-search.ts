/**
 * The LangGraph store's search of one subject, filtered and paged on the service
 * (`POST /v1/subjects/{subject}/items/search`): what `LetheStore.search` asks when the
 * prefix names the subject and the filter is one the service applies as it stands.
 */
import type { SearchItem, SearchOperation } from '@langchain/langgraph-checkpoint';
import { gone, hasPrefix, ITEM_FIELD, storedOf, toItem } from './langgraph-items.js';
import type { Lethe } from './lethe.js';

/** Items and namespaces one service search takes. */
const MAX_PAGE = 100;
const MAX_NAMESPACES = 64;

export /** A filter the service can apply as it stands: equality on fields, each value a scalar or an array (no operator, no object). */
function serverFilter(filter: Record<string, unknown> | undefined): boolean {
  return Object.values(filter ?? {}).every((v) => v === null || typeof v !== 'object' || Array.isArray(v));
}

/**
 * One subject's search filtered and paged on the service (`entries.searchItems`): the
 * namespaces under the prefix named by their labels (the service lists them), an
 * equality filter as the entries' metadata; with a query the scored items first, then
 * (as LangGraph's own stores answer) those not indexed, without a score. Undefined
 * when the prefix covers more namespaces than one request names (searched here then).
 */
export async function searchOnService(lethe: Lethe, subject: string, op: SearchOperation, offset: number, limit: number): Promise<SearchItem[] | undefined> {
  const namespaces = new Map<string, string[]>();
  try {
    for await (const entry of lethe.entries.namespaceEntries({ subject })) {
      const stored = storedOf(entry);
      if (stored && hasPrefix(stored.namespace, op.namespacePrefix)) namespaces.set(JSON.stringify(stored.namespace), stored.namespace);
    }
  } catch (e) {
    if (gone(e)) return [];
    throw e;
  }
  if (namespaces.size === 0) return [];
  if (namespaces.size > MAX_NAMESPACES) return undefined;
  const value = op.filter && Object.keys(op.filter).length > 0 ? { value: op.filter } : {};
  const scope = { namespaces: [...namespaces.values()] };
  const page = async (query: string | undefined, extra: Record<string, unknown>, from: number, count: number) =>
    count <= 0
      ? []
      : (
          await lethe.entries.searchItems(subject, {
            ...(query ? { query } : {}),
            ...scope,
            metadata: { [ITEM_FIELD]: { ...value, ...extra } },
            offset: from,
            limit: count,
          })
        )
          .map((found) => {
            const entry = found.entries[0]!;
            const stored = storedOf(entry);
            return stored ? { ...toItem(stored, entry.createdAt), ...(query ? { score: found.score ?? 0 } : {}) } : undefined;
          })
          .filter((i): i is SearchItem => i !== undefined);
  try {
    if (op.query === undefined || op.query === '') return await page(undefined, {}, offset, limit);
    // scored items from the first, so the unscored ones know where they start
    const scored = await page(op.query, {}, 0, Math.min(MAX_PAGE, offset + limit));
    const unscored = await page(undefined, { indexed: false }, Math.max(0, offset - scored.length), offset + limit - Math.max(offset, scored.length));
    return [...scored.slice(offset), ...unscored].slice(0, limit);
  } catch (e) {
    if (gone(e)) return [];
    throw e;
  }
}

/**
 * Store items: an entry may name the item it holds — a namespace (a path of labels) and
 * a key, as LangGraph's stores and Mem0 name memories. The index keeps them only as
 * keyed hashes (HMAC-SHA256 under the 'store-item' subkey, never the labels), so an
 * item's live entries are one index lookup whatever the subject holds, and the
 * namespaces in use are one live entry each: the labels themselves are read back from
 * those entries' sealed frames (the caller put them there), and die with their keys.
 */
import { and, desc, eq, isNull, sql } from 'drizzle-orm';
import { type KeyedHasher, utf8 } from '../crypto/index.js';
import { preparedPer, queryRows } from '../db/client.js';
import { logEntries } from '../db/schema.js';
import { LetheError } from '../errors.js';
import type { LogContext } from './context.js';
import type { StoreItem } from './payload.js';
import { type Entry, readMany, readSelected, selectWithKeys } from './read.js';

export interface ItemHashes {
  readonly itemHash: Uint8Array;
  readonly namespaceHash: Uint8Array;
}

/**
 * The keyed hashes that index `item` of the subject (domain-separated: an item's and a
 * namespace's never collide; bound to the subject: the same labels of two subjects
 * hash apart, so the index does not link them).
 */
export function itemHashes(hasher: KeyedHasher | undefined, subjectHash: Uint8Array, item: StoreItem): ItemHashes {
  if (!hasher) throw new LetheError('internal', 'the log was opened without the store-item key');
  const subject = Buffer.from(subjectHash).toString('hex');
  return {
    itemHash: hasher.hash(utf8.encode(`item\u0000${subject}\u0000${JSON.stringify([item.namespace, item.key])}`)),
    namespaceHash: hasher.hash(utf8.encode(`namespace\u0000${subject}\u0000${JSON.stringify(item.namespace)}`)),
  };
}

/** The readable live entries holding `item` for the subject, newest first: one index lookup, then those entries' frames. */
export async function lookupItem(c: LogContext, subject: string, item: StoreItem): Promise<Entry[]> {
  const subjectHash = c.keys.subjectHash(subject);
  const { itemHash } = itemHashes(c.items, subjectHash, item);
  for (let look = 1; ; look++) {
    // the entries with their keys in one statement (readSelected opens them without another)
    const rows = await itemLookup(c.db).execute({ subjectHash: Buffer.from(subjectHash), itemHash: Buffer.from(itemHash) });
    const found = await readSelected(c, rows);
    // a version superseded or forgotten between the two looks has a successor the first did not see (a supersession
    // is one transaction): look again, so that a live item never answers as absent
    if (found.size < rows.length && look < MAX_LOOKS) continue;
    return rows.flatMap(({ row }) => (found.has(row.entryId) ? [found.get(row.entryId)!] : []));
  }
}

/** Live entries one item may hold at once (one per indexed field, and a racing put's): more are not read. */
const MAX_LIVE_VERSIONS = 64;

/** An item's live entries with their keys, newest first: prepared (parsed and planned once per connection). */
const itemLookup = preparedPer((db) =>
  selectWithKeys(db)
    .where(
      and(
        eq(logEntries.subjectHash, sql.placeholder('subjectHash')),
        eq(logEntries.itemHash, sql.placeholder('itemHash')),
        isNull(logEntries.forgottenBy),
        isNull(logEntries.refused),
      ),
    )
    .orderBy(desc(logEntries.seq))
    .limit(MAX_LIVE_VERSIONS)
    .prepare('item-lookup-read'),
);

/**
 * One readable live entry of each namespace in use — of one subject, or of every
 * subject whose key is live (the same labels in two subjects are two namespaces) —
 * in a stable order (by namespace hash), `offset` and `limit` applied. The caller
 * reads each namespace's labels from its entry.
 */
export async function namespaceEntries(c: LogContext, options: { subject?: string | undefined; limit: number; offset: number }): Promise<Entry[]> {
  const subject = options.subject === undefined ? sql`` : sql`and e.subject_hash = ${c.keys.subjectHash(options.subject)}`;
  for (let look = 1; ; look++) {
    const rows = await queryRows<{ entry_id: string }>(
      c.db,
      sql`select distinct on (e.namespace_hash) e.entry_id
            from log_entries e
           where e.namespace_hash is not null and e.forgotten_by is null and e.refused is null ${subject}
             and exists (select 1 from subject_keys k where k.key_id = e.key_id)
           order by e.namespace_hash, e.seq desc
           offset ${options.offset} limit ${options.limit}`,
    );
    const found = await readMany(
      c,
      rows.map((r) => r.entry_id),
    );
    // an entry superseded or forgotten between the two looks: its namespace has a newer one, look again
    if (found.size < rows.length && look < MAX_LOOKS) continue;
    return rows.flatMap((r) => (found.has(r.entry_id) ? [found.get(r.entry_id)!] : []));
  }
}

/** How often a listing looks again when entries it selected went before they were read (a supersession in between). */
export const MAX_LOOKS = 4;

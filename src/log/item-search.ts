/**
 * Store items searched on the service (a LangGraph store's `search`): a subject's live
 * items, one answer per item (its entries grouped by the item's keyed hash), kept to
 * the namespaces named (by their keyed hashes) and to entries whose sealed metadata
 * contains `metadata`, then paged — newest first, or in the order of a ranking the
 * caller computed (a vector search's hits). The metadata is opened here, on the service:
 * the caller receives only the page.
 */
import { sql } from 'drizzle-orm';
import { queryRows } from '../db/client.js';
import type { LogContext } from './context.js';
import { itemHashes, MAX_LOOKS } from './items.js';
import type { StoreItem } from './payload.js';
import { type Entry, readMany } from './read.js';

export interface ItemSearch {
  /** Only items of these namespaces (absent: every namespace of the subject). */
  readonly namespaces?: ReadonlyArray<StoreItem['namespace']> | undefined;
  /** Only entries whose metadata holds these fields with these values (objects matched field by field). */
  readonly metadata?: Record<string, unknown> | undefined;
  readonly limit: number;
  readonly offset: number;
}

/** One item: its live entries that matched (newest first), and with a ranking its best entry's score. */
export interface FoundItem {
  readonly entries: Entry[];
  readonly score?: number;
}

/**
 * A filtered search reads rounds of items: the first twice what the page needs (FIRST_ROUND
 * at least: a filter half the items pass fills it), each next one twice the last up to
 * ROUND, so a common filter opens little more than the page and a rare one takes few
 * rounds; at most MAX_SCANNED items a request (its work is bounded).
 */
const FIRST_ROUND = 16;
const ROUND = 200;
const MAX_SCANNED = 5_000;
/** An item's live entries read at most (one per indexed field, and a racing put's), as a lookup reads. */
const MAX_ITEM_ENTRIES = 64;

/** Whether `value` holds every field of `wanted` with its value (objects compared field by field, the rest exactly). */
export function containsFields(value: unknown, wanted: unknown): boolean {
  if (wanted !== null && typeof wanted === 'object' && !Array.isArray(wanted)) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
    return Object.entries(wanted).every(([k, w]) => containsFields((value as Record<string, unknown>)[k], w));
  }
  return JSON.stringify(value) === JSON.stringify(wanted);
}

function namespaceFilter(c: LogContext, subjectHash: Uint8Array, s: ItemSearch) {
  if (!s.namespaces) return sql``;
  const hashes = s.namespaces.map((namespace) => Buffer.from(itemHashes(c.items, subjectHash, { namespace, key: '' }).namespaceHash).toString('hex'));
  return sql`and encode(e.namespace_hash, 'hex') in (select json_array_elements_text(${JSON.stringify(hashes)}::json))`;
}

/**
 * The subject's live items, newest first (by their newest entry), filtered and paged.
 * With a metadata filter, items are read a round at a time (keyset, by newest entry;
 * rounds growing from the page's size) until the page fills or MAX_SCANNED items were
 * read: the page may then be short.
 */
export async function listItems(c: LogContext, subject: string, s: ItemSearch): Promise<FoundItem[]> {
  const subjectHash = c.keys.subjectHash(subject);
  const out: FoundItem[] = [];
  // without a metadata filter the page is the index's; with one, rounds of items until the page fills
  let skip = s.metadata ? s.offset : 0;
  let round = s.metadata ? Math.min(ROUND, Math.max(FIRST_ROUND, 2 * (s.offset + s.limit))) : s.limit;
  let before: number | undefined;
  let scanned = 0;
  for (let look = 1; out.length < s.limit && scanned < MAX_SCANNED; ) {
    const rows = await queryRows<{ newest: string | number; entry_ids: string[] }>(
      c.db,
      sql`select max(e.seq) as newest, (array_agg(e.entry_id order by e.seq desc))[1:${MAX_ITEM_ENTRIES}] as entry_ids
            from log_entries e
           where e.subject_hash = ${subjectHash} and e.item_hash is not null and e.forgotten_by is null and e.refused is null
             and exists (select 1 from subject_keys k where k.key_id = e.key_id) ${namespaceFilter(c, subjectHash, s)}
           group by e.item_hash
          ${before === undefined ? sql`` : sql`having max(e.seq) < ${before}`}
           order by max(e.seq) desc
           ${s.metadata ? sql`` : sql`offset ${s.offset}`} limit ${round}`,
    );
    const found = await readMany(
      c,
      rows.flatMap((r) => r.entry_ids),
    );
    // an item whose entries all went between the two looks was superseded in between: its successor is newer, look again
    if (look < MAX_LOOKS && rows.some((r) => !r.entry_ids.some((id) => found.has(id)))) {
      look++;
      continue;
    }
    for (const r of rows) {
      const entries = r.entry_ids.flatMap((id) => (found.has(id) ? [found.get(id)!] : [])).filter((e) => !s.metadata || containsFields(e.metadata, s.metadata));
      if (entries.length === 0) continue;
      if (skip > 0) skip--;
      else if (out.length < s.limit) out.push({ entries });
    }
    if (rows.length < round || !s.metadata) break;
    scanned += rows.length;
    before = Number(rows.at(-1)!.newest);
    round = Math.min(ROUND, round * 2);
    look = 1;
  }
  return out;
}

/** The items of ranked entries (a search's hits, best first), each at its best entry's score, filtered and paged. */
export async function rankItems(
  c: LogContext,
  subject: string,
  ranked: ReadonlyArray<{ entryId: string; score: number }>,
  s: ItemSearch,
): Promise<FoundItem[]> {
  if (ranked.length === 0) return [];
  const read = await readMany(
    c,
    ranked.map((r) => r.entryId),
  );
  const subjectHash = c.keys.subjectHash(subject);
  const rows = await queryRows<{ entry_id: string; item_hash: Buffer }>(
    c.db,
    sql`select e.entry_id, e.item_hash from log_entries e
         where e.subject_hash = ${subjectHash} and e.item_hash is not null and e.forgotten_by is null and e.refused is null
           and e.entry_id in (select json_array_elements_text(${JSON.stringify(ranked.map((r) => r.entryId))}::json)) ${namespaceFilter(c, subjectHash, s)}`,
  );
  const itemOf = new Map(rows.map((r) => [r.entry_id, Buffer.from(r.item_hash).toString('hex')]));
  const items = new Map<string, { entries: Entry[]; score: number }>();
  for (const { entryId, score } of ranked) {
    const item = itemOf.get(entryId);
    const entry = read.get(entryId);
    if (item === undefined || !entry || (s.metadata && !containsFields(entry.metadata, s.metadata))) continue;
    const found = items.get(item);
    if (found) found.entries.push(entry);
    else items.set(item, { entries: [entry], score });
  }
  return [...items.values()]
    .sort((a, b) => b.score - a.score)
    .slice(s.offset, s.offset + s.limit)
    .map((i) => ({ entries: i.entries.sort((a, b) => b.seq - a.seq), score: i.score }));
}

/**
 * Keyset pagination over (created_at, id): the SQL pieces the lists of artifacts,
 * backups and erasures share (each module queries its own table with them). A
 * position is the last row of a page, its `created_at` as exact text (microseconds,
 * UTC): a JavaScript Date would round a timestamp written by `now()` to milliseconds
 * and the next page would repeat or skip rows. `(created_at, id) > (…)` is one row
 * comparison, answered from the (created_at, id) index migration 0009 added.
 */
import { type AnyColumn, asc, type SQL, sql } from 'drizzle-orm';

/** Where a page ended: the last row's exact creation time and id. */
export interface KeysetPosition {
  /** `YYYY-MM-DDTHH:MM:SS.ffffffZ` (UTC, microseconds), as `positionTime` answers it. */
  readonly createdAt: string;
  readonly id: string;
}

/** A page request: the rows after `after` (from the first without it), at most `limit` (all without it). */
export interface KeysetPage {
  readonly after?: KeysetPosition | undefined;
  readonly limit?: number | undefined;
}

/** A timestamptz column as a position's exact text. */
export function positionTime(createdAt: AnyColumn): SQL<string> {
  return sql<string>`to_char(${createdAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
}

/** Rows after the position (none: every row). */
export function afterPosition(createdAt: AnyColumn, id: AnyColumn, after: KeysetPosition | undefined): SQL | undefined {
  return after ? sql`(${createdAt}, ${id}) > (${after.createdAt}::timestamptz, ${after.id})` : undefined;
}

/** The list's order: oldest first, ties by id. */
export function positionOrder(createdAt: AnyColumn, id: AnyColumn): SQL[] {
  return [asc(createdAt), asc(id)];
}

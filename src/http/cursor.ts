/**
 * Cursors of the paginated lists (`GET /v1/subjects/{s}/entries`, `/v1/artifacts`,
 * `/v1/backups`, `/v1/erasures`): the one `limit`/`cursor` query, the cursor's wire
 * form, and the page a route answers.
 *
 * A cursor is base64url (no padding) of a small JSON object, format version 1:
 *   entries                        {"v":1,"l":"entries","s":<seq of the page's last entry>}
 *   artifacts, backups, erasures   {"v":1,"l":"<list>","t":"<created_at, µs, UTC>","i":"<id>"}
 * `l` binds it to the list it came from: another list's cursor is 400
 * `validation_failed`, as is anything that does not decode to exactly this shape. It is
 * not MAC'd (README, invariant 8): it names a position the caller could reach by walking.
 */
import { z } from '@hono/zod-openapi';
import { fromBase64Url, toBase64Url, utf8 } from '../crypto/index.js';
import { LetheError } from '../errors.js';
import { ID_PATTERNS, type IdPrefix } from '../ids.js';
import { authErrors, problemResponse } from './schemas.js';

export const PAGE_LIMIT_DEFAULT = 100;
export const PAGE_LIMIT_MAX = 1000;
const CURSOR_VERSION = 1;
/** Far above any cursor lethe hands out (about 120 characters). */
const CURSOR_MAX_LENGTH = 512;
/** `log_entries.seq` is a PostgreSQL integer. */
const SEQ_MAX = 2 ** 31 - 1;
/** What `positionTime` (src/db/keyset.ts) answers: UTC, microseconds. */
const POSITION_TIME = /^(\d{4})-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.(\d{3})\d{3}Z$/;

/** The lists keyed on (created_at, id), with the prefix of their ids. */
const KEYSET_LISTS = { artifacts: 'art', backups: 'bak', erasures: 'ers' } as const satisfies Record<string, IdPrefix>;
type KeysetList = keyof typeof KEYSET_LISTS;
export type ListName = 'entries' | KeysetList;

/** Where a page of entries ended. */
export interface SeqPosition {
  readonly seq: number;
}
/** Where a page of artifacts, backups or erasures ended (src/db/keyset.ts `KeysetPosition`). */
export interface TimePosition {
  readonly createdAt: string;
  readonly id: string;
}
export type PositionOf<L extends ListName> = L extends 'entries' ? SeqPosition : TimePosition;

const LIMIT_RULE = `must be an integer from 1 to ${PAGE_LIMIT_MAX}`;

/** The query of every list: `limit` (default 100) and `cursor`. */
export const PageQuery = z.object({
  limit: z.coerce
    .number({ error: LIMIT_RULE })
    .int({ error: LIMIT_RULE })
    .min(1, { error: LIMIT_RULE })
    .max(PAGE_LIMIT_MAX, { error: LIMIT_RULE })
    .default(PAGE_LIMIT_DEFAULT)
    .openapi({
      param: { name: 'limit', in: 'query' },
      description: `Items per page, 1 to ${PAGE_LIMIT_MAX} (default ${PAGE_LIMIT_DEFAULT}).`,
      example: PAGE_LIMIT_DEFAULT,
    }),
  cursor: z
    .string()
    .max(CURSOR_MAX_LENGTH, { error: 'must be the nextCursor of a previous page of this list' })
    .regex(/^[A-Za-z0-9_-]+$/, { error: 'must be the nextCursor of a previous page of this list' })
    .optional()
    .openapi({
      param: { name: 'cursor', in: 'query' },
      description: 'The `nextCursor` of the previous page (opaque); absent: the first page. A cursor of another list is 400 `validation_failed`.',
    }),
});

/** The `nextCursor` field every list answers. */
export const NextCursor = z.string().nullable().openapi({ description: 'Pass as `cursor` for the next page; null on the last page.' });

/** The error answers of a list route: those of every authenticated route, the 400 saying what a list adds. */
export const listErrors = {
  ...authErrors,
  400: problemResponse('validation_failed: `limit` outside 1–1000, or a `cursor` that is malformed or of another list'),
} as const;

function refused(reason: string): LetheError {
  return new LetheError('validation_failed', `query.cursor: ${reason}`);
}

export function encodeCursor<L extends ListName>(list: L, position: PositionOf<L>): string {
  const body = 'seq' in position ? { v: CURSOR_VERSION, l: list, s: position.seq } : { v: CURSOR_VERSION, l: list, t: position.createdAt, i: position.id };
  return toBase64Url(utf8.encode(JSON.stringify(body)));
}

/** The position a cursor of `list` names (none: the first page); validation_failed for anything else. */
export function decodeCursor<L extends ListName>(list: L, cursor: string | undefined): PositionOf<L> | undefined {
  if (cursor === undefined) return undefined;
  const bytes = cursor.length <= CURSOR_MAX_LENGTH ? fromBase64Url(cursor) : undefined;
  let body: unknown;
  try {
    body = bytes ? JSON.parse(utf8.decode(bytes)) : undefined;
  } catch {
    body = undefined;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw refused('not a cursor lethe handed out (malformed)');
  const b = body as Record<string, unknown>;
  if (b.v !== CURSOR_VERSION) throw refused('not a cursor of this version of lethe');
  if (b.l !== list)
    throw refused(`a cursor of ${typeof b.l === 'string' ? `another list (${JSON.stringify(b.l.slice(0, 20))})` : 'no list'}, not of the ${list} list`);
  if (list === 'entries') {
    if (Object.keys(b).length !== 3 || !Number.isSafeInteger(b.s) || (b.s as number) < 0 || (b.s as number) > SEQ_MAX) throw refused('malformed position');
    return { seq: b.s as number } as PositionOf<L>;
  }
  const prefix = KEYSET_LISTS[list as KeysetList];
  if (Object.keys(b).length !== 4 || typeof b.t !== 'string' || !isPositionTime(b.t) || typeof b.i !== 'string' || !ID_PATTERNS[prefix].test(b.i)) {
    throw refused('malformed position');
  }
  return { createdAt: b.t, id: b.i } as PositionOf<L>;
}

/** A real instant from year 1 on, in exactly the form the database writes (so it never reaches SQL malformed). */
function isPositionTime(text: string): boolean {
  const m = POSITION_TIME.exec(text);
  if (!m || Number(m[1]) < 1) return false;
  const ms = `${text.slice(0, 20)}${m[2]}Z`;
  const d = new Date(ms);
  return !Number.isNaN(d.getTime()) && d.toISOString() === ms;
}

/**
 * A page of `list`: the first `limit` of `rows` — the route asked its service for
 * `limit + 1`, so one more row means another page follows — and the cursor after its last.
 */
export function pageOf<L extends ListName, T>(
  list: L,
  rows: readonly T[],
  limit: number,
  positionOf: (row: T) => PositionOf<L>,
): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last !== undefined ? encodeCursor(list, positionOf(last)) : null };
}

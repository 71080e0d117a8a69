/** The DEKs of live keys, by id (for services that decrypt: log, artifacts), unwrapped under their epoch. The caller zeroes them. */
import { eq, inArray } from 'drizzle-orm';
import { zeroize } from '../crypto/index.js';
import { subjectKeys } from '../db/schema.js';
import { isLetheError, LetheError } from '../errors.js';
import type { KeyContext } from './key-types.js';
import { hashHex } from './subjects.js';
import { unwrapCurrent } from './wrapping.js';

/** The DEK of a live key by id (for services that decrypt: log, artifacts). Caller zeroes. */
export async function dekFor(c: KeyContext, keyId: string): Promise<{ dek: Uint8Array; state: 'active' | 'fenced' }> {
  const [row] = await c.d.db.select().from(subjectKeys).where(eq(subjectKeys.keyId, keyId));
  if (!row) {
    const destroyed = await c.d.destructions.get(keyId);
    if (destroyed) throw new LetheError('key_destroyed', 'the key was destroyed');
    throw new LetheError('not_found', 'no such key');
  }
  return { dek: await unwrapRow(c, row), state: row.state };
}

/**
 * The DEKs of the live keys among `keyIds`, one query for all (keys not live are
 * absent from the answer). The caller zeroes every DEK.
 */
export async function deksFor(c: KeyContext, keyIds: readonly string[]): Promise<Map<string, Uint8Array>> {
  const unique = [...new Set(keyIds)];
  if (unique.length === 0) return new Map();
  return deksOfRows(c, await c.d.db.select().from(subjectKeys).where(inArray(subjectKeys.keyId, unique)));
}

/** What unwrapping a subject key needs of its row (a caller that joined `subject_keys` into its own query has it). */
export type SubjectKeyWrap = Pick<typeof subjectKeys.$inferSelect, 'keyId' | 'subjectHash' | 'epoch' | 'wrappedDek'>;

/**
 * The DEKs of keys whose rows the caller read (live when read): a key destroyed since
 * is absent from the answer. The caller zeroes every DEK.
 */
export async function deksOfRows(c: KeyContext, rows: readonly SubjectKeyWrap[]): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  try {
    for (const row of rows) {
      if (out.has(row.keyId)) continue;
      // the row says the key is live; the cache, when it holds this very key, saves the unwrap
      const cached = c.d.cache.get(hashHex(row.subjectHash));
      if (cached && cached.keyId === row.keyId) out.set(row.keyId, cached.dek);
      else {
        if (cached) zeroize(cached.dek);
        try {
          out.set(row.keyId, await unwrapRow(c, row));
        } catch (e) {
          // destroyed since the row was read: absent, as if the query had not found it
          if (!isLetheError(e, 'key_destroyed')) throw e;
        }
      }
    }
  } catch (e) {
    for (const dek of out.values()) zeroize(dek);
    throw e;
  }
  return out;
}

/** Unwraps a row's DEK; re-reads once if a rotation moved the row meanwhile. */
export function unwrapRow(c: KeyContext, row: { keyId: string; epoch: number; wrappedDek: Uint8Array }): Promise<Uint8Array> {
  return unwrapCurrent(
    c.d.db,
    c.d.provider,
    row,
    'subject',
    async () => (await c.d.db.select().from(subjectKeys).where(eq(subjectKeys.keyId, row.keyId)))[0],
    () => new LetheError('key_destroyed', 'the key was destroyed'),
  );
}

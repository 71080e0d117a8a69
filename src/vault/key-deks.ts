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
  const out = new Map<string, Uint8Array>();
  const unique = [...new Set(keyIds)];
  if (unique.length === 0) return out;
  const rows = await c.d.db.select().from(subjectKeys).where(inArray(subjectKeys.keyId, unique));
  try {
    for (const row of rows) {
      // the row says the key is live; the cache, when it holds this very key, saves the unwrap
      const cached = c.d.cache.get(hashHex(row.subjectHash));
      if (cached && cached.keyId === row.keyId) out.set(row.keyId, cached.dek);
      else {
        if (cached) zeroize(cached.dek);
        out.set(row.keyId, await unwrapRow(c, row));
      }
    }
  } catch (e) {
    for (const dek of out.values()) zeroize(dek);
    if (isLetheError(e, 'key_destroyed')) return deksFor(c, unique); // destroyed mid-read: look again
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

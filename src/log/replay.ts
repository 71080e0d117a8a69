/**
 * The answer to a retry of an idempotent service append (idempotency.ts): its recorded
 * result when the body is the one recorded, checked against the request digest.
 *
 * The digest is keyed by the entry's record key (frame.ts): a forget's re-key moves the
 * surviving entries' record keys under the subject's new key, so a retry of a kept
 * append still answers its result after any number of forgets, while a retry of a
 * forgotten (or erased) one finds no record key and answers `key_destroyed`. Rows
 * recorded before record-key digests hold a digest under the subject key they were
 * recorded under, checked while that key lives.
 */
import { sql } from 'drizzle-orm';
import { zeroize } from '../crypto/index.js';
import { queryRows } from '../db/client.js';
import { isLetheError, LetheError } from '../errors.js';
import type { LogContext } from './context.js';
import { unwrapRecordKey } from './frame.js';
import { type AppendOnce, findRecorded, type RecordedAppend, replay, requestDigest } from './idempotency.js';

const RECORD_DIGEST = 'lethe/v1/append-request-digest/record';

/** The request digest of `body` for the entry `entryId`, keyed by its record key (`wrappedKey` under the subject key `keyId`, its DEK `dek`). */
export function recordDigest(dek: Uint8Array, keyId: string, entryId: string, wrappedKey: Uint8Array, body: string): Uint8Array {
  const recordKey = unwrapRecordKey(dek, keyId, entryId, wrappedKey);
  try {
    return requestDigest(recordKey, body, RECORD_DIGEST);
  } finally {
    zeroize(recordKey);
  }
}

/** The DEK of `keyId`, or undefined when the key was destroyed (or never existed). */
async function liveDek(c: LogContext, keyId: string): Promise<Uint8Array | undefined> {
  try {
    return (await c.keys.dekFor(keyId)).dek;
  } catch (e) {
    if (isLetheError(e, 'key_destroyed') || isLetheError(e, 'not_found')) return undefined;
    throw e;
  }
}

/** The digest of `body` under the record key of the recorded entry, wherever a re-key moved it; undefined when no live key wraps it. */
async function underRecordKey(c: LogContext, entryId: string, body: string): Promise<Uint8Array | undefined> {
  // twice: a re-key may move the entry between reading its row and unwrapping under the key it named
  for (let pass = 0; pass < 2; pass++) {
    const [row] = await queryRows<{ key_id: string; wrapped_key: Uint8Array | null }>(
      c.db,
      sql`select key_id, wrapped_key from log_entries where entry_id = ${entryId}`,
    );
    if (!row || row.wrapped_key === null) return undefined;
    const dek = await liveDek(c, row.key_id);
    if (!dek) continue;
    try {
      return recordDigest(dek, row.key_id, entryId, new Uint8Array(row.wrapped_key), body);
    } finally {
      zeroize(dek);
    }
  }
  return undefined;
}

/**
 * The recorded answer to `once`, if (subject, key) was recorded within the window:
 * `idempotency_key_reused` for another body, `key_destroyed` when the entry it stored
 * was erased or forgotten since.
 */
export async function replayRecorded(c: LogContext, subjectHash: Uint8Array, once: AppendOnce): Promise<RecordedAppend | undefined> {
  const recorded = await findRecorded(c.db, subjectHash, once.key);
  if (!recorded) return undefined;
  const digests: Uint8Array[] = [];
  try {
    const byRecord = await underRecordKey(c, recorded.entryId, once.body);
    if (byRecord) digests.push(byRecord);
    // a row recorded before record-key digests: under the subject key it was recorded under, while it lives
    const dek = await liveDek(c, recorded.keyId);
    if (dek) {
      try {
        digests.push(requestDigest(dek, once.body));
      } finally {
        zeroize(dek);
      }
    }
    if (digests.length === 0) {
      throw new LetheError('key_destroyed', "the key this Idempotency-Key's append was stored under was destroyed since (erased or forgotten)");
    }
    return replay(recorded, digests);
  } finally {
    zeroize(...digests);
  }
}

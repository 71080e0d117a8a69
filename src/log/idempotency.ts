/**
 * Idempotency keys of service appends (`append_requests`): the first append with a
 * key records (subject, key, digest of the body, entry id, key id, seq) in the
 * statement that indexes its entry; a retry with the same key and body answers that
 * result and stores nothing; the same key with another body is refused. Keys are
 * scoped per subject and remembered for `IDEMPOTENCY_WINDOW_HOURS`.
 *
 * The digest is an HMAC-SHA256 of the body under a key derived from the entry's
 * record key (replay.ts; rows recorded before: from the subject's DEK) — never the
 * body, never a plain hash of it: nobody can test a guessed body against it without
 * the key, and once the entry is erased or forgotten it is inert like the frame it
 * stands for, while a forget's re-key of its subject leaves a kept entry's retries
 * answering as before.
 */
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { type SQL, sql } from 'drizzle-orm';
import { constantTimeEqual, deriveKey, utf8, zeroize } from '../crypto/index.js';
import { type Database, queryPrepared, queryRows } from '../db/client.js';
import { LetheError } from '../errors.js';

export { IDEMPOTENCY_KEY_PATTERN, IDEMPOTENCY_KEY_RULE } from '../ids.js';
/** How long a key is remembered: a retry after this is a new append. */
export const IDEMPOTENCY_WINDOW_HOURS = 24;
/** How often a process deletes the rows older than the window (lazily, on an append with a key). */
const PURGE_EVERY_MS = 10 * 60 * 1000;

const WINDOW = sql.raw(`interval '${IDEMPOTENCY_WINDOW_HOURS} hours'`);

/** An append's idempotency key and its body as received. */
export interface AppendOnce {
  readonly key: string;
  readonly body: string;
}

export interface RecordedAppend {
  readonly entryId: string;
  readonly keyId: string;
  readonly seq: number;
}

/** The body's digest under `secret` (the entry's record key, with its purpose; before: the subject's DEK the request was recorded under). */
export function requestDigest(secret: Uint8Array, body: string, purpose = 'lethe/v1/append-request-digest'): Uint8Array {
  const key = deriveKey(secret, purpose);
  try {
    return hmac(sha256, key, utf8.encode(body));
  } finally {
    zeroize(key);
  }
}

interface Row {
  request_digest: Uint8Array;
  entry_id: string;
  key_id: string;
  seq: number;
}

/** The result recorded for (subject, key) within the window, if any. */
export async function findRecorded(db: Database, subjectHash: Uint8Array, key: string): Promise<(RecordedAppend & { digest: Uint8Array }) | undefined> {
  const [row] = await queryPrepared<Row>(
    db,
    'append-request',
    sql`select request_digest, entry_id, key_id, seq from append_requests
         where subject_hash = ${subjectHash} and idempotency_key = ${key} and created_at > now() - ${WINDOW}`,
  );
  if (!row) return undefined;
  return { entryId: row.entry_id, keyId: row.key_id, seq: Number(row.seq), digest: new Uint8Array(row.request_digest) };
}

/**
 * The answer to a retry: the recorded result when one of `digests` (the body's, under
 * each key it may have been recorded under) matches, else `idempotency_key_reused`.
 */
export function replay(recorded: RecordedAppend & { digest: Uint8Array }, digests: readonly Uint8Array[]): RecordedAppend {
  if (!digests.some((d) => constantTimeEqual(recorded.digest, d))) {
    throw new LetheError('idempotency_key_reused', 'this Idempotency-Key was used for another request body for this subject; use a new key');
  }
  return { entryId: recorded.entryId, keyId: recorded.keyId, seq: recorded.seq };
}

/**
 * `req as (insert …)`: a CTE claiming (subject, key) for the append about to be
 * indexed, while the key row exists (a shared lock on it, as the index insert takes).
 * It returns one row when this request claimed the key — nothing when another request
 * holds it within the window (a concurrent duplicate waits for the holder's commit,
 * then returns nothing) — and replaces a row older than the window. Gate the index
 * insert on it (`from req`).
 */
export function claimCte(subjectHash: Uint8Array, key: string, digest: Uint8Array, result: RecordedAppend): SQL {
  return sql`req as (
    insert into append_requests (subject_hash, idempotency_key, request_digest, entry_id, key_id, seq, created_at)
    select ${subjectHash}, ${key}, ${digest}, ${result.entryId}, ${result.keyId}, ${result.seq}, now()
     where exists (select 1 from subject_keys where key_id = ${result.keyId} for key share)
    on conflict (subject_hash, idempotency_key) do update
       set request_digest = excluded.request_digest, entry_id = excluded.entry_id, key_id = excluded.key_id,
           seq = excluded.seq, created_at = excluded.created_at
     where append_requests.created_at <= now() - ${WINDOW}
    returning entry_id)`;
}

/** Deletes the rows older than the window; answers how many. */
export async function purgeExpired(db: Database): Promise<number> {
  const rows = await queryRows<{ n: string | number }>(
    db,
    sql`with d as (delete from append_requests where created_at <= now() - ${WINDOW} returning 1) select count(*) as n from d`,
  );
  return Number(rows[0]?.n ?? 0);
}

/** Runs `purgeExpired` at most once per PURGE_EVERY_MS per process (appends call it). */
export class LazyPurge {
  #last = 0;

  async maybe(db: Database): Promise<void> {
    const now = Date.now();
    if (now - this.#last < PURGE_EVERY_MS) return;
    this.#last = now;
    await purgeExpired(db);
  }
}

/** What the subject-key table says: a subject's status and live key, keys' states and validity, and reserving log sequence numbers under a key. */
import { and, eq, inArray, sql } from 'drizzle-orm';
import { queryPrepared, queryRows } from '../db/client.js';
import { destructionLedger, subjectKeys, type SubjectKeyRow } from '../db/schema.js';
import { LetheError } from '../errors.js';
import { type KeyContext, type LiveKey, MAX_VALIDITY_IDS, type SubjectStatus, type Validity } from './key-types.js';
import { hashHex } from './subjects.js';

/** subjectStatus for a subject known by its keyed hash. */
export async function statusOf(c: KeyContext, subjectHash: Uint8Array): Promise<SubjectStatus> {
  const row = await findRow(c, subjectHash);
  if (row) return { subjectHash, key: { keyId: row.keyId, state: row.state }, erased: false };
  const [destroyed] = await c.d.db
    .select({ keyId: destructionLedger.keyId })
    .from(destructionLedger)
    .where(eq(destructionLedger.subjectHash, subjectHash))
    .limit(1);
  return { subjectHash, erased: destroyed !== undefined };
}

/** findKey for a subject known by its keyed hash: its head key (a subject has at most one; its shards are not named here). */
export async function liveKeyOf(c: KeyContext, subjectHash: Uint8Array): Promise<LiveKey | undefined> {
  const row = await findRow(c, subjectHash);
  return row ? { keyId: row.keyId, state: row.state } : undefined;
}

/** liveKeyOf for many subjects in one query: by the hex of each keyed hash that has a live key (the others are absent). */
export async function liveKeysOf(c: KeyContext, subjectHashes: readonly Uint8Array[]): Promise<Map<string, LiveKey>> {
  if (subjectHashes.length === 0) return new Map();
  const rows = await c.d.db
    .select({ subjectHash: subjectKeys.subjectHash, keyId: subjectKeys.keyId, state: subjectKeys.state })
    .from(subjectKeys)
    .where(and(inArray(subjectKeys.subjectHash, [...subjectHashes]), eq(subjectKeys.head, true)));
  return new Map(rows.map((r) => [hashHex(r.subjectHash), { keyId: r.keyId, state: r.state }]));
}

/** The state of each live key among `keyIds` (destroyed and unknown keys are absent). */
export async function states(c: KeyContext, keyIds: readonly string[]): Promise<Map<string, LiveKey['state']>> {
  const unique = [...new Set(keyIds)];
  if (unique.length === 0) return new Map();
  const rows = await c.d.db.select({ keyId: subjectKeys.keyId, state: subjectKeys.state }).from(subjectKeys).where(inArray(subjectKeys.keyId, unique));
  return new Map(rows.map((r) => [r.keyId, r.state]));
}

/** The state of each key id (subject DEKs and artifact-version keys alike), in one round trip. */
export async function validity(c: KeyContext, keyIds: readonly string[]): Promise<Record<string, Validity>> {
  if (keyIds.length > MAX_VALIDITY_IDS) throw new LetheError('validation_failed', `keyIds: at most ${MAX_VALIDITY_IDS} ids per request`);
  const unique = [...new Set(keyIds)];
  const out: Record<string, Validity> = {};
  if (unique.length === 0) return out;
  const rows = await queryRows<{ id: string; state: Validity }>(
    c.d.db,
    sql`select v.id,
               case when sk.key_id is not null or ak.key_id is not null then 'active'
                    when dl.key_id is not null and dl.durable_at is not null then 'destroyed'
                    when dl.key_id is not null then 'destruction_pending'
                    else 'unknown' end as state
          from json_array_elements_text(${JSON.stringify(unique)}::json) as v(id)
          left join subject_keys sk on sk.key_id = v.id
          left join artifact_keys ak on ak.key_id = v.id
          left join destruction_ledger dl on dl.key_id = v.id`,
  );
  for (const r of rows) out[r.id] = r.state;
  return out;
}

export async function findRow(c: KeyContext, subjectHash: Uint8Array): Promise<SubjectKeyRow | undefined> {
  const [row] = await c.d.db
    .select()
    .from(subjectKeys)
    .where(and(eq(subjectKeys.subjectHash, subjectHash), eq(subjectKeys.head, true)));
  return row;
}

/**
 * Reserves `count` log sequence numbers under a live, active key: the first one, or
 * undefined when the key is fenced or gone (sequence numbers are ordered per key,
 * not dense).
 */
export async function reserveSeqs(
  c: KeyContext,
  keyId: string,
  count: number,
  shardEntries: number,
): Promise<{ first: number; count: number; sinceHead: number } | undefined> {
  // only the head takes sequence numbers: a shard's range is closed (the head after it continues past it)
  if (count === 1) {
    const [one] = await queryPrepared<{ first: number; since: number }>(
      c.d.db,
      'reserve-one-seq',
      sql`update subject_keys set next_seq = next_seq + 1, updated_at = now()
           where key_id = ${keyId} and state = 'active' and head returning next_seq - 1 as first, next_seq - base_seq as since`,
    );
    return one ? { first: Number(one.first), count: 1, sinceHead: Number(one.since) } : undefined;
  }
  // no more than the head has room for (at least one), so a writer's block never fills a shard past its size: the row
  // locked first, then updated (one statement doing both deadlocks with its twins)
  return c.d.db.transaction(async (tx) => {
    const [row] = await queryRows<{ next_seq: number; base_seq: number }>(
      tx,
      sql`select next_seq, base_seq from subject_keys where key_id = ${keyId} and state = 'active' and head for no key update`,
    );
    if (!row) return undefined;
    const granted = Math.min(count, Math.max(1, shardEntries - (Number(row.next_seq) - Number(row.base_seq))));
    await tx.execute(sql`update subject_keys set next_seq = next_seq + ${granted}, updated_at = now() where key_id = ${keyId}`);
    return { first: Number(row.next_seq), count: granted, sinceHead: Number(row.next_seq) + granted - Number(row.base_seq) };
  });
}

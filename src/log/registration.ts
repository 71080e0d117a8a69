/**
 * Registration of segments a writer sealed and uploaded itself (the writer client):
 * each entry must name its subject's live, active key and a sequence number reserved
 * under it, and fit the stored segment; entries of a key destroyed or fenced
 * meanwhile are refused (their frames are unreadable or about to be). The service,
 * which holds the keys anyway, opens each registered frame once — a frame that does
 * not open under the key it names is refused — to embed it, and seals the embedding
 * under the same key. Index rows and embeddings commit in one statement.
 */
import { sql } from 'drizzle-orm';
import { zeroize } from '../crypto/index.js';
import { queryRows } from '../db/client.js';
import { LetheError } from '../errors.js';
import { SEGMENT_KEY_PATTERN } from '../ids.js';
import { insertEmbeddingsCte, notifyEmbeddings } from '../vectors/embeddings.js';
import { openFrame } from './frame.js';
import type { LogDeps } from './deps.js';
import { frameAt } from './segment.js';

export interface RegisteredEntry {
  readonly entryId: string;
  readonly subject: string;
  readonly keyId: string;
  readonly seq: number;
  readonly offset: number;
  readonly length: number;
}

export interface RegistrationResult {
  readonly entryId: string;
  readonly status: 'registered' | 'key_destroyed' | 'erasure_in_progress';
}

/**
 * Indexes frames a writer sealed and uploaded itself. Each entry must name its
 * subject's live, active key and a sequence number reserved under it, and fit the
 * stored segment; entries of a key destroyed or fenced meanwhile are refused
 * (their frames are unreadable or about to be). Idempotent per entry id.
 */
export async function register(deps: LogDeps, segment: string, entries: readonly RegisteredEntry[]): Promise<RegistrationResult[]> {
  if (!SEGMENT_KEY_PATTERN.test(segment)) throw new LetheError('validation_failed', 'segment must be log/seg_<22 base64url characters>');
  const stored = await deps.objects.head(segment);
  if (!stored) throw new LetheError('validation_failed', 'segment: no such object in the store (upload it first)');
  const rows = entries.map((e) => {
    if (e.offset < 16 || e.length < 1 || e.offset + e.length > stored.size) {
      throw new LetheError('validation_failed', `entries: ${e.entryId} does not fit the stored segment`);
    }
    return { ...e, subjectHash: Buffer.from(deps.keys.subjectHash(e.subject)).toString('hex') };
  });
  const json = JSON.stringify(
    rows.map((r) => ({ entry_id: r.entryId, subject_hash: r.subjectHash, key_id: r.keyId, seq: r.seq, offset: r.offset, length: r.length })),
  );
  const sealed = await embedRegistered(deps, segment, entries);
  const result = await queryRows<{ entry_id: string; status: string }>(
    deps.db,
    sql`with v as (
          select * from json_to_recordset(${json}::json)
            as v(entry_id text, subject_hash text, key_id text, seq integer, "offset" integer, length integer)),
        keys as (
          select key_id, subject_hash, state, next_seq from subject_keys
           where key_id in (select key_id from v) for key share),
        ok as (
          select v.* from v join keys k on k.key_id = v.key_id
           where k.state = 'active' and k.subject_hash = decode(v.subject_hash, 'hex') and v.seq >= 1 and v.seq < k.next_seq),
        ins as (
          insert into log_entries (entry_id, subject_hash, key_id, seq, segment, frame_offset, frame_length, created_at)
          select entry_id, decode(subject_hash, 'hex'), key_id, seq, ${segment}, "offset", length, now() from ok
          on conflict (entry_id) do nothing
          returning entry_id),
        ${insertEmbeddingsCte(sealed, 'ins')}
        select v.entry_id,
               case when exists (select 1 from ok where ok.entry_id = v.entry_id) then 'registered'
                    when k.key_id is null then 'key_destroyed'
                    when k.state = 'fenced' then 'erasure_in_progress'
                    else 'invalid' end as status
          from v left join keys k on k.key_id = v.key_id`,
  );
  const invalid = result.filter((r) => r.status === 'invalid');
  if (invalid.length > 0) {
    throw new LetheError('validation_failed', `entries: ${invalid.length} entr(y/ies) name a key of another subject or a sequence number never reserved`);
  }
  const registered = new Set(result.filter((r) => r.status === 'registered').map((r) => r.entry_id));
  const published = sealed.filter((e) => registered.has(e.recordId));
  deps.vectors.publish(published);
  await notifyEmbeddings(deps.db, published);
  return result.map((r) => ({ entryId: r.entry_id, status: r.status as 'registered' | 'key_destroyed' | 'erasure_in_progress' }));
}

/**
 * Opens the frames a writer registers (the service holds their keys) and embeds
 * them: a frame that does not open under the key it names is refused, and the
 * entry's embedding is sealed under the same key. Entries of keys already gone are
 * left to the registration statement to answer.
 */
async function embedRegistered(deps: LogDeps, segment: string, entries: readonly RegisteredEntry[]) {
  const bytes = await deps.objects.get(segment);
  const byKey = new Map<string, typeof entries[number][]>();
  for (const e of entries) {
    const list = byKey.get(e.keyId) ?? [];
    list.push(e);
    byKey.set(e.keyId, list);
  }
  const deks = await deps.keys.deksFor([...byKey.keys()]);
  try {
    const records: Array<{ recordId: string; recordType: 'entry'; text: string; keyId: string; key: Uint8Array }> = [];
    for (const [keyId, list] of byKey) {
      const dek = deks.get(keyId);
      if (!dek) continue; // destroyed: the registration statement answers key_destroyed
      for (const e of list) {
        let text: string;
        try {
          text = openFrame(dek, { keyId, entryId: e.entryId, seq: e.seq }, frameAt(bytes, { offset: e.offset, length: e.length })).text;
        } catch {
          throw new LetheError('validation_failed', `entries: ${e.entryId} does not open under the key it names at the place it names`);
        }
        records.push({ recordId: e.entryId, recordType: 'entry', text, keyId, key: dek });
      }
    }
    // one embedder call for the whole segment
    return await deps.vectors.sealEach(records);
  } finally {
    for (const dek of deks.values()) zeroize(dek);
  }
}

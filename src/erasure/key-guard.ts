/**
 * The key-creation guard (KeyService.guardCreation), run in the transaction that
 * inserts a key: a tombstoned subject (erased, not reinstated) gets no key again —
 * subject_erased (the guard runs only when the subject has no live key, so while the
 * erasure runs with the fenced key in place the answers stay erasure_in_progress); and
 * an open erasure fences the subject itself, not only its key — no new key until it ends.
 */
import { sql } from 'drizzle-orm';
import type { Transaction } from '../db/client.js';
import { LetheError } from '../errors.js';
import type { KeyCreationRefusals } from '../vault/keys.js';
import type { ErasureResources } from './resources.js';

export async function refuseKeyCreation(res: Pick<ErasureResources, 'tombstones' | 'records'>, tx: Transaction, subjectHash: Uint8Array): Promise<void> {
  if (await res.tombstones.find(tx, subjectHash)) throw keyCreationRefusal('subject_erased');
  if (await res.records.isOpen(tx, subjectHash)) throw keyCreationRefusal('erasure_in_progress');
}

/**
 * refuseKeyCreation in SQL, for many subjects in the one statement of a group-committed
 * key creation: the same subjects, the same refusals — a tombstone first, then an open
 * subject-scope erasure.
 */
export const keyCreationRefusals: KeyCreationRefusals = {
  among: (subjects) => sql`
    select s.subject_hash,
           case when exists (select 1 from subject_tombstones t where t.subject_hash = s.subject_hash) then 'subject_erased'
                else 'erasure_in_progress' end as code
      from ${subjects} s
     where exists (select 1 from subject_tombstones t where t.subject_hash = s.subject_hash)
        or exists (select 1 from erasures e where e.subject_hash = s.subject_hash and e.status in ('pending', 'running') and e.scope = 'subject')`,
  error: (code) => keyCreationRefusal(code === 'subject_erased' ? 'subject_erased' : 'erasure_in_progress'),
};

/** What the guard throws (and its SQL form answers) for a subject refused a key. */
function keyCreationRefusal(code: 'subject_erased' | 'erasure_in_progress'): LetheError {
  return code === 'subject_erased'
    ? new LetheError('subject_erased', 'the subject was erased: no new key, lease or append is accepted for it until an admin reinstates it')
    : new LetheError('erasure_in_progress', 'the subject is being erased; no new key is created until the erasure ends');
}

/** Lifting a subject's tombstone (an admin's reinstatement), audited, in one transaction with the checks. */
import { LetheError } from '../errors.js';
import type { ErasureResources } from './resources.js';
import type { Tombstone } from './tombstones.js';

/**
 * `POST /v1/subjects/{subject}/reinstate`: lifts the subject's mark so a new key (and
 * leases, appends) may be made for it, with an audit row (`subject.reinstate`: the
 * subject's keyed hash, the erasure that marked it and the admin's reason — never the
 * subject id) in the same transaction. The mark is locked first, then the open
 * erasures are read: an erasure request racing this either commits first (and this
 * answers erasure_in_progress) or marks the subject again once this commits.
 * 409 conflict when the subject is not marked; 409 erasure_in_progress while an
 * erasure of the subject is open; 400 for a reason quoting the subject id (the audit
 * log holds the reason in the clear).
 */
export async function reinstateSubject(res: ErasureResources, subject: string, reason: string, actor: string): Promise<Tombstone> {
  if (reason.includes(subject)) {
    throw new LetheError('validation_failed', 'body.reason: must not quote the subject id (the reason is kept in the clear in the audit log)');
  }
  const subjectHash = res.keys.subjectHash(subject);
  return res.records.db.transaction(async (tx) => {
    const tombstone = await res.tombstones.lock(tx, subjectHash);
    if (!tombstone) throw new LetheError('conflict', 'the subject is not erased: there is no tombstone to lift');
    if (await res.records.isOpen(tx, subjectHash)) {
      throw new LetheError('erasure_in_progress', 'an erasure of the subject is open; reinstate it once the erasure has ended');
    }
    await res.tombstones.remove(tx, subjectHash);
    await res.audit.append(tx, [
      { actor, action: 'subject.reinstate', subjectHash, detail: { erasureId: tombstone.erasureId, erasedAt: tombstone.erasedAt.toISOString(), reason } },
    ]);
    return tombstone;
  });
}

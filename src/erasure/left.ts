/**
 * What a failed erasure left behind, as the view shows it: whether the subject's key
 * is still fenced (leases, appends and new keys refused), whether it was destroyed,
 * and whether the subject's log entries can still be read. Read through the vault's
 * and the log's services, never SQL here.
 */
import type { ErasureRow } from '../db/schema.js';
import type { ErasureResources } from './resources.js';
import type { ErasureState } from './state.js';
import type { ErasureLeft } from './view.js';

export async function leftBehind(res: ErasureResources, row: ErasureRow, state: ErasureState): Promise<ErasureLeft> {
  const status = await res.keys.statusOf(row.subjectHash);
  let keyDestroyed: boolean;
  if (state.keyId) {
    const validity = (await res.keys.validity([state.keyId]))[state.keyId];
    keyDestroyed = validity === 'destroyed' || validity === 'destruction_pending';
  } else {
    keyDestroyed = !status.key && status.erased;
  }
  const readable = await res.log.countReadable(row.subjectHash);
  return { keyFenced: status.key?.state === 'fenced', keyDestroyed, dataReadable: readable > 0 };
}

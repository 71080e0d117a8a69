/**
 * What a failed erasure left behind, as the view shows it: whether the subject's key
 * is still fenced (leases, appends and new keys refused), whether it was destroyed,
 * and whether the subject's log entries can still be read. Read through the vault's
 * and the log's erasable, never SQL here.
 */
import type { ErasureRow } from '../db/schema.js';
import type { ErasureResources } from './resources.js';
import { type ErasureState, targetOf } from './state.js';
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
  // the subject's entries under a live key of its own (a failed erasure of records: those records)
  const readable = await res.tiers.log.readable({ ...targetOf(row, state.keyId ?? null), contributed: 0 });
  return { keyFenced: status.key?.state === 'fenced', keyDestroyed, dataReadable: readable > 0 };
}

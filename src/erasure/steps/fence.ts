/**
 * fence: the subject's key takes no new leases, appends or keys (the request already
 * fenced it; this confirms it after a crash). Entries appended between fingerprint
 * and fence are fingerprinted too. Fencing a fenced key is a no-op: safe to run again.
 */
import { forgottenEntries, targetOf } from '../state.js';
import { keyHolding } from './classify.js';
import { takeFingerprints } from './fingerprint.js';
import type { Step } from './step.js';

export const fence: Step = {
  name: 'fence',
  async run(ctx) {
    const { res, row, state } = ctx;
    const forgetting = forgottenEntries(row);
    if (forgetting) {
      // the subject is not fenced: it goes on; the entries are fenced by their mark since the request
      state.keyId = await keyHolding(res, forgetting);
      return {
        detail: `${forgetting.length} entr${forgetting.length === 1 ? 'y' : 'ies'} read by no one but this erasure since the request; the subject is not fenced (it keeps writing; its key is fenced only for the moment of the re-key)`,
      };
    }
    if (!state.keyId) return { detail: 'no live key to fence (the subject was erased before)' };
    // its head (or any key left) and its shards: the request fenced them; keys rolled or split since are fenced here
    const keys = await res.keys.keysOf(row.subjectHash);
    if (keys.length === 0) return { detail: 'the key was already destroyed' };
    // the classified key was replaced meanwhile (a re-key): the subject's key now
    if (!keys.some((k) => k.keyId === state.keyId)) state.keyId = keys[0]!.keyId;
    for (const k of keys) if (k.state === 'active') await res.keys.fenceKey(k.keyId, 'erasure');
    let extra = '';
    if ((await res.tiers.log.contributions(targetOf(row, state.keyId))) !== state.fingerprinted) {
      await takeFingerprints(ctx);
      extra = `; ${state.fingerprinted} record(s) fingerprinted again after late appends`;
    }
    return { detail: `key ${state.keyId} fenced: no new leases, appends or keys for the subject${extra}` };
  },
};

/**
 * Lifecycles as explicit transition tables. A transition not in the table is an
 * error (illegal_transition), never an `if`. Nothing ever moves backwards: a
 * destroyed key stays destroyed, a retired epoch stays retired.
 */
import { LetheError } from '../errors.js';
import type { EpochState, LiveKeyState } from '../db/schema.js';

/** A key's state. `destroyed` keys have no row: the ledger records them. */
export type KeyState = LiveKeyState | 'destroyed';

export const KEY_TRANSITIONS: Readonly<Record<KeyState, readonly KeyState[]>> = {
  // fenced: an erasure has begun; no new leases, data still decryptable
  active: ['fenced', 'destroyed'],
  fenced: ['active', 'destroyed'],
  destroyed: [],
};

export const EPOCH_TRANSITIONS: Readonly<Record<EpochState, readonly EpochState[]>> = {
  pending: ['active'],
  active: ['retiring'],
  retiring: ['retired'],
  retired: [],
};

export function assertKeyTransition(from: KeyState, to: KeyState): void {
  if (!KEY_TRANSITIONS[from].includes(to)) {
    throw new LetheError('illegal_transition', `a key cannot go from ${from} to ${to}`);
  }
}

export function assertEpochTransition(from: EpochState, to: EpochState): void {
  if (!EPOCH_TRANSITIONS[from].includes(to)) {
    throw new LetheError('illegal_transition', `an epoch cannot go from ${from} to ${to}`);
  }
}

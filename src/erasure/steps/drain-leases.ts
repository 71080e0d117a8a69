/**
 * drain_leases: writers that leased the key before the fence may hold the DEK until
 * their lease expires; the erasure is parked (`not_before`) until the last one has.
 * Time only moves forward: safe to run again.
 */
import { Park, type Step } from './step.js';

export const drainLeases: Step = {
  name: 'drain_leases',
  async run({ state }) {
    const until = state.destruction?.leasedUntil ? new Date(state.destruction.leasedUntil) : undefined;
    if (until && until.getTime() > Date.now()) return new Park(until, `waiting for key leases handed to writers to expire at ${until.toISOString()}`);
    return { detail: until ? `every lease expired (the last at ${until.toISOString()})` : 'no lease was outstanding' };
  },
};

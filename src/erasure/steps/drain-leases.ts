/**
 * drain_leases: writers that leased the key before the fence may hold the DEK until
 * they release their lease (`DELETE …/key/lease/{leaseId}`) or it expires; the
 * erasure is parked (`not_before`) until the last outstanding one has. The
 * outstanding leases are read again on every run (the value captured at destruction
 * counts leases released since), and a release wakes the parked erasure at once
 * (`ErasureEngine.leasesReleased`). What the step found is recorded in
 * `state.leases`: when the last lease ended and whether it was released or expired.
 * Releases and time only move forward: safe to run again.
 */
import { forgottenEntries } from '../state.js';
import { Park, type Step, type StepContext } from './step.js';

/** The leases of `keyIds` as one: the figures summed, the latest end. */
async function latestLeases(res: StepContext['res'], keyIds: readonly string[]) {
  const all = await Promise.all(keyIds.map((k) => res.keys.leases(k)));
  const by = (d: Date | null | undefined) => d?.getTime() ?? -1;
  const last = all.reduce((a, b) => (by(b.endedAt) > by(a.endedAt) ? b : a));
  const outstandingUntil = all.map((l) => l.outstandingUntil).reduce((a, b) => (by(b) > by(a) ? b : a));
  return {
    leases: all.reduce((n, l) => n + l.leases, 0),
    released: all.reduce((n, l) => n + l.released, 0),
    outstandingUntil,
    endedAt: last.endedAt,
    lastEnded: last.lastEnded,
  };
}

export const drainLeases: Step = {
  name: 'drain_leases',
  async run({ res, row, state }) {
    // forgetting entries: a writer's lease holds the subject key, not the record keys (those stay wrapped in the
    // database): not waited for — its next write under the old key is refused and it leases again; the lease
    // residual states until when a lease holder who also reads the database could still unwrap them
    if (forgottenEntries(row))
      return {
        detail:
          "not waited for: a lease of the subject's old key carries no record key (they stay wrapped in the database); the lease residual states the bound",
      };
    const destroyed = state.destruction;
    if (!destroyed) return { detail: 'no lease was outstanding' };
    // a shard was a head once: a writer may still hold its lease
    const leases = await latestLeases(res, [destroyed.keyId, ...(state.shardKeys ?? [])]);
    const until = leases.outstandingUntil;
    if (until && until.getTime() > Date.now()) {
      return new Park(
        until,
        `waiting for key leases handed to writers to be released or to expire at ${until.toISOString()} (${leases.released} of ${leases.leases} released)`,
      );
    }
    const endedAt = leases.endedAt?.toISOString() ?? null;
    state.leases = { keyId: destroyed.keyId, leases: leases.leases, released: leases.released, endedAt, ended: leases.lastEnded };
    if (!endedAt) return { detail: 'no lease was outstanding' };
    const counts = `${leases.released} of ${leases.leases} released by their writers`;
    return {
      detail:
        leases.lastEnded === 'released'
          ? `every lease ended, the last released by its writer at ${endedAt} (${counts})`
          : `every lease expired (the last at ${endedAt}; ${counts})`,
    };
  },
};

/**
 * destroy: the key-table tier destroys the subject's DEK; then the tiers the
 * destruction erased (log, vector index) must report their removals; then the step
 * waits (parked, the subject still fenced) until the destruction's record is durable
 * in the backup store's ledger chain, and (bounded) until every live replica applied
 * the destruction — dropped the key's vectors from its index (acknowledgement.ts).
 * destroyKey is idempotent and tiers report cumulative figures: safe to run again.
 */
import { awaitReplicas, describeReplicas } from '../acknowledgement.js';
import { awaitDurable, eraseTier, type Step, TierFailure } from './step.js';

export const destroy: Step = {
  name: 'destroy',
  async run(ctx) {
    const { res, state } = ctx;
    const keyId = state.keyId;
    let seq: number | undefined;
    const details = [await eraseTier(ctx, 'key-table')];
    if (keyId) {
      const d = await res.destructions.get(keyId);
      if (!d) throw new TierFailure(`tier key-table: key ${keyId} is not in the destruction ledger after its destruction`);
      seq = d.seq;
      state.destruction = { keyId, destroyedAt: d.destroyedAt.toISOString(), wrappedEpoch: d.wrappedEpoch, leasedUntil: d.leasedUntil?.toISOString() ?? null };
      res.failpoint?.('destroy-committed');
    }
    for (const name of ['log', 'vector-index'] as const) details.push(await eraseTier(ctx, name));
    // write-ahead: the destruction is acknowledged only once its record is durable in the backup store
    const waiting = keyId ? await awaitDurable(ctx, [keyId]) : undefined;
    if (waiting) return waiting;
    if (keyId && seq !== undefined) {
      const lagging = await awaitReplicas(ctx, keyId, seq);
      if (lagging) return lagging;
    }
    const replicas = state.replicas ? `; ${describeReplicas(state.replicas)}` : '';
    return { detail: keyId ? `${details.join('; ')} (the key was wrapped under epoch ${state.destruction?.wrappedEpoch})${replicas}` : 'no live key (nothing to destroy)' };
  },
};

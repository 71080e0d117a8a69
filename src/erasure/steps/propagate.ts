/**
 * propagate: every backup that lists a key this erasure destroyed (the subject's, the
 * superseded version keys, redacted subjects' old keys) learns of it — once every one
 * of those destructions is durable in the backup store's ledger chain (the step parks
 * until then), which every backup's manifest is folded with. Safe to run again.
 */
import { keysTaken } from '../state.js';
import { awaitDurable, eraseTier, type Step } from './step.js';

export const propagate: Step = {
  name: 'propagate',
  async run(ctx) {
    const { state, res } = ctx;
    // every key this erasure destroyed (redactions and superseded version keys too) must be durable in the ledger first
    const destroyed = (await res.destructions.ledger(keysTaken(state))).map((r) => r.keyId);
    const waiting = await awaitDurable(ctx, destroyed);
    if (waiting) return waiting;
    // where the chain stood once they were durable: signed into the certificate, a restore's witness (src/backups/anchor.ts)
    if (destroyed.length > 0) {
      const position = await res.backups.ledgerPosition();
      if (position) state.ledger = position;
    }
    return { detail: await eraseTier(ctx, 'backups') };
  },
};

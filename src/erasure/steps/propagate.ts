/**
 * propagate: every backup manifest that lists a key this erasure destroyed (the
 * subject's, the superseded version keys, redacted subjects' old keys) marks it
 * destroyed. Propagation is recorded per (key, backup): safe to run again.
 */
import { eraseTier, type Step } from './step.js';

export const propagate: Step = {
  name: 'propagate',
  async run(ctx) {
    return { detail: await eraseTier(ctx, 'backups') };
  },
};

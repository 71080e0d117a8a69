/**
 * cascade: every artifact whose closure touches the subject is regenerated from the
 * surviving sources and re-embedded, or removed when none survives (the artifacts
 * tier); the graph records each one's outcome. What still needs regenerating is what
 * still cites the subject plus every classified artifact whose current version was
 * written before the key's destruction — so a digest above a summary a crashed run
 * already regenerated is still found, and nothing regenerated is regenerated again.
 */
import { withOutcomes } from '../graph.js';
import { eraseTier, type Step } from './step.js';

export const cascade: Step = {
  name: 'cascade',
  async run(ctx) {
    const detail = await eraseTier(ctx, 'artifacts');
    ctx.state.graph = await withOutcomes(ctx.res.artifacts, ctx.state.graph, ctx.state.affected ?? []);
    return { detail };
  },
};

/**
 * classify: what the subject left where. The live key, each tier's contributions,
 * the artifacts whose closure touches the subject (and everything above them, at
 * their version now), the provenance graph, training exposures → class A, B or C.
 * Read-only: safe to run again.
 */
import type { ErasureClass, TierName } from '../machine.js';
import { affectedGraph } from '../graph.js';
import type { Step } from './step.js';

export const classify: Step = {
  name: 'classify',
  async run({ res, row, state }) {
    const subjectHash = row.subjectHash;
    const keyId = (await res.keys.liveKeyOf(subjectHash))?.keyId ?? null;
    const scope = { erasureId: row.erasureId, subjectHash, keyId };
    const contributions = {} as Record<TierName, number>;
    for (const tier of Object.values(res.tiers)) contributions[tier.name] = await tier.contributions(scope);
    const touching = await res.artifacts.touchingSubject(subjectHash);
    const exposures = await res.exposures.forSubjectHash(subjectHash);
    const affectedIds = touching.length ? (await res.artifacts.upwardClosure(touching.map((t) => t.artifactId))).map((a) => a.artifactId) : [];
    const versions = await res.artifacts.current(affectedIds);
    state.keyId = keyId;
    state.contributions = contributions;
    state.exposures = exposures.map((e) => e.exposureId);
    state.affected = versions.map((v) => ({ artifactId: v.artifactId, version: v.version }));
    state.graph = await affectedGraph(res.artifacts, subjectHash, versions);
    const cls: ErasureClass = exposures.length > 0 ? 'C' : touching.length > 0 ? 'B' : 'A';
    const detail =
      `class ${cls}: ${contributions.log} entries under ${keyId ? 'the live key' : 'no live key'}, ${contributions['vector-index']} vector(s), ` +
      `${touching.length} derived artifact(s) touch the subject (${affectedIds.length} to regenerate with what lies above them), ` +
      `${contributions.backups} backup(s) hold the key, ${exposures.length} training exposure(s)`;
    return { detail, cls };
  },
};

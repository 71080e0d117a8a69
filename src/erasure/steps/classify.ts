/**
 * classify: what the subject left where. The live key, each tier's contributions,
 * the artifacts whose closure touches the subject (and everything above them, at
 * their version now), the provenance graph, training exposures → class A, B or C.
 * Read-only: safe to run again.
 */
import type { ErasureClass, TierName } from '../machine.js';
import { affectedGraph } from '../graph.js';
import { forgottenEntries, targetOf } from '../state.js';
import type { ErasureResources } from '../resources.js';
import type { Step } from './step.js';

/**
 * How long classify waits in place for the subject's entries still in the indexing
 * queue (src/log/indexer.ts; usually milliseconds). It goes on after that: a queued
 * entry of the destroyed key is never indexed (its queue row goes with the key), and
 * a re-key queues its survivors again under the new key.
 */
export const QUEUE_WAIT_MS = 5000;

/** The live key the entries are indexed under (one subject has one), or null when it is gone. */
export async function keyHolding(res: ErasureResources, entryIds: readonly string[]): Promise<string | null> {
  const keyIds = [...new Set((await res.log.locate(entryIds)).map((e) => e.keyId))];
  const live = await res.keys.states(keyIds);
  return keyIds.find((k) => live.has(k)) ?? keyIds[0] ?? null;
}

export const classify: Step = {
  name: 'classify',
  async run({ res, row, state }) {
    const subjectHash = row.subjectHash;
    const entryIds = forgottenEntries(row);
    // the subject's own entries still queued for indexing settle first: every tier then counts them as they will stay
    const unindexed = await res.log.indexer.waitIndexed({ subjectHash, timeoutMs: QUEUE_WAIT_MS });
    // forgetting entries: the key they are under now (the subject's live key, unless a re-key moved them since)
    // erasing the subject: its head, or any key of it left (a head destroyed by break-glass leaves shards)
    const keyId = entryIds ? await keyHolding(res, entryIds) : ((await res.keys.keysOf(subjectHash))[0]?.keyId ?? null);
    const scope = targetOf(row, keyId);
    const contributions = {} as Record<TierName, number>;
    for (const tier of Object.values(res.tiers)) contributions[tier.name] = await tier.contributions(scope);
    const touching = entryIds ? await res.artifacts.touchingRecords(entryIds) : await res.artifacts.touchingSubject(subjectHash);
    const exposures = entryIds ? await res.exposures.forRecords(entryIds) : await res.exposures.forSubjectHash(subjectHash);
    const affectedIds = touching.length ? (await res.artifacts.upwardClosure(touching.map((t) => t.artifactId))).map((a) => a.artifactId) : [];
    const versions = await res.artifacts.current(affectedIds);
    state.keyId = keyId;
    state.contributions = contributions;
    state.exposures = exposures.map((e) => e.exposureId);
    state.affected = versions.map((v) => ({ artifactId: v.artifactId, version: v.version }));
    state.graph = await affectedGraph(res.artifacts, subjectHash, versions, entryIds);
    const cls: ErasureClass = exposures.length > 0 ? 'C' : touching.length > 0 ? 'B' : 'A';
    const what = entryIds
      ? `${contributions.log} of the subject's entries to forget (the subject keeps its other entries under a new key)`
      : `${contributions.log} entries under ${keyId ? 'the live key' : 'no live key'}`;
    const detail =
      `class ${cls}: ${what}, ${contributions['vector-index']} vector(s), ` +
      `${touching.length} derived artifact(s) touch the subject (${affectedIds.length} to regenerate with what lies above them), ` +
      `${contributions.backups} backup(s) hold ${entryIds ? 'the key' : "the subject's keys"}, ${exposures.length} training exposure(s)` +
      (unindexed > 0 ? `; ${unindexed} of its entries still wait in the indexing queue (they go with the key)` : '');
    return { detail, cls };
  },
};

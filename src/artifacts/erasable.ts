/** Derived artifacts' part of an erasure: regenerated from surviving sources by provenance, or removed when none survives. */
import type { Erasable, ErasureScope, ErasureTarget, ProbeFinding } from '../erasable.js';
import { type RegenerationDeps, regenerateDerived } from './derived.js';

/** The artifacts whose current version cites the subject — or, forgetting records, those records. */
function touching(d: RegenerationDeps, target: ErasureTarget) {
  return target.kind === 'records' ? d.artifacts.touchingRecords(target.entryIds) : d.artifacts.touchingSubject(target.subjectHash);
}

/**
 * What still needs regenerating: what cites the target now, and every artifact
 * classified as affected still holding a version written before the key's destruction
 * (it carries the subject's content even when it no longer cites the subject directly:
 * a digest above a summary that a crashed run already regenerated).
 */
async function pending(d: RegenerationDeps, scope: ErasureScope): Promise<string[]> {
  const touchingNow = (await touching(d, scope)).map((t) => t.artifactId);
  const stale = await d.artifacts.staleSince(scope.affected ?? [], scope.since);
  return [...new Set([...touchingNow, ...stale])];
}

export function artifactsErasable(d: RegenerationDeps): Erasable {
  return {
    name: 'artifacts',
    async contributions(target) {
      return (await touching(d, target)).length;
    },
    async readable(scope) {
      return (await pending(d, scope)).length;
    },
    async erase(scope) {
      const r = await regenerateDerived(d, () => pending(d, scope), { reason: `erasure ${scope.erasureId}`, beforeRegenerate: scope.beforeRegenerate });
      const detail =
        r.roots > 0
          ? `${r.regenerated} artifact(s) regenerated from surviving sources and re-embedded, ${r.removed} removed (no surviving source); old version keys destroyed`
          : scope.contributed > 0
            ? 'every affected artifact was already regenerated (a re-run)'
            : 'no derived artifact depends on the subject';
      return { removed: Math.max(0, scope.contributed - r.left), left: r.left, detail };
    },
    async probe(_scope, query) {
      const ids = query.records.filter((r) => r.type === 'artifact').map((r) => r.id);
      const out: ProbeFinding[] = [];
      for (const [id, a] of await d.artifacts.readMany(ids)) out.push({ kind: 'text', id, tier: 'artifacts', text: a.text });
      return out;
    },
  };
}

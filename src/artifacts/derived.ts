/** Regenerating what a set of artifacts names and everything above it, with the version keys about to be destroyed handed over first: the artifacts' erasable and the erasure's redactions share it. */
import type { ArtifactService } from './service.js';

export interface RegenerationDeps {
  readonly artifacts: ArtifactService;
  /** Test fault injection (never honoured in production). */
  readonly failpoint?: ((name: string) => void) | undefined;
}

/**
 * Regenerates what `pending` names (and everything above it), after handing the
 * version keys about to be destroyed to `beforeRegenerate` (recorded so that their
 * backups are marked even if we crash mid-way). `pending` is asked again afterwards:
 * `left` is what still needs it. The cascade and redactions both come here.
 */
export async function regenerateDerived(
  d: RegenerationDeps,
  pending: () => Promise<string[]>,
  options: { reason: string; beforeRegenerate?: ((versionKeys: string[]) => Promise<void>) | undefined },
): Promise<{ roots: number; regenerated: number; removed: number; left: number }> {
  const roots = await pending();
  let regenerated = 0;
  let removed = 0;
  if (roots.length > 0) {
    const upward = await d.artifacts.upwardClosure(roots);
    const current = await d.artifacts.current(upward.map((u) => u.artifactId));
    await options.beforeRegenerate?.(current.map((c) => c.keyId).filter((k): k is string => k !== null));
    const result = await d.artifacts.regenerate(roots, { actor: 'erasure', reason: options.reason, onCommitted: () => d.failpoint?.('cascade-regenerated') });
    regenerated = result.regenerated.length;
    removed = result.removed.length;
  }
  return { roots: roots.length, regenerated, removed, left: (await pending()).length };
}

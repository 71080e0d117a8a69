/**
 * The tier port (docs/architecture.md, "Erasure": tiers): each place the subject's
 * information can live reports the subject's contributions, erases them, and answers
 * the reconstruction probe. One file per tier; each calls its module's service.
 *
 * `erase` reports cumulative figures (what is removed and what is left now, not what
 * this call did), so a step re-run after a crash reports what the first run did. The
 * engine turns "contributed but removed nothing" and "anything left" into a hard
 * failure of the erasure: never a silent `deleted: 0`.
 */
import type { TierName } from '../machine.js';

export type { TierName } from '../machine.js';

export interface TierScope {
  readonly erasureId: string;
  readonly subjectHash: Uint8Array;
  /** The subject's key this erasure fenced and destroys (null: it had none left); for a records-scope erasure, the key it re-keys the subject away from. */
  readonly keyId: string | null;
  /** A records-scope erasure's entries: the tiers count and erase these alone, and the subject keeps a live key (src/erasure/forget.ts). */
  readonly entryIds?: readonly string[] | undefined;
  /** Contributions recorded at classification (what removals are measured against). */
  readonly contributed: number;
  /** Keys of derived versions and other subjects that this erasure destroyed (their backups are marked too). */
  readonly otherKeys?: readonly string[];
  /** Artifacts classified as affected (the upward closure of what touched the subject). */
  readonly affected?: readonly string[];
  /** When the subject's key was destroyed: a version written before it may hold the subject's content. */
  readonly since?: Date;
  /** Records the version keys a regeneration is about to destroy, before it does (so a crash still marks their backups). */
  readonly beforeRegenerate?: (versionKeys: string[]) => Promise<void>;
}

export interface TierErasure {
  readonly removed: number;
  readonly left: number;
  readonly detail: string;
}

/** What the probe asks: the neighbours of these vectors, and the readable text of these records. */
export interface ProbeQuery {
  readonly vectors: readonly Float32Array[];
  readonly records: ReadonlyArray<{ readonly id: string; readonly type: 'entry' | 'artifact' }>;
  /** Nearest neighbours per vector, at least. */
  readonly neighbours: number;
  /** And every neighbour at or above `similarity`, up to `limit` per vector (the adaptive k). */
  readonly above?: { readonly similarity: number; readonly limit: number };
}

export type ProbeFinding =
  /** A record the vector index places near a fingerprint. */
  | { readonly kind: 'neighbour'; readonly id: string; readonly type: 'entry' | 'artifact'; readonly cosine: number }
  /** A record whose text is readable. */
  | { readonly kind: 'text'; readonly id: string; readonly tier: 'log' | 'artifacts'; readonly text: string }
  /** A vector still indexed although its text can no longer be read. */
  | { readonly kind: 'vector'; readonly id: string; readonly vector: Float32Array }
  /** The subject still has a live key: everything of it is readable. */
  | { readonly kind: 'live-key'; readonly keyId: string };

export interface Tier {
  readonly name: TierName;
  /** How many of the subject's records (keys, entries, vectors, artifacts, backups) this tier holds. */
  contributions(scope: Omit<TierScope, 'contributed'>): Promise<number>;
  erase(scope: TierScope): Promise<TierErasure>;
  probe(scope: TierScope, query: ProbeQuery): Promise<ProbeFinding[]>;
}

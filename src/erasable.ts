/**
 * The erasable port: what every module holding a subject's data answers to an
 * erasure (docs/architecture.md, "Erasure"). Each module ships its implementation
 * next to its data (vault/, log/, vectors/, artifacts/, backups/ `erasable.ts`); the
 * composition root hands the list to the erasure engine, which never knows their
 * queries.
 *
 * `erase` reports cumulative figures (what is removed and what is left now, not what
 * this call did), so a step re-run after a crash reports what the first run did. The
 * engine turns "contributed but removed nothing" and "anything left" into a hard
 * failure of the erasure: never a silent `deleted: 0`.
 */

/** The places an erasure reaches, in the order the report lists them. */
export const ERASABLE_NAMES = ['key-table', 'log', 'vector-index', 'artifacts', 'backups'] as const;
export type ErasableName = (typeof ERASABLE_NAMES)[number];

interface TargetCommon {
  readonly erasureId: string;
  readonly subjectHash: Uint8Array;
  /** The subject's key this erasure fenced and destroys (null: it had none left); forgetting records, the key it re-keys the subject away from. */
  readonly keyId: string | null;
}

/** What an erasure takes: a whole subject, or some records of a living subject (its entries; it keeps a live key). */
export type ErasureTarget = (TargetCommon & { readonly kind: 'subject' }) | (TargetCommon & { readonly kind: 'records'; readonly entryIds: readonly string[] });

/** The target with what the erasure recorded so far, which erasing is measured and guided by. */
export type ErasureScope = ErasureTarget & {
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
};

export interface Erased {
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

export interface Erasable {
  readonly name: ErasableName;
  /** How many of the target's records (keys, entries, vectors, artifacts, backups) this module holds. */
  contributions(target: ErasureTarget): Promise<number>;
  erase(scope: ErasureScope): Promise<Erased>;
  /** How many of the target's records this module still holds readable (or still to erase). */
  readable(scope: ErasureScope): Promise<number>;
  probe(target: ErasureTarget, query: ProbeQuery): Promise<ProbeFinding[]>;
}

/**
 * The probe's part that reads the in-memory indexes: the vector index's neighbours of
 * the fingerprints (and its vectors that outlived their text), and every candidate
 * scored against the fingerprints on the lexical index (probe.ts). One replica runs it
 * over its indexes; on a sharded deployment each shard's owner runs it over its own
 * (POST /internal/v1/probe) and the coordinating replica combines the parts
 * (combineProbeScores), so no shard goes unprobed.
 */
import type { Erasable, ErasableName, ErasureTarget, ProbeFinding } from '../erasable.js';
import type { Vectors } from '../vectors/service.js';
import type { RecordFingerprint } from './fingerprints.js';
import { type ExtraCandidate, type ProbeScore, scoreProbe, VECTOR_LIMIT, VECTOR_NEIGHBOURS } from './probe.js';

/** What a part is scored with (sent to the owners of other shards: fingerprints and vectors, never text). */
export interface ProbePartInput {
  /** The embedder model of the fingerprints' vectors. */
  readonly model: string;
  readonly records: readonly RecordFingerprint[];
  /** The vector queries: some of the records' vectors (same model only) and the public attributes' embeddings. */
  readonly queries: readonly Float32Array[];
  /** Artifacts the provenance graph names (candidates wherever they are indexed). */
  readonly provenance: readonly string[];
  readonly dismissed: ReadonlyMap<string, { readonly score: number; readonly keyId?: string | undefined }>;
  readonly successors: ReadonlySet<string>;
  readonly similarity: number;
}

/** The erasure a part is probed for (the vector tier's probe is given it). */
export type ProbeTarget = ErasureTarget;

/**
 * One index's part, and how many records that index holds; a sharded part also each
 * shard's coverage (`stored` rows of live keys, `indexed` records held), read just
 * before it scored.
 */
export type ProbePart = ProbeScore & {
  readonly indexed: number;
  readonly coverage?: ReadonlyArray<{ readonly shard: number; readonly stored: number; readonly indexed: number }>;
};

/** Scores the fingerprints on this replica's indexes. */
export async function probePart(
  res: { readonly vectors: Vectors; readonly tiers: Readonly<Record<ErasableName, Erasable>> },
  target: ProbeTarget,
  input: ProbePartInput,
  /** A sharded replica's shards this part answers for: their coverage is read (undefined: the whole index's size). */
  shards?: ReadonlySet<number>,
): Promise<ProbePart> {
  const coverage = shards ? [...(await res.vectors.shardCoverage(shards))].map(([shard, c]) => ({ shard, ...c })) : undefined;
  const embedder = res.vectors.embedder;
  const sameModel = input.model === embedder.model;
  const found = await res.tiers['vector-index'].probe(target, {
    vectors: [...input.queries],
    records: [],
    neighbours: VECTOR_NEIGHBOURS,
    above: { similarity: input.similarity, limit: VECTOR_LIMIT },
  });
  const extra = new Map<string, ExtraCandidate>();
  for (const id of input.provenance) extra.set(id, { id, source: 'provenance' });
  for (const f of found) if (f.kind === 'neighbour') extra.set(f.id, { id: f.id, source: 'vector-index', cosine: f.cosine });
  const unreadable = found.filter((f): f is Extract<ProbeFinding, { kind: 'vector' }> => f.kind === 'vector');
  const index = res.vectors.index;
  const lexical = res.vectors.lexical;
  const score = scoreProbe({
    successors: input.successors,
    index: lexical,
    records: input.records,
    extra: [...extra.values()],
    vectorOf: (id) => index.vectorOf(id),
    similarity: input.similarity,
    dismissed: input.dismissed,
    unreadable,
    sameModel,
    ...(embedder.probeCosine ? { cosine: (a: Float32Array, b: Float32Array) => embedder.probeCosine!(a, b) } : {}),
  });
  for (const u of unreadable) u.vector.fill(0);
  return coverage ? { ...score, indexed: coverage.reduce((n, c) => n + c.indexed, 0), coverage } : { ...score, indexed: lexical.size };
}

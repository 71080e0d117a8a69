/**
 * Wire types of derived artifacts and search (GET /v1/artifacts/{artifactId}/provenance,
 * POST …/regenerate, POST /v1/search): declared once, as zod schemas, and imported by the
 * routes and the TypeScript client. Plain zod (`.meta`), so that the client can ship them.
 */
import { z } from 'zod';

/** One search hit: an entry or an artifact of the named subjects, with its text. */
export const SearchHitSchema = z
  .object({
    id: z.string(),
    type: z.enum(['entry', 'artifact']),
    score: z.number(),
    text: z.string(),
    subject: z.string().nullable().meta({
      description:
        'the named subject the hit is of (an entry of it, an artifact derived from it alone); null for an artifact of several named subjects and in an allSubjects search',
    }),
    kind: z.string().nullable().meta({ description: "an entry's kind, or the artifact's (summary, fact, digest)" }),
    metadata: z.record(z.string(), z.unknown()).nullable().meta({ description: "an entry's metadata; null for artifacts" }),
    createdAt: z
      .string()
      .meta({ format: 'date-time', description: 'when the entry was appended; for an artifact, when its current version was written (its updatedAt)' }),
  })
  .meta({ id: 'SearchHit' });
export type SearchHit = z.infer<typeof SearchHitSchema>;

/** POST /v1/search: the hits, best first, and one read fence covering them all. */
export const SearchResultSchema = z
  .object({
    hits: z.array(SearchHitSchema),
    readFence: z.string().meta({ description: 'addition: covers every hit' }),
    partial: z.boolean().optional().meta({
      description:
        'sharded deployments only (LETHE_INDEX_SHARDS > 1): true when a shard the search needed could not be consulted, so hits of its records may be missing',
    }),
    shards: z
      .object({
        total: z.number().int(),
        consulted: z.array(z.number().int()),
        missing: z.array(z.number().int()).meta({ description: 'shards with no owner, rebuilding, or whose owner did not answer' }),
      })
      .optional()
      .meta({ description: 'sharded deployments only: which shards the search needed and consulted' }),
  })
  .meta({ id: 'SearchResult' });
export type SearchResult = z.infer<typeof SearchResultSchema>;

/** GET /v1/artifacts/{artifactId}/provenance: the transitive closure of its sources, nearest first, and how many distinct subjects it reaches. */
export const ProvenanceSchema = z
  .object({
    artifactId: z.string(),
    sources: z.array(z.object({ id: z.string(), type: z.enum(['entry', 'artifact']), depth: z.number().int() })),
    subjects: z.number().int(),
  })
  .meta({ id: 'Provenance' });
export type Provenance = z.infer<typeof ProvenanceSchema>;

/** POST /v1/artifacts/{artifactId}/regenerate: what was rewritten and what was erased. */
export const RegenerationSchema = z
  .object({
    regenerated: z.array(z.object({ artifactId: z.string(), version: z.number().int() })),
    removed: z.array(z.string()),
    destruction: z
      .enum(['durable', 'pending'])
      .meta({ description: "whether the destroyed version keys' records are durable in the backup store's ledger chain" }),
  })
  .meta({ id: 'Regeneration' });
export type Regeneration = z.infer<typeof RegenerationSchema>;

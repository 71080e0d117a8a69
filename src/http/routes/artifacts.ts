/** Derived artifacts, search and training exposures. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { MAX_EXPOSURE_IDS } from '../../artifacts/exposures.js';
import { ARTIFACT_KINDS, MAX_SOURCES } from '../../artifacts/service.js';
import { LetheError } from '../../errors.js';
import { SUBJECT_ID_PATTERN, SUBJECT_ID_RULE } from '../../ids.js';
import { MAX_SEARCH_K, MAX_SEARCH_SUBJECTS } from '../../search/service.js';
import { decodeCursor, listErrors, NextCursor, PageQuery, pageOf } from '../cursor.js';
import type { Services } from '../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../auth.js';
import { authErrors, idParam, json, jsonBody, problemResponse, security } from '../schemas.js';

const RecordId = z.string().min(1).max(100);
const ArtifactIdParam = z.object({
  artifactId: idParam('art', 'artifactId'),
});
const ReadFence = z.string().min(1).max(8 * 1024 * 1024);

const WriteArtifact = z
  .object({
    kind: z.enum(ARTIFACT_KINDS),
    text: z.string().min(1).openapi({ description: 'at most 64 KiB of UTF-8 (413 above)' }),
    sources: z.array(RecordId).max(MAX_SOURCES).openapi({ description: 'entry and artifact ids it was derived from; empty: 422 provenance_required' }),
    generator: z.string().min(1).max(200).optional(),
    readFence: ReadFence.optional().openapi({ description: 'the readFence of the read this artifact was made from' }),
    readFences: z.array(ReadFence).max(1000).optional().openapi({ description: 'addition: several reads\' fences at once' }),
  })
  .openapi('WriteArtifactRequest');

const ArtifactSchema = z
  .object({
    artifactId: z.string(),
    kind: z.enum(ARTIFACT_KINDS),
    version: z.number().int(),
    text: z.string(),
    sources: z.array(z.string()),
    generator: z.string().nullable(),
    createdAt: z.string().openapi({ format: 'date-time' }),
    updatedAt: z.string().openapi({ format: 'date-time' }),
    readFence: z.string(),
  })
  .openapi('Artifact');

const SearchSubject = z.string().regex(SUBJECT_ID_PATTERN, SUBJECT_ID_RULE);
const SearchRequest = z
  .object({
    query: z.string().min(1).openapi({ description: 'at most 8 KiB' }),
    k: z.number().int().min(1).max(MAX_SEARCH_K).optional(),
    subject: SearchSubject.optional().openapi({ description: 'search this subject\'s records' }),
    subjects: z.array(SearchSubject).min(1).max(MAX_SEARCH_SUBJECTS).optional().openapi({ description: `search these subjects' records (1–${MAX_SEARCH_SUBJECTS})` }),
    allSubjects: z.boolean().optional().openapi({ description: 'true: search every subject\'s records (admin only; hits have subject null)' }),
  })
  .superRefine((body, ctx) => {
    const named = [body.subject !== undefined, body.subjects !== undefined, body.allSubjects === true].filter(Boolean).length;
    if (named === 0) ctx.addIssue({ code: 'custom', message: 'name the subject to search: subject, subjects or allSubjects' });
    if (named > 1) ctx.addIssue({ code: 'custom', message: 'name the subject to search one way only: subject, subjects or allSubjects' });
  })
  .openapi('SearchRequest');

const SearchHitSchema = z
  .object({
    id: z.string(),
    type: z.enum(['entry', 'artifact']),
    score: z.number(),
    text: z.string(),
    subject: z.string().nullable().openapi({ description: 'the named subject the hit is of (an entry of it, an artifact derived from it alone); null for an artifact of several named subjects and in an allSubjects search' }),
    kind: z.string().nullable().openapi({ description: 'an entry\'s kind, or the artifact\'s (summary, fact, digest)' }),
    metadata: z.record(z.string(), z.unknown()).nullable().openapi({ description: 'an entry\'s metadata; null for artifacts' }),
    createdAt: z.string().openapi({ format: 'date-time', description: 'when the entry was appended; for an artifact, when its current version was written (its updatedAt)' }),
  })
  .openapi('SearchHit');

const ArtifactSummarySchema = ArtifactSchema.pick({ artifactId: true, kind: true, version: true, generator: true, createdAt: true, updatedAt: true }).openapi('ArtifactSummary');

/** How long a regeneration waits for its destroyed version keys to be durable before answering 202. */
const REGENERATE_ACK_WAIT_MS = 5000;

export function registerArtifactRoutes(app: OpenAPIHono<AuthEnv>, services: Services, tokens: TokenStore): void {
  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/artifacts',
      tags: ['artifacts'],
      summary: 'Write a derived artifact with its provenance',
      description:
        'The text is sealed under a key of its own (this version\'s), its embedding under the same key. Refused when a source is unknown (422), ' +
        'erased (409 source_erased) or being erased (409 erasure_in_progress), and when anything a presented read fence covers was erased since the read.',
      security,
      middleware: [authorize(tokens, 'writer')] as const,
      request: { body: jsonBody(WriteArtifact) },
      responses: {
        201: json(z.object({ artifactId: z.string(), version: z.literal(1), subjects: z.number().int() }).openapi('WrittenArtifact'), 'Stored'),
        409: problemResponse('source_erased or erasure_in_progress'),
        422: problemResponse('provenance_required or unknown_source'),
        ...authErrors,
      },
    }),
    async (c) => {
      const body = c.req.valid('json');
      const readFences = [...(body.readFence ? [body.readFence] : []), ...(body.readFences ?? [])];
      const written = await services.artifacts.write(
        { kind: body.kind, text: body.text, sources: body.sources, generator: body.generator, readFences },
        c.get('role'),
      );
      return c.json(written, 201);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/artifacts',
      tags: ['artifacts'],
      summary: 'Addition: the live artifacts, oldest first, a page at a time',
      description:
        'What each artifact is (kind, version, generator, dates), never its text: GET /v1/artifacts/{artifactId} reads that, with its read fence. ' +
        'Ordered by (createdAt, artifactId); erased artifacts are left out. `limit` per page (default 100); `nextCursor` (null on the last page) is ' +
        'the `cursor` of the next.',
      security,
      middleware: [authorize(tokens, 'writer', 'eraser')] as const,
      request: { query: PageQuery },
      responses: {
        200: json(z.object({ artifacts: z.array(ArtifactSummarySchema), nextCursor: NextCursor }), 'A page of artifacts'),
        ...listErrors,
      },
    }),
    async (c) => {
      const { limit, cursor } = c.req.valid('query');
      const after = decodeCursor('artifacts', cursor);
      const page = pageOf('artifacts', await services.artifacts.list({ after, limit: limit + 1 }), limit, (a) => a.position);
      const listed = page.items.map(({ position: _, ...a }) => ({ ...a, createdAt: a.createdAt.toISOString(), updatedAt: a.updatedAt.toISOString() }));
      return c.json({ artifacts: listed, nextCursor: page.nextCursor }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/artifacts/{artifactId}',
      tags: ['artifacts'],
      summary: 'The artifact\'s current version, with a read fence',
      security,
      middleware: [authorize(tokens, 'writer')] as const,
      request: { params: ArtifactIdParam },
      responses: {
        200: json(ArtifactSchema, 'The current version'),
        404: problemResponse('not_found'),
        409: problemResponse('erasure_in_progress: the artifact is derived from records being erased; served again once regenerated'),
        410: problemResponse('artifact_erased: no source survived an erasure'),
        ...authErrors,
      },
    }),
    async (c) => {
      const a = await services.artifacts.get(c.req.valid('param').artifactId);
      c.header('cache-control', 'no-store');
      return c.json({ ...a, createdAt: a.createdAt.toISOString(), updatedAt: a.updatedAt.toISOString() }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/artifacts/{artifactId}/provenance',
      tags: ['artifacts'],
      summary: 'Addition: the transitive closure of the artifact\'s sources and its number of distinct subjects',
      security,
      middleware: [authorize(tokens, 'writer', 'eraser')] as const,
      request: { params: ArtifactIdParam },
      responses: {
        200: json(
          z
            .object({
              artifactId: z.string(),
              sources: z.array(z.object({ id: z.string(), type: z.enum(['entry', 'artifact']), depth: z.number().int() })),
              subjects: z.number().int(),
            })
            .openapi('Provenance'),
          'The closure, nearest first',
        ),
        404: problemResponse('not_found'),
        ...authErrors,
      },
    }),
    async (c) => {
      const { artifactId } = c.req.valid('param');
      const p = await services.artifacts.provenance(artifactId);
      return c.json({ artifactId, sources: p.nodes.map((n) => ({ ...n })), subjects: p.subjects.length }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/artifacts/{artifactId}/regenerate',
      tags: ['artifacts'],
      summary: 'Addition: rewrite the artifact, and every artifact above it, from the surviving sources',
      description:
        'Sources named in `excluding`, unreadable or erased are dropped. Each affected artifact gets exactly one new version under a new key ' +
        '(the previous version\'s key is destroyed); one left with no surviving source is erased. 200 once the destroyed keys\' records are durable in ' +
        'the backup store\'s ledger chain; 202 with `destruction: "pending"` when they are not after a few seconds (the old versions are unreadable ' +
        'already; the write is retried in the background).',
      security,
      middleware: [authorize(tokens, 'writer', 'eraser')] as const,
      request: {
        params: ArtifactIdParam,
        body: { required: false, content: { 'application/json': { schema: z.object({ excluding: z.array(RecordId).max(MAX_SOURCES).optional() }).openapi('RegenerateRequest') } } },
      },
      responses: {
        200: json(
          z
            .object({
              regenerated: z.array(z.object({ artifactId: z.string(), version: z.number().int() })),
              removed: z.array(z.string()),
              destruction: z.enum(['durable', 'pending']).openapi({ description: 'whether the destroyed version keys\' records are durable in the backup store\'s ledger chain' }),
            })
            .openapi('Regeneration'),
          'What was rewritten and what was erased; the old versions\' keys destroyed, durably',
        ),
        202: json(
          z.object({ regenerated: z.array(z.object({ artifactId: z.string(), version: z.number().int() })), removed: z.array(z.string()), destruction: z.literal('pending') }),
          'Rewritten; the old versions\' keys are unusable, their destruction records not yet durable (retried in the background)',
        ),
        404: problemResponse('not_found'),
        ...authErrors,
      },
    }),
    async (c) => {
      const { artifactId } = c.req.valid('param');
      // The body is optional. Without a content type the validator does not run (and
      // there is nothing to read); with another content type, refuse rather than
      // regenerate without the exclusions the caller meant to send.
      const type = c.req.header('content-type');
      if (type !== undefined && !/^application\/json\b/i.test(type)) {
        throw new LetheError('validation_failed', 'body: content-type must be application/json');
      }
      const body = (type === undefined ? undefined : c.req.valid('json')) ?? {};
      const result = await services.artifacts.regenerate([artifactId], { excluding: body.excluding ?? [], actor: c.get('role'), reason: 'requested' });
      // the superseded versions' keys count as destroyed once their records are durable in the ledger chain
      const durable = await services.backups.awaitDurable(undefined, REGENERATE_ACK_WAIT_MS);
      if (durable.pending.length > 0) {
        return c.json({ ...result, destruction: 'pending' as const }, 202);
      }
      return c.json({ ...result, destruction: 'durable' as const }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/search',
      tags: ['search'],
      summary: 'Nearest entries and artifacts of the named subjects to a query, with their text and a read fence',
      description:
        'Name whose records to search: `subject`, `subjects` (1–100) or `allSubjects: true` (admin only), exactly one. ' +
        'A scoped search ranks only the named subjects\' entries and the artifacts every subject of whose provenance closure is named ' +
        '(a summary shared with someone else is never in one person\'s scope). A subject lethe has never seen has no hits.',
      security,
      middleware: [authorize(tokens, 'writer')] as const,
      request: { body: jsonBody(SearchRequest) },
      responses: {
        200: json(
          z
            .object({
              hits: z.array(SearchHitSchema),
              readFence: z.string().openapi({ description: 'addition: covers every hit' }),
            })
            .openapi('SearchResult'),
          'Best first',
        ),
        503: problemResponse('unavailable: this replica could not confirm it applied every key destruction (nothing was answered from a stale index)'),
        ...authErrors,
        403: problemResponse('forbidden: the token\'s role may not call this, or allSubjects without the admin role'),
      },
    }),
    async (c) => {
      const { query, k, subject, subjects, allSubjects } = c.req.valid('json');
      if (allSubjects === true && c.get('role') !== 'admin') throw new LetheError('forbidden', 'allSubjects needs the admin role: name the subject to search');
      // a replica that slept through a destruction catches up before it answers from memory
      await services.replica?.fresh();
      const scope = allSubjects === true ? { allSubjects: true as const } : { subjects: subject !== undefined ? [subject] : subjects! };
      const { hits, readFence } = await services.search.search(query, k ?? 10, scope);
      c.header('cache-control', 'no-store');
      return c.json({ hits: hits.map((h) => ({ ...h, createdAt: h.createdAt.toISOString() })), readFence }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/training-exposures',
      tags: ['artifacts'],
      summary: 'Record that entries or artifacts went into a fine-tuning or distillation corpus',
      security,
      middleware: [authorize(tokens, 'writer')] as const,
      request: {
        body: jsonBody(
          z
            .object({ corpus: z.string().min(1).max(200), model: z.string().min(1).max(200).optional(), ids: z.array(RecordId).min(1).max(MAX_EXPOSURE_IDS) })
            .openapi('TrainingExposureRequest'),
        ),
      },
      responses: {
        201: json(z.object({ exposureId: z.string(), records: z.number().int(), subjects: z.number().int() }).openapi('TrainingExposure'), 'Recorded'),
        422: problemResponse('unknown_source'),
        ...authErrors,
      },
    }),
    async (c) => c.json(await services.exposures.register(c.req.valid('json'), c.get('role')), 201),
  );
}

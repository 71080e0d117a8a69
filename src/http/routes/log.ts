/** Episodic log: POST/GET /v1/subjects/{subject}/entries, GET /v1/entries/{entryId}. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { ID_PATTERNS, SEGMENT_KEY_PATTERN } from '../../ids.js';
import { type Entry, MAX_RESERVATION } from '../../log/service.js';
import type { Services } from '../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../auth.js';
import { authErrors, json, jsonBody, problemResponse, security, SubjectParam } from '../schemas.js';

const AppendRequest = z
  .object({
    text: z.string().openapi({ description: 'at most 64 KiB of UTF-8 (413 above)' }),
    kind: z.string().min(1).max(64).optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .openapi('AppendEntryRequest');

const Appended = z.object({ entryId: z.string(), keyId: z.string(), seq: z.number().int() }).openapi('AppendedEntry');

const EntrySchema = z
  .object({
    entryId: z.string(),
    seq: z.number().int(),
    text: z.string(),
    kind: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
    createdAt: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('Entry');

const shape = (e: Entry) => ({
  entryId: e.entryId,
  seq: e.seq,
  text: e.text,
  kind: e.kind,
  metadata: e.metadata,
  createdAt: e.createdAt.toISOString(),
});

export function registerLogRoutes(app: OpenAPIHono<AuthEnv>, services: Services, tokens: TokenStore): void {
  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/subjects/{subject}/entries',
      tags: ['log'],
      summary: 'Append an entry: the service encrypts it under the subject\'s DEK and stores it',
      security,
      middleware: [authorize(tokens, 'writer')] as const,
      request: { params: SubjectParam, body: jsonBody(AppendRequest) },
      responses: {
        201: json(Appended, 'Stored and indexed'),
        409: problemResponse('erasure_in_progress'),
        503: problemResponse('unavailable: the object store or database did not answer; nothing was recorded'),
        ...authErrors,
      },
    }),
    async (c) => {
      const { subject } = c.req.valid('param');
      const body = c.req.valid('json');
      const appended = await services.log.append(subject, body, c.get('role'));
      return c.json(appended, 201);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/subjects/{subject}/entries',
      tags: ['log'],
      summary: 'The subject\'s entries in append order',
      security,
      middleware: [authorize(tokens, 'writer')] as const,
      request: { params: SubjectParam },
      responses: {
        200: json(z.object({ entries: z.array(EntrySchema), readFence: z.string() }), 'Entries under the subject\'s live key, and a read fence covering them'),
        404: problemResponse('not_found: a subject lethe has never seen'),
        410: problemResponse('subject_erased'),
        ...authErrors,
      },
    }),
    async (c) => {
      const { subject } = c.req.valid('param');
      const { entries, keyId } = await services.log.read(subject);
      c.header('cache-control', 'no-store');
      return c.json({ entries: entries.map(shape), readFence: services.fences.issue([keyId]) }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/entries/{entryId}',
      tags: ['log'],
      summary: 'One entry',
      security,
      middleware: [authorize(tokens, 'writer')] as const,
      request: { params: z.object({ entryId: z.string().min(1).max(100).openapi({ param: { name: 'entryId', in: 'path' } }) }) },
      responses: {
        200: json(EntrySchema.extend({ readFence: z.string() }), 'The entry, and a read fence covering it'),
        404: problemResponse('not_found'),
        410: problemResponse('key_destroyed'),
        ...authErrors,
      },
    }),
    async (c) => {
      const entry = await services.log.get(c.req.valid('param').entryId);
      c.header('cache-control', 'no-store');
      return c.json({ ...shape(entry), readFence: services.fences.issue([entry.keyId]) }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/subjects/{subject}/entries/reservations',
      tags: ['log'],
      summary: 'Reserve sequence numbers under the subject\'s key (writers that encrypt locally)',
      security,
      middleware: [authorize(tokens, 'writer')] as const,
      request: { params: SubjectParam, body: jsonBody(z.object({ count: z.number().int().min(1).max(MAX_RESERVATION) }).openapi('ReservationRequest')) },
      responses: {
        201: json(z.object({ keyId: z.string(), firstSeq: z.number().int(), count: z.number().int() }).openapi('Reservation'), 'Reserved'),
        409: problemResponse('erasure_in_progress'),
        ...authErrors,
      },
    }),
    async (c) => {
      const { subject } = c.req.valid('param');
      return c.json(await services.log.reserve(subject, c.req.valid('json').count, c.get('role')), 201);
    },
  );

  const RegisterRequest = z
    .object({
      segment: z.string().regex(SEGMENT_KEY_PATTERN, 'must be log/seg_<22 base64url characters>'),
      entries: z
        .array(
          z.object({
            entryId: z.string().regex(ID_PATTERNS.entry, 'must be entry_<22 base64url characters>'),
            subject: SubjectParam.shape.subject,
            keyId: z.string().min(1).max(100),
            seq: z.number().int().min(1),
            offset: z.number().int().min(0),
            length: z.number().int().min(1),
          }),
        )
        .min(1)
        .max(10_000),
    })
    .openapi('RegisterSegmentRequest');

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/segments',
      tags: ['log'],
      summary: 'Index the frames of a segment a writer sealed and uploaded itself',
      description: 'An append made by a writer is acknowledged only once this answers registered for it.',
      security,
      middleware: [authorize(tokens, 'writer')] as const,
      request: { body: jsonBody(RegisterRequest) },
      responses: {
        201: json(
          z.object({ results: z.array(z.object({ entryId: z.string(), status: z.enum(['registered', 'key_destroyed', 'erasure_in_progress']) })) }),
          'Per-entry outcome',
        ),
        ...authErrors,
      },
    }),
    async (c) => {
      const { segment, entries } = c.req.valid('json');
      return c.json({ results: await services.log.register(segment, entries) }, 201);
    },
  );
}

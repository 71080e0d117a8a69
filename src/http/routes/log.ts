/** Episodic log: POST/GET /v1/subjects/{subject}/entries, GET /v1/entries/{entryId}. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { ID_PATTERNS, SEGMENT_KEY_PATTERN } from '../../ids.js';
import { IDEMPOTENCY_KEY_PATTERN, IDEMPOTENCY_KEY_RULE, IDEMPOTENCY_WINDOW_HOURS } from '../../log/idempotency.js';
import { AppendEntrySchema } from '../../log/payload.js';
import { type Entry, MAX_RESERVATION } from '../../log/service.js';
import { decodeCursor, listErrors, NextCursor, PageQuery, pageOf } from '../cursor.js';
import type { Services } from '../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../auth.js';
import { authErrors, idParam, json, jsonBody, problemResponse, security, SubjectParam } from '../schemas.js';

const AppendRequest = AppendEntrySchema.meta({ id: 'AppendEntryRequest' });

const IdempotencyHeaders = z.object({
  'idempotency-key': z
    .string()
    .regex(IDEMPOTENCY_KEY_PATTERN, `must be ${IDEMPOTENCY_KEY_RULE}`)
    .optional()
    .openapi({
      param: { name: 'idempotency-key', in: 'header' },
      description:
        `Makes the append safe to retry: the first request with the key stores the entry; a retry with the same key and body within ${IDEMPOTENCY_WINDOW_HOURS} hours ` +
        'answers 200 with its result (same entryId) and `Idempotent-Replayed: true`, and stores nothing; the same key with another body is 409 ' +
        '`idempotency_key_reused`. Keys are per subject.',
    }),
});

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
      request: { params: SubjectParam, headers: IdempotencyHeaders, body: jsonBody(AppendRequest) },
      responses: {
        200: {
          ...json(Appended, 'A retry with the Idempotency-Key of an earlier append and the same body: that append\'s result; nothing was stored'),
          headers: z.object({ 'Idempotent-Replayed': z.literal('true') }),
        },
        201: json(Appended, 'Stored and indexed'),
        409: problemResponse('erasure_in_progress; idempotency_key_reused: the Idempotency-Key was used with another body for this subject'),
        410: problemResponse(
          'subject_erased: an erasure destroyed the subject\'s key and nothing is accepted for it until an admin reinstates it; ' +
            'key_destroyed: the key the Idempotency-Key\'s append was stored under was destroyed since',
        ),
        503: problemResponse('unavailable: the object store or database did not answer; nothing was recorded'),
        ...authErrors,
      },
    }),
    async (c) => {
      const { subject } = c.req.valid('param');
      const body = c.req.valid('json');
      const key = c.req.valid('header')['idempotency-key'];
      if (key === undefined) {
        const { entryId, keyId, seq } = await services.log.append(subject, body, c.get('role'));
        return c.json({ entryId, keyId, seq }, 201);
      }
      // the digest is of the body as received (the validator cached its text)
      const { appended, replayed } = await services.log.appendOnce(subject, body, c.get('role'), { key, body: await c.req.text() });
      const { entryId, keyId, seq } = appended;
      if (!replayed) return c.json({ entryId, keyId, seq }, 201);
      c.header('Idempotent-Replayed', 'true');
      return c.json({ entryId, keyId, seq }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/subjects/{subject}/entries',
      tags: ['log'],
      summary: 'The subject\'s entries in append order, a page at a time',
      description:
        'Ordered by seq. `limit` entries per page (default 100); `nextCursor` (null on the last page) is the `cursor` of the next. Walking the pages ' +
        'while entries are appended never answers an entry twice and never skips one that existed when the walk began (entries appended meanwhile may ' +
        'or may not appear); a re-key keeps every entry\'s seq, so a walk goes on across one. Forgotten entries are never listed.',
      security,
      middleware: [authorize(tokens, 'writer')] as const,
      request: { params: SubjectParam, query: PageQuery },
      responses: {
        200: json(
          z.object({ entries: z.array(EntrySchema), readFence: z.string(), nextCursor: NextCursor }),
          'A page of the entries under the subject\'s live key, and a read fence covering them',
        ),
        404: problemResponse('not_found: a subject lethe has never seen'),
        410: problemResponse('subject_erased'),
        ...listErrors,
      },
    }),
    async (c) => {
      const { subject } = c.req.valid('param');
      const { limit, cursor } = c.req.valid('query');
      const after = decodeCursor('entries', cursor);
      const { entries, keyId } = await services.log.read(subject, { afterSeq: after?.seq, limit: limit + 1 });
      const page = pageOf('entries', entries, limit, (e) => ({ seq: e.seq }));
      c.header('cache-control', 'no-store');
      return c.json({ entries: page.items.map(shape), readFence: services.fences.issue([keyId]), nextCursor: page.nextCursor }, 200);
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
      request: { params: z.object({ entryId: idParam('entry', 'entryId') }) },
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
        410: problemResponse('subject_erased: an erasure destroyed the subject\'s key; nothing is accepted for it until an admin reinstates it'),
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
            wrappedKey: z
              .string()
              .regex(/^[A-Za-z0-9_-]{40,200}$/, 'must be base64url')
              .optional()
              .openapi({ description: 'The entry\'s record key wrapped under the key it names (base64url). Absent: a frame sealed under the subject key itself (writers before record keys).' }),
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
      description:
        'An append made by a writer is acknowledged only once this answers registered for it. Idempotent per entry id: registering again an entry ' +
        'already indexed at the same place (segment, offset, length, key, seq) answers `registered` again; an entry id indexed at another place is ' +
        '409 `conflict` and nothing of the request is registered. The entries are readable at once and searchable once the indexer has embedded ' +
        'them (off this request: `lethe_search_lag_seconds` in /metrics, `replica.searchLagSeconds` in /readyz). The indexer opens each frame: one ' +
        'that does not open under the key it names, or holds a payload the `Entry` schema refuses (kind 1–64 characters or null, metadata a JSON ' +
        'object or null), is refused — never served (`GET /v1/entries/{id}` answers 404) nor searchable — and counted in `lethe_log_entries_refused_total`. ' +
        'Per entry: `key_destroyed` when its key is gone, `subject_erased` when it is gone because an erasure erased the subject (nothing is ' +
        'accepted for it until an admin reinstates it), `erasure_in_progress` while an erasure holds the key fenced.',
      security,
      middleware: [authorize(tokens, 'writer')] as const,
      request: { body: jsonBody(RegisterRequest) },
      responses: {
        201: json(
          z.object({ results: z.array(z.object({ entryId: z.string(), status: z.enum(['registered', 'key_destroyed', 'subject_erased', 'erasure_in_progress']) })) }),
          'Per-entry outcome (registered: indexed and queued for the search indexer)',
        ),
        409: problemResponse('conflict: an entry id is already indexed at another place; nothing was registered'),
        ...authErrors,
      },
    }),
    async (c) => {
      const { segment, entries } = c.req.valid('json');
      return c.json({ results: await services.log.register(segment, entries) }, 201);
    },
  );
}

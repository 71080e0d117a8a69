/** POST /v1/segments (registerSegment): Index the frames of a segment a writer sealed and uploaded itself. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { ID_PATTERNS, SEGMENT_KEY_PATTERN } from '../../../ids.js';
import type { Entry } from '../../../log/service.js';
import type { Services } from '../../services.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, jsonBody, problemResponse, security, SubjectParam } from '../../schemas.js';

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

/** The services this route calls. */
export interface Uses {
  readonly log: Pick<Services['log'], 'register'>;
}

export const route = createRoute({
  operationId: 'registerSegment',
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
  request: { body: jsonBody(RegisterRequest) },
  responses: {
    201: json(
      z.object({ results: z.array(z.object({ entryId: z.string(), status: z.enum(['registered', 'key_destroyed', 'subject_erased', 'erasure_in_progress']) })) }),
      'Per-entry outcome (registered: indexed and queued for the search indexer)',
    ),
    409: problemResponse('conflict: an entry id is already indexed at another place; nothing was registered'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer')] as const }, async (c) => {
    const { segment, entries } = c.req.valid('json');
    return c.json({ results: await services.log.register(segment, entries) }, 201);
  });
}

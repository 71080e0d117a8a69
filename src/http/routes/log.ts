/** Episodic log: POST/GET /v1/subjects/{subject}/entries, GET /v1/entries/{entryId}. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { Entry } from '../../log/service.js';
import type { Vault } from '../../vault/vault.js';
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

export function registerLogRoutes(app: OpenAPIHono<AuthEnv>, vault: Vault, tokens: TokenStore): void {
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
      const appended = await vault.log.append(subject, body, c.get('role'));
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
        200: json(z.object({ entries: z.array(EntrySchema) }), 'Entries under the subject\'s live key'),
        404: problemResponse('not_found: a subject lethe has never seen'),
        410: problemResponse('subject_erased'),
        ...authErrors,
      },
    }),
    async (c) => {
      const { subject } = c.req.valid('param');
      const entries = await vault.log.list(subject);
      c.header('cache-control', 'no-store');
      return c.json({ entries: entries.map(shape) }, 200);
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
        200: json(EntrySchema, 'The entry'),
        404: problemResponse('not_found'),
        410: problemResponse('key_destroyed'),
        ...authErrors,
      },
    }),
    async (c) => {
      const entry = await vault.log.get(c.req.valid('param').entryId);
      c.header('cache-control', 'no-store');
      return c.json(shape(entry), 200);
    },
  );
}

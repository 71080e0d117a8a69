/** POST /v1/subjects/{subject}/supersede (supersedeEntries): update a memory held in several entries (an item's fields): the successors appended and the old versions forgotten, atomically. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { MAX_SUPERSEDED } from '../../../erasure/supersede.js';
import { ID_PATTERNS } from '../../../ids.js';
import { SupersededManySchema } from '../../../wire/log.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, ErasureLocationHeaders, json, jsonBody, problemResponse, SubjectParam, security } from '../../schemas.js';
import type { Services } from '../../services.js';
import { AppendRequest } from '../log/shared.js';
import { actorOf } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly erasures: Pick<Services['erasures'], 'supersedeEntry'>;
  readonly principals: Pick<Services['principals'], 'name'>;
}

const SupersedeEntriesRequest = z
  .object({
    entryIds: z
      .array(z.string().regex(ID_PATTERNS.entry, 'each must be entry_<22 base64url characters>'))
      .min(1, 'name at least one entry')
      .max(MAX_SUPERSEDED, `at most ${MAX_SUPERSEDED}`),
    entries: z.array(AppendRequest).min(1, 'give at least one successor').max(MAX_SUPERSEDED, `at most ${MAX_SUPERSEDED}`),
  })
  .strict()
  .openapi('SupersedeEntriesRequest');

export const route = createRoute({
  operationId: 'supersedeEntries',
  method: 'post',
  path: '/v1/subjects/{subject}/supersede',
  tags: ['erasure'],
  summary: 'Update a memory held in several entries: append the successors and forget the old versions, all at once',
  description:
    'One transaction appends every successor and marks every old entry forgotten, or does nothing: never two live versions, never part of an update. ' +
    "The old versions' bytes then go as in a forget (one records-scope erasure); the probe counts none of the successors. " +
    'A writer may supersede only the entries its own token wrote.',
  security,
  request: {
    params: SubjectParam,
    body: jsonBody(SupersedeEntriesRequest),
  },
  responses: {
    201: {
      ...json(SupersededManySchema, 'The successors are stored; the old versions are forgotten'),
      headers: ErasureLocationHeaders,
    },
    404: problemResponse('not_found: an entry named is not an entry of this subject'),
    409: problemResponse(
      'conflict: an entry was already forgotten or superseded (supersede its current version); erasure_in_progress: the whole subject is being erased',
    ),
    410: problemResponse('key_destroyed: an entry is already erased; subject_erased'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  const actor = actorOf(services, tokens);
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer', 'eraser')] as const }, async (c) => {
    const { subject } = c.req.valid('param');
    const body = c.req.valid('json');
    const result = await services.erasures.supersedeEntry({ subject, entryIds: body.entryIds, entries: body.entries }, actor(c));
    c.header('Location', `/v1/erasures/${result.erasureId}`);
    return c.json({ entries: [...result.entries], superseded: { entryIds: body.entryIds, erasureId: result.erasureId, status: result.status } }, 201);
  });
}

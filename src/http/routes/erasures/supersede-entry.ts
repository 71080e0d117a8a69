/** POST /v1/subjects/{subject}/entries/{entryId}/supersede (supersedeEntry): update a memory: the successor appended and the old version forgotten, atomically. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { SupersededSchema } from '../../../wire/log.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, ErasureLocationHeaders, idParam, json, jsonBody, problemResponse, SubjectParam, security } from '../../schemas.js';
import type { Services } from '../../services.js';
import { AppendRequest } from '../log/shared.js';
import { actorOf } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly erasures: Pick<Services['erasures'], 'supersedeEntry'>;
  readonly principals: Pick<Services['principals'], 'name'>;
}

export const route = createRoute({
  operationId: 'supersedeEntry',
  method: 'post',
  path: '/v1/subjects/{subject}/entries/{entryId}/supersede',
  tags: ['erasure'],
  summary: 'Update a memory: append its successor and forget the old version, atomically',
  description:
    'One transaction appends the successor and marks the old entry forgotten: never two live versions, never a stored successor with a failed answer. ' +
    "The old version's bytes then go as in a forget (a records-scope erasure, its id in `superseded`); the successor is the same person's current data, " +
    'not a copy: the probe does not count it and the certificate names it. A writer may supersede only the entries its own token wrote.',
  security,
  request: {
    params: SubjectParam.extend({ entryId: idParam('entry', 'entryId') }),
    body: jsonBody(AppendRequest),
  },
  responses: {
    201: {
      ...json(SupersededSchema.openapi('Superseded'), 'The successor is stored; the old version is forgotten'),
      headers: ErasureLocationHeaders,
    },
    404: problemResponse('not_found: no such entry of this subject'),
    409: problemResponse(
      'conflict: the entry was already forgotten or superseded (supersede its current version); erasure_in_progress: the whole subject is being erased',
    ),
    410: problemResponse('key_destroyed: the entry is already erased; subject_erased'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  const actor = actorOf(services, tokens);
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer', 'eraser')] as const }, async (c) => {
    const { subject, entryId } = c.req.valid('param');
    const result = await services.erasures.supersedeEntry({ subject, entryIds: [entryId], entries: [c.req.valid('json')] }, actor(c));
    c.header('Location', `/v1/erasures/${result.erasureId}`);
    return c.json({ entry: result.entries[0]!, superseded: { entryId, erasureId: result.erasureId, status: result.status } }, 201);
  });
}

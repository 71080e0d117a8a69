/** POST /v1/subjects/{subject}/entries (appendEntry): append an entry: the service encrypts it under the subject's DEK and stores it. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { Services } from '../../services.js';
import { actorOf } from '../../actor.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { authErrors, json, jsonBody, problemResponse, security, SubjectParam } from '../../schemas.js';
import { AppendRequest, IdempotencyHeaders, Appended } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly log: Pick<Services['log'], 'append' | 'appendOnce'>;
  readonly principals: Pick<Services['principals'], 'name'>;
}

export const route = createRoute({
  operationId: 'appendEntry',
  method: 'post',
  path: '/v1/subjects/{subject}/entries',
  tags: ['log'],
  summary: "Append an entry: the service encrypts it under the subject's DEK and stores it",
  security,
  request: { params: SubjectParam, headers: IdempotencyHeaders, body: jsonBody(AppendRequest) },
  responses: {
    200: {
      ...json(Appended, "A retry with the Idempotency-Key of an earlier append and the same body: that append's result; nothing was stored"),
      headers: z.object({ 'Idempotent-Replayed': z.literal('true') }),
    },
    201: json(Appended, 'Stored and indexed'),
    409: problemResponse('erasure_in_progress; idempotency_key_reused: the Idempotency-Key was used with another body for this subject'),
    410: problemResponse(
      "subject_erased: an erasure destroyed the subject's key and nothing is accepted for it until an admin reinstates it; " +
        "key_destroyed: the key the Idempotency-Key's append was stored under was destroyed since",
    ),
    503: problemResponse('unavailable: the object store or database did not answer; nothing was recorded'),
    ...authErrors,
  },
});

export function register(app: OpenAPIHono<AuthEnv>, services: Uses, tokens: TokenStore): void {
  const actor = actorOf(services, tokens);
  app.openapi({ ...route, middleware: [authorize(tokens, 'writer')] as const }, async (c) => {
    const { subject } = c.req.valid('param');
    const body = c.req.valid('json');
    const key = c.req.valid('header')['idempotency-key'];
    // the writing token's principal may forget and supersede the entry later
    const origin = { writtenBy: actor(c).principal };
    if (key === undefined) {
      const { entryId, keyId, seq } = await services.log.append(subject, body, c.get('role'), origin);
      return c.json({ entryId, keyId, seq }, 201);
    }
    // the digest is of the body as received (the validator cached its text)
    const { appended, replayed } = await services.log.appendOnce(subject, body, c.get('role'), { key, body: await c.req.text() }, origin);
    const { entryId, keyId, seq } = appended;
    if (!replayed) return c.json({ entryId, keyId, seq }, 201);
    c.header('Idempotent-Replayed', 'true');
    return c.json({ entryId, keyId, seq }, 200);
  });
}

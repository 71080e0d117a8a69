/** POST /v1/subjects/{subject}/entries (appendEntry): append an entry: the service encrypts it under the subject's DEK and stores it. */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { LetheError } from '../../../errors.js';
import type { RecordedAppend } from '../../../log/idempotency.js';
import type { Services } from '../../services.js';
import { actorOf } from '../../actor.js';
import { type AuthEnv, authorize, type TokenStore } from '../../auth.js';
import { problemWith } from '../../problem.js';
import { authErrors, json, jsonBody, ProblemSchema, problemResponse, security, SubjectParam } from '../../schemas.js';
import { AppendRequest, IdempotencyHeaders, Appended, EntrySchema, shape } from './shared.js';

/** The services this route calls. */
export interface Uses {
  readonly log: Pick<Services['log'], 'append' | 'appendOnce' | 'appendItem'>;
  readonly principals: Pick<Services['principals'], 'name'>;
  readonly fences: Pick<Services['fences'], 'issue'>;
}

const AppendHeaders = IdempotencyHeaders.extend({
  'if-none-match': z
    .literal('*', { error: 'the only If-None-Match taken is *' })
    .optional()
    .openapi({
      param: { name: 'if-none-match', in: 'header' },
      description:
        "`*`: append only as the first version of the body's `item`. When the item has live entries, nothing is stored and the answer is 412 " +
        '`item_exists` with those entries (newest first, as `POST …/items/lookup` answers), so a put is one call whether it creates or supersedes.',
    }),
});

export const route = createRoute({
  operationId: 'appendEntry',
  method: 'post',
  path: '/v1/subjects/{subject}/entries',
  tags: ['log'],
  summary: "Append an entry: the service encrypts it under the subject's DEK and stores it",
  security,
  request: { params: SubjectParam, headers: AppendHeaders, body: jsonBody(AppendRequest) },
  responses: {
    200: {
      ...json(Appended, "A retry with the Idempotency-Key of an earlier append and the same body: that append's result; nothing was stored"),
      headers: z.object({ 'Idempotent-Replayed': z.literal('true') }),
    },
    201: json(Appended, 'Stored and indexed'),
    412: {
      description:
        'item_exists (with `If-None-Match: *`): the item has live entries; `entries` (newest first) and `readFence` as `POST …/items/lookup` answers them; nothing was stored',
      content: {
        'application/problem+json': { schema: ProblemSchema.extend({ entries: z.array(EntrySchema), readFence: z.string() }).openapi('ItemExistsProblem') },
      },
    },
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
    const headers = c.req.valid('header');
    const key = headers['idempotency-key'];
    // the writing token's principal may forget and supersede the entry later
    const origin = { writtenBy: actor(c).principal };
    // the digest is of the body as received (the validator cached its text)
    const once = key === undefined ? undefined : { key, body: await c.req.text() };
    if (headers['if-none-match'] !== undefined) {
      const { item } = body;
      if (!item) throw new LetheError('validation_failed', 'If-None-Match: * appends the first version of an item: give the entry its item');
      const result = await services.log.appendItem(subject, { ...body, item }, c.get('role'), once, origin);
      if ('existing' in result) {
        return problemWith('item_exists', 'the item already has live entries (entries, newest first); nothing was stored', {
          entries: result.existing.map(shape),
          readFence: services.fences.issue([...new Set(result.existing.map((e) => e.keyId))]),
        }) as never;
      }
      return answer(c, result);
    }
    if (once === undefined) {
      const { entryId, keyId, seq } = await services.log.append(subject, body, c.get('role'), origin);
      return c.json({ entryId, keyId, seq }, 201);
    }
    return answer(c, await services.log.appendOnce(subject, body, c.get('role'), once, origin));
  });
}

function answer(c: Context, { appended, replayed }: { appended: RecordedAppend; replayed: boolean }) {
  const { entryId, keyId, seq } = appended;
  if (!replayed) return c.json({ entryId, keyId, seq }, 201);
  c.header('Idempotent-Replayed', 'true');
  return c.json({ entryId, keyId, seq }, 200);
}
